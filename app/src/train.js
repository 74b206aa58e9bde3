// The engine's calls for the page's program: fetch the data set shipped in data/, open the device,
// plan the program's memory there, apply remedies, and let the engine (Python) drive epochs,
// reporting each one back.

import { openDevice } from "./executor.js";

const DATA_FILES = ["digits-train-x.f32", "digits-train-y.i32", "digits-test-x.f32", "digits-test-y.i32"];

const TRAIN_PY = `
from scellis.app import train_example
files = {name: bytes(data) for name, data in js_files.to_py().items()}
await train_example(files, device_kind, level, epochs, report, program=program, cap=cap)
`;

const PLAN_PY = `
from scellis.app import plan_example
files = {name: bytes(data) for name, data in js_files.to_py().items()}
await plan_example(files, program, device_kind, level, cap)
`;

const APPLY_PY = `
from scellis.app import apply_remedy
apply_remedy(program, change)
`;

const EXAMPLE_PY = `
from scellis.app import example_program
example_program()
`;

// The data files, by name (bytes); the engine reads the held-out split's size from them too.
export async function fetchData(base) {
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

// The WebGPU device for planning: the one the page holds, opened when there is none yet.
async function holdDevice(kind) {
  if (kind === "webgpu" && !globalThis.scellisGpu) await prepareDevice(kind);
}

// The program the page starts with, as JSON text.
export async function exampleProgram(pyodide) {
  return pyodide.runPythonAsync(EXAMPLE_PY);
}

// The memory plan of `run.program` on `run.kind` at `run.level` under `run.cap` (bytes or null).
export async function planProgram(pyodide, files, run) {
  await holdDevice(run.kind);
  const cap = run.cap ?? undefined; // Python's None (null would be Pyodide's jsnull)
  const globals = pyodide.toPy({ program: run.program, device_kind: run.kind, level: run.level, cap });
  globals.set("js_files", files);
  return JSON.parse(await pyodide.runPythonAsync(PLAN_PY, { globals }));
}

// `program` with a remedy's change applied (both JSON text in and out).
export async function applyRemedy(pyodide, program, change) {
  const globals = pyodide.toPy({ program, change: JSON.stringify(change) });
  return pyodide.runPythonAsync(APPLY_PY, { globals });
}

// Trains `run.program` for `run.epochs` on a freshly opened device; resolves to the last epoch, or to
// {refused, memory} when the memory plan is red.
export async function trainProgram(pyodide, files, run, onEpoch) {
  await prepareDevice(run.kind);
  const { program, kind, level, epochs } = run;
  const globals = pyodide.toPy({ program, device_kind: kind, level, epochs, cap: run.cap ?? undefined });
  globals.set("js_files", files);
  globals.set("report", (text) => onEpoch(JSON.parse(text)));
  const last = await pyodide.runPythonAsync(TRAIN_PY, { globals });
  return JSON.parse(last);
}
