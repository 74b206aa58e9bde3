// The engine's calls for the page's program: fetch the data set shipped in data/, open the device,
// plan the program's memory there, apply remedies, open a run the page drives (scellis.app.Driven: every
// answer JSON text), read a share link and open the re-run of the run it pins.

import { openDevice } from "./executor.js";

const DATA_FILES = ["digits-train-x.f32", "digits-train-y.i32", "digits-test-x.f32", "digits-test-y.i32"];

const RUN_PY = `
from scellis.app import open_run
files = {name: bytes(data) for name, data in js_files.to_py().items()}
await open_run(files, program, device_kind=device_kind, level=level, seed=seed, epochs=epochs, build=build,
               cap=cap, browser=browser, resume=resume)
`;

const REPLAY_PY = `
from scellis.app import open_replay
files = {name: bytes(data) for name, data in js_files.to_py().items()}
await open_replay(files, href, page_kind, build, cap=cap, browser=browser)
`;

const LINK_PY = `
from scellis.app import read_link
read_link(href)
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

// Opens a run of `run.program` (from init, or from the stored checkpoint `run.resume`) on a freshly
// opened device: a PyProxy of scellis.app.Driven, or {refused, memory} when the memory plan is red.
export async function openRun(pyodide, files, build, run) {
  await prepareDevice(run.kind);
  const { program, kind, level, epochs, seed } = run;
  const globals = pyodide.toPy({
    program,
    device_kind: kind,
    level,
    epochs,
    seed,
    build,
    cap: run.cap ?? undefined, // Python's None
    browser: navigator.userAgent,
    resume: run.resume ?? undefined,
  });
  globals.set("js_files", files);
  const opened = await pyodide.runPythonAsync(RUN_PY, { globals });
  return typeof opened === "string" ? JSON.parse(opened) : opened;
}

// What the share link `href` carries: {program (JSON text), name, settings, ran_on}; throws its problems.
export async function readLink(pyodide, href) {
  const globals = pyodide.toPy({ href });
  return JSON.parse(await pyodide.runPythonAsync(LINK_PY, { globals }));
}

// Opens the re-run of the run the link pins, on `files`: {run (PyProxy of Driven), note} or
// {refused, memory, note}.
export async function openReplay(pyodide, files, build, kind, href) {
  await prepareDevice(kind);
  const globals = pyodide.toPy({ href, page_kind: kind, build, cap: undefined, browser: navigator.userAgent });
  globals.set("js_files", files);
  const pair = await pyodide.runPythonAsync(REPLAY_PY, { globals });
  const [opened, note] = pair.toJs({ depth: 1 });
  pair.destroy();
  const extra = { note: note ?? null };
  return typeof opened === "string" ? { ...JSON.parse(opened), ...extra } : { run: opened, ...extra };
}
