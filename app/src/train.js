// Training the built-in example in the page: fetch the data set shipped in data/, open the device,
// and let the engine (Python) drive epochs, reporting each one back.

import { openDevice } from "./executor.js";

const DATA_FILES = ["digits-train-x.f32", "digits-train-y.i32", "digits-test-x.f32", "digits-test-y.i32"];

const TRAIN_PY = `
from scellis.app import train_example
files = {name: bytes(data) for name, data in js_files.to_py().items()}
await train_example(files, device_kind, level, epochs, report)
`;

async function fetchData(base) {
  const entries = await Promise.all(
    DATA_FILES.map(async (name) => {
      const response = await fetch(new URL(`data/${name}`, base));
      if (!response.ok) throw new Error(`data/${name}: HTTP ${response.status}`);
      return [name, new Uint8Array(await response.arrayBuffer())];
    }),
  );
  return Object.fromEntries(entries);
}

// Opens the WebGPU device the engine's executor uses (only when the engine chose WebGPU).
export async function prepareDevice(kind) {
  if (kind !== "webgpu") return;
  const adapter = await navigator.gpu.requestAdapter();
  if (!adapter) throw new Error("the WebGPU adapter went away");
  globalThis.scellisGpu = await openDevice(adapter);
}

export async function trainExample(pyodide, deviceKind, level, epochs, onEpoch) {
  const base = new URL(".", location.href);
  const [files] = await Promise.all([fetchData(base), prepareDevice(deviceKind)]);
  const globals = pyodide.toPy({ device_kind: deviceKind, level, epochs });
  globals.set("js_files", files);
  globals.set("report", (text) => onEpoch(JSON.parse(text)));
  const last = await pyodide.runPythonAsync(TRAIN_PY, { globals });
  return JSON.parse(last);
}
