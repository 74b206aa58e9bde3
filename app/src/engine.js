// The page's side of the engine: starts its Web Worker (enginehost.js) and calls it (rpc.js). Every
// answer is data; a run the page drives is a RemoteRun, whose calls are the worker's run by id.

import { connect } from "./rpc.js";
import { measureSpan } from "./timeline.js";

const PROBES = "scellis.probes:"; // the WebGPU probe's answers the worker keeps (probes.js)

// The probe answers this page keeps, for the worker (which has no localStorage of its own).
function keptProbes() {
  const out = {};
  try {
    for (let i = 0; i < localStorage.length; i += 1) {
      const key = localStorage.key(i);
      if (key.startsWith(PROBES)) out[key] = localStorage.getItem(key);
    }
  } catch {
    // storage blocked for this site: the worker keeps answers for this visit only
  }
  return out;
}

function keepProbe({ key, value }) {
  if (!key.startsWith(PROBES)) return;
  try {
    if (value === null) localStorage.removeItem(key);
    else localStorage.setItem(key, value);
  } catch {
    // not kept: a later visit measures again
  }
}

// The value of an engine call's answer that is JSON text (a promise of it).
export async function parsed(answer) {
  return JSON.parse(await answer);
}

// A run in the worker, driven by runmodel.Driver: every answer is JSON text, as scellis.app.Driven's.
export class RemoteRun {
  constructor(engine, id, state) {
    Object.assign(this, { engine, id, first: state });
  }

  advance(steps) {
    return this.engine.call("advance", this.id, steps);
  }

  state() {
    return this.engine.call("state", this.id);
  }

  checkpoint() {
    return this.engine.call("checkpoint", this.id);
  }

  manifest(base) {
    return this.engine.call("manifest", this.id, base);
  }

  verdict() {
    return this.engine.call("verdict", this.id);
  }

  // The model's weights now, as a safetensors file's bytes.
  weights() {
    return this.engine.call("weights", this.id);
  }

  // The fine-tuned model's files as a ZIP's bytes: `what` is "adapter" or "model" (scellis.models.finetune).
  export(what) {
    return this.engine.call("export", this.id, what);
  }

  close() {
    return this.engine.call("closeRun", this.id);
  }
}

// Starts the worker and its engine; `onStage(index, label)` hears each start-up stage. Resolves to
// {engine, report} once the engine has said what it can reach.
export async function startEngine(base, buildText, onStage) {
  const worker = new Worker(new URL("engine_worker.js", base), { type: "module" });
  const engine = connect(worker);
  engine.on("stage", ([index, label]) => onStage(index, label));
  engine.on("storage", keepProbe);
  engine.on("timeline", (span) => measureSpan(span));
  const failed = new Promise((_, reject) => {
    worker.addEventListener("error", (event) => {
      reject(new Error(`the engine's worker failed to start: ${event.message || "its script did not load"}`));
    });
  });
  const report = await Promise.race([engine.call("boot", buildText, keptProbes()), failed]);
  return { engine, report };
}
