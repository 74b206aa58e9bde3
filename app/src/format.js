// Pure formatting of the environment report (no DOM): what the page says about the device.

export function formatBytes(n) {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let value = n;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return unit === 0 ? `${value} B` : `${Number(value.toPrecision(4))} ${units[unit]}`;
}

// Facts about the selected device, as [label, value] pairs in display order.
export function deviceFacts(device) {
  if (device.kind === "cpu") {
    return [
      ["Device", "CPU path (WebAssembly)"],
      ["Runs on", device.host],
      ["Instruction set", device.architecture],
      ["Memory ceiling", formatBytes(device.max_buffer_size)],
    ];
  }
  return [
    ["Device", `WebGPU: ${device.name}${device.software ? " (software adapter)" : ""}`],
    ["Vendor", device.vendor || "not reported"],
    ["Architecture", device.architecture || "not reported"],
    ["Reached through", device.host],
    ["Max buffer size", formatBytes(device.max_buffer_size)],
    ["Max storage binding", formatBytes(device.max_storage_binding)],
    ["shader-f16", device.features.includes("shader-f16") ? "yes" : "no"],
  ];
}

// The start-up self-check on one device (scellis.runtime.selfcheck): its kernels, whether they agree with
// the float64 evaluation within their declared tolerances, and the start of its output bytes' hash.
export function checkFact(check) {
  const verdict = check.ok ? "agrees with float64" : "DISAGREES with float64";
  return `${check.kernels.join(" + ")} at ${check.level}: ${verdict}; output ${check.outputs_sha256.slice(0, 16)}…`;
}

// Facts about the engine; a wheel that disagrees with build.json is reported, not hidden.
export function engineFacts(report, build, readyMs) {
  const webgpu = report.webgpu_check ? [["WebGPU self-check", checkFact(report.webgpu_check)]] : [];
  return [
    ["Engine version", report.engine_version],
    [
      "Build manifest",
      build.engine_version === report.engine_version
        ? "matches the installed engine"
        : `MISMATCH: build.json says ${build.engine_version}`,
    ],
    ["Python", `${report.python}, ${report.environment}`],
    ["Pyodide", report.python_start ? `${build.tools.pyodide}, ${report.python_start}` : build.tools.pyodide],
    ["Cross-origin isolated", globalThis.crossOriginIsolated ? "yes (CPU-path workers can share memory)" : "no"],
    ["CPU path self-check", checkFact(report.cpu_check)],
    ...webgpu,
    ["Ready in", `${(readyMs / 1000).toFixed(2)} s`],
  ];
}

// An error as one line for the page: Python's (through Pyodide) carries its whole traceback in its
// message, whose last line names the exception and says what went wrong.
export function errorText(error) {
  const message = error?.message ? String(error.message) : String(error);
  if (error?.type === undefined) return message;
  const lines = message.trim().split("\n");
  return lines[lines.length - 1];
}
