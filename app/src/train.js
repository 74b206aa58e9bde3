// The engine's calls for the page's program, through its worker (engine.js): the example program, its
// memory plan on the page's device, remedies, a run the page drives (from init or a checkpoint key), a
// share link and the re-run of the run it pins; the user's data imported, described, and a starter
// program for it. Each call's arguments are its keywords in the engine's table (scellis.calls.CALLS), and
// `data` names the data (enginehost.js files): "site" (the digits this site ships), "chars" (the Zen of
// Python's characters) or { user: id } (a data set imported into the worker), as `run.source` does.

import { parsed, RemoteRun } from "./engine.js";

// Has the engine's WebGPU device (`kind` "webgpu") begin making the pipelines a run of `program` (JSON text;
// null: the page's example) compiles before its first step, whatever the level (scellis.app.warm_kernels),
// so that making them overlaps with what the page does until it trains. Resolves to how many.
export function warmKernels(engine, kind, program = null) {
  return engine.call("warm", { device_kind: kind, program });
}

export function exampleProgram(engine) {
  return engine.call("example");
}

// The memory plan of `run.program` on `run.kind` at `run.level` under `run.cap` (bytes or null).
export function planProgram(engine, run) {
  const { program, kind, level, cap } = run;
  return parsed(engine.call("plan", { data: run.source ?? "site", program, device_kind: kind, level, cap }));
}

// `program` with a remedy's change applied (JSON text in and out).
export function applyRemedy(engine, program, change) {
  return engine.call("apply", { program, change: JSON.stringify(change) });
}

export function forgetProbes(engine) {
  return engine.call("forgetProbes");
}

// Opens a run of `run.program` (from init, or from the stored checkpoint `run.resume`): a RemoteRun,
// or {refused, memory} when the memory plan is red.
export async function openRun(engine, run) {
  const { program, kind, level, epochs, seed, cap, resume, keep } = run;
  const settings = { program, device_kind: kind, level, epochs, seed, cap, resume, keep, browser: navigator.userAgent };
  const answer = await engine.call("openRun", { data: run.source ?? "site", ...settings });
  return answer.opened ?? new RemoteRun(engine, answer.id, answer.state);
}

// What the share link `href` carries: {program (JSON text), name, settings, ran_on}; throws its problems.
export function readLink(engine, href) {
  return parsed(engine.call("readLink", { href }));
}

// Opens the re-run of the run the link pins, on `data`: {run (a RemoteRun), note} or {refused, memory,
// note}; `note` says when it runs on another device kind than the pinned one.
export async function openReplay(engine, data, kind, href) {
  const answer = await engine.call("openReplay", { data, page_kind: kind, href, browser: navigator.userAgent });
  if (answer.opened) return { ...answer.opened, note: answer.note };
  return { run: new RemoteRun(engine, answer.id, answer.state), note: answer.note };
}

// The user's files read in the worker with the Data card's settings: { id, summary } (userdata.js).
export function importData(engine, files, settings) {
  return engine.call("importData", files, settings);
}

// How the engine reads the data `source` names: { name, example_shape, ..., versions, vocab }.
export function describeData(engine, source) {
  return parsed(engine.call("dataInfo", { data: source }));
}

// A starter program (JSON text) for the data `source` names.
export function starterProgram(engine, source) {
  return engine.call("starter", { data: source });
}
