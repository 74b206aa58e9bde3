// Which device the page trains on: the engine's report lists what this browser offers (a WebGPU adapter,
// and always the CPU path) and which of them its one rule selects, with why (scellis.runtime.devices.select:
// a hardware adapter, else the CPU path, never a software adapter unasked). The user's last choice is kept
// in localStorage, as a convenience only (a storage that is blocked or full keeps no choice, and nothing
// else changes), and wins when its device is still offered. Pure.

export const DEVICE_KEY = "scellis.device";

// The kind kept by an earlier visit, or null (none kept, or the storage cannot be read). Never throws.
export function storedDevice(storage) {
  try {
    return storage().getItem(DEVICE_KEY);
  } catch {
    return null;
  }
}

// Keeps the chosen kind for later visits; false when the storage refuses (blocked, or full). Never throws.
export function keepDevice(storage, kind) {
  try {
    storage().setItem(DEVICE_KEY, kind);
    return true;
  } catch {
    return false;
  }
}

function label(device) {
  if (device.kind === "cpu") return "CPU path (WebAssembly)";
  return `WebGPU — ${device.name}${device.software ? " (software adapter)" : ""}`;
}

// { kind, device, why, options: [{ kind, label }] } for the report's devices and the stored choice
// (a kind, or null).
export function chooseDevice(report, stored) {
  const cpu = report.devices.find((d) => d.kind === "cpu");
  const gpu = report.devices.find((d) => d.kind === "webgpu") ?? null; // the adapter the browser hands the page
  const options = [gpu, cpu].filter(Boolean).map((device) => ({ kind: device.kind, label: label(device) }));
  const pick = (device, why) => ({ kind: device.kind, device, why, options });
  const kept = { webgpu: gpu, cpu }[stored];
  if (kept) return pick(kept, "your choice, kept from an earlier visit");
  return pick(report.selected.device, report.selected.reason);
}

// The line the train card shows for a choice.
export function deviceLine(choice) {
  return `Runs on: ${label(choice.device)}`;
}
