// Which device the page trains on: the engine's report lists what this browser offers (a WebGPU adapter,
// and always the CPU path); the user's last choice is kept in localStorage, as a convenience only (a
// storage that is blocked or full keeps no choice, and nothing else changes). Without one, a hardware
// adapter is chosen, and in place of a software adapter (a CPU rasteriser such as SwiftShader, measured
// tens of times slower than the CPU path: Honest limits) the CPU path is, with the reason said. Pure.

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
  const selected = report.selected.device;
  const cpu = report.devices.find((d) => d.kind === "cpu");
  const gpu = selected.kind === "webgpu" ? selected : null; // the adapter the browser hands the page
  const options = [gpu, cpu].filter(Boolean).map((device) => ({ kind: device.kind, label: label(device) }));
  const pick = (device, why) => ({ kind: device.kind, device, why, options });
  const kept = { webgpu: gpu, cpu }[stored];
  if (kept) return pick(kept, "your choice, kept from an earlier visit");
  if (gpu && !gpu.software) return pick(gpu, "the WebGPU adapter this browser offers");
  if (gpu) {
    const why = `${gpu.name} is a software adapter (a CPU rasteriser), slower here than the CPU path: choose it to use it anyway`;
    return pick(cpu, why);
  }
  return pick(cpu, "no usable GPU: this browser offers no WebGPU adapter");
}

// The line the train card shows for a choice.
export function deviceLine(choice) {
  return `Runs on: ${label(choice.device)}`;
}
