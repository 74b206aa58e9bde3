// The engine in its Web Worker: Pyodide, the scellis wheel, the WebGPU executor and the IndexedDB store
// live here, off the page's main thread, so the page stays responsive while a run computes. The engine's
// calls are one table in Python (scellis.calls.CALLS): a call the page makes (rpc.js) by one of its names is
// answered there, its arguments given as keywords (`call` below). The handlers here are what needs the
// worker itself: start-up, the user's files, the WebGPU device, and the runs the page drives, kept here by
// id and reached through `advance`, `checkpoint`, and so on. Answers are data (JSON text or plain values).
// A run whose WebGPU device is lost fails with a GpuLostError (gpulost.js) whatever Python made of the loss.
// Where the time goes is sent to the page as it passes (timeline.js): each call, the device opened, the
// data fetched, what a compile's pipelines and buffers took, and the Python phases of opening a run.

import { openDevice } from "./executor.js";
import { GpuLostError } from "./gpulost.js";
import { verifiedFile, verifiedSnapshot, verifiedWheel } from "./integrity.js";
import { startPython } from "./pythonstart.js";
import { mirroredStorage, serve } from "./rpc.js";
import { openStore } from "./store.js";
import { timeline } from "./timeline.js";
import { importFiles } from "./userdata.js";
import { KeptData } from "./userdatamodel.js";

const DATA_FILES = ["digits-train-x.f32", "digits-train-y.i32", "digits-test-x.f32", "digits-test-y.i32"];
const CANCER_FILES = ["breast-cancer-x.f32", "breast-cancer-y.i32"];
// The pretrained model and the texts this site ships for fine-tuning (build.py's models step).
const MODEL_FILES = ["config.json", "tokenizer.json", "model.safetensors"];
const BUNDLED_MODEL = "models/all-MiniLM-L6-v2/";
const BUNDLED_TEXTS = "texts/spam-assassin.csv";

async function fetchBytes(url) {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
  return new Uint8Array(await response.arrayBuffer());
}

async function bytesOf(file) {
  return new Uint8Array(await file.arrayBuffer());
}

// A model folder's files by name (MODEL_FILES; others are left out): an error names each one missing.
async function folderFiles(given) {
  const byName = new Map();
  for (const entry of given) {
    const file = entry.file ?? entry;
    const name = (entry.path ?? file.webkitRelativePath ?? file.name).split("/").pop() || file.name;
    if (MODEL_FILES.includes(name)) byName.set(name, file);
  }
  const missing = MODEL_FILES.filter((name) => !byName.has(name));
  if (missing.length) {
    throw new Error(
      `the model folder lacks ${missing.join(", ")} (a Hugging Face BERT folder has ${MODEL_FILES.join(", ")})`,
    );
  }
  return Object.fromEntries(
    await Promise.all(MODEL_FILES.map(async (name) => [name, await bytesOf(byName.get(name))])),
  );
}

class Engine {
  constructor(base) {
    this.base = base;
    this.runs = new Map(); // id -> PyProxy of scellis.app.Driven
    this.gpus = new Map(); // id -> the WebGPU device (executor.openDevice's) a run is on
    this.advanced = new Set(); // the ids of the runs that have run a chunk
    this.nextRun = 1;
    this.siteFiles = null;
    this.kept = new KeptData(); // the user's imported data sets, by id
    this.texts = new Map(); // id -> a model's files and the texts to fine-tune it on (readTexts)
    this.nextTexts = 1;
    this.bundledModel = null; // this site's model files, fetched on first use
    this.storage = null; // the page's probe answers, mirrored (boot)
    this.line = timeline((span) => this.rpc.emit("timeline", span));
    // What Python reaches of the worker, as the module scellis_host (only scellis.runtime imports it):
    // `gpu`, the WebGPU device executor.openDevice opened last (null until then; replaced when a run needs
    // a fresh one), `openStore(name)`, the IndexedDB object store (store.js), and `timeline` (this.line).
    this.host = { gpu: null, openStore, timeline: this.line };
    this.calls = null; // scellis.calls, imported once the wheel is installed (boot)
    this.names = new Set(); // the names of its table, CALLS
  }

  // Start-up, reporting each stage to the page: Pyodide, the wheel, then what the engine can reach.
  async boot(buildText, storageEntries) {
    this.storage = mirroredStorage(storageEntries, (key, value) => this.rpc.emit("storage", { key, value }));
    this.buildText = buildText;
    const build = JSON.parse(buildText);
    const { loadPyodide } = await import(new URL("pyodide/pyodide.mjs", this.base).href);
    const { pyodide, started } = await startPython({
      loadPyodide,
      indexURL: new URL("pyodide/", this.base).href,
      version: `Pyodide ${build.tools.pyodide}`,
      snapshot: build.snapshot === undefined ? null : verifiedSnapshot(this.base, build),
      stage: (label) => this.rpc.emit("stage", [1, label]),
    });
    this.pyodide = pyodide;
    this.pyodide.registerJsModule("scellis_host", this.host);
    this.rpc.emit("stage", [2, `Installing the engine (${build.wheel})…`]);
    // the wheel's bytes checked against build.json, and exactly those installed
    const purelib = this.pyodide.pyimport("sysconfig").get_path("purelib");
    this.pyodide.unpackArchive(await verifiedWheel(this.base, build), "wheel", { extractDir: purelib });
    this.rpc.emit("stage", [3, "Finding devices and checking the CPU path…"]);
    this.calls = this.pyodide.pyimport("scellis.calls");
    const table = this.calls.CALLS;
    this.names = new Set(table); // a dict iterates over its keys
    table.destroy();
    return { ...JSON.parse(await this.call("report")), python_start: started };
  }

  // The answer of the engine's call `name` (scellis.calls.CALLS) to `args`, its keyword arguments as the
  // page gives them, converted to Python once: null as None, `data` (what files(data) reads) as `source`
  // and `files`. A call on the `device_kind` "webgpu" has the device open first (the open one unless lost).
  async call(name, args = {}) {
    if (!this.names.has(name)) throw new Error(`the engine has no call named ${JSON.stringify(name)}`);
    const { data, ...given } = args;
    if (given.device_kind !== undefined) await this.prepareDevice(given.device_kind, "open");
    const named = data === undefined ? given : { ...given, ...(await this.files(data)) };
    const keywords = this.pyodide.toPy(
      Object.fromEntries(Object.entries(named).map(([key, value]) => [key, value ?? undefined])),
    );
    try {
      return await this.line.span(`call: ${name}`, () => this.calls.answer(name, keywords));
    } finally {
      keywords.destroy();
    }
  }

  // The data a call names, as { source, files } for scellis.app: "site" (the digits this site ships,
  // fetched once), "chars" (the Zen of Python's characters: Python has the text), "cancer" (the breast
  // cancer data this site ships, fetched once), "none" (no data), { user: id } (a data set imported here),
  // or { files } (the digits' four files, given by the page).
  async files(data) {
    if (data === "chars" || data === "none") return { source: data, files: {} };
    if (data === "cancer") {
      this.cancerFiles ??= Object.fromEntries(
        await Promise.all(CANCER_FILES.map(async (n) => [n, await fetchBytes(new URL(`data/${n}`, this.base))])),
      );
      return { source: "cancer", files: this.cancerFiles };
    }
    if (data?.user !== undefined) return { source: "user", files: this.kept.get(data.user).files };
    if (data?.text !== undefined) {
      const files = this.texts.get(data.text);
      if (!files) throw new Error(`no texts ${data.text} in the engine: read the model and the texts again`);
      return { source: "text", files };
    }
    if (data !== "site") return { source: "site", files: data.files };
    if (!this.siteFiles) {
      const entries = await this.line.span("fetch: the site's digits", () =>
        Promise.all(DATA_FILES.map(async (n) => [n, await fetchBytes(new URL(`data/${n}`, this.base))])),
      );
      this.siteFiles = Object.fromEntries(entries);
    }
    return { source: "site", files: this.siteFiles };
  }

  // A model's files and texts to fine-tune it on, kept by id: `model` is "bundled" (this site's) or the
  // files of a Hugging Face model folder (File, or {path, file}); `texts` is "bundled" (this site's
  // SpamAssassin corpus) or a CSV File; `settings` scellis.models.finetune.TextSettings. Answers { id,
  // described: the engine's finetune answer }; on failure nothing is kept.
  async readTexts(model, texts, settings) {
    const files = model === "bundled" ? await this.siteModel() : await folderFiles(model);
    files["texts.csv"] = texts === "bundled" ? await this.siteFile(BUNDLED_TEXTS) : await bytesOf(texts);
    files["text.json"] = new TextEncoder().encode(JSON.stringify(settings));
    const id = this.nextTexts++;
    this.texts.set(id, files);
    try {
      return { id, described: JSON.parse(await this.call("finetune", { data: { text: id } })) };
    } catch (error) {
      this.texts.delete(id);
      throw error;
    }
  }

  async siteModel() {
    this.bundledModel ??= Object.fromEntries(
      await Promise.all(MODEL_FILES.map(async (n) => [n, await this.siteFile(BUNDLED_MODEL + n)])),
    );
    return { ...this.bundledModel };
  }

  // A file this site ships that start-up did not check (lazy.js), checked against build.json now.
  siteFile(name) {
    return verifiedFile(this.base, JSON.parse(this.buildText), name);
  }

  // The WebGPU device the engine's executor uses, as the host's `gpu`, as `want` says: "open" (the one open
  // unless it is lost: planning, pipelines made ahead), "unused" (one no run has used: the open one while
  // it is healthy and no run has been opened on it, so a run finds the pipelines made ahead for it; else a
  // fresh one), "new" (a fresh one). Never another kind: without an adapter, the error says so.
  async prepareDevice(kind, want) {
    if (kind !== "webgpu") return;
    const gpu = this.host.gpu;
    if (gpu && !gpu.lost && want === "open") return;
    if (gpu?.healthy && want === "unused" && !gpu.claimed) return;
    const began = this.line.now();
    const adapter = await navigator.gpu?.requestAdapter();
    if (!adapter) throw new Error("no WebGPU adapter is available now: the GPU cannot be opened");
    this.host.gpu = await openDevice(adapter, this.storage, this.line);
    this.line.record("open the WebGPU device", began);
  }

  // Python's answer to the call `name` that opens a run (openRun, openReplay), on a device of `kind` no run
  // has used; `args` as `call`'s. When the device is lost meanwhile, the loss is the error.
  async open(name, kind, args) {
    await this.prepareDevice(kind, "unused");
    const gpu = kind === "webgpu" ? this.host.gpu : null;
    gpu?.claim();
    try {
      return await this.call(name, { ...args, build: this.buildText });
    } catch (error) {
      if (gpu?.lost) throw new GpuLostError(gpu.lost, gpu.name, "opening the run");
      throw error;
    }
  }

  // A run opened in Python: kept by id (with its device, when WebGPU), or its refusal answered as is.
  keep(opened, kind) {
    if (typeof opened === "string") return { opened: JSON.parse(opened) };
    const id = this.nextRun++;
    this.runs.set(id, opened);
    if (kind === "webgpu") this.gpus.set(id, this.host.gpu);
    return { id, state: JSON.parse(opened.state()) };
  }

  // The re-run a share link pins, on the page's kind (`args.page_kind`): as `keep` answers, with its note.
  async openReplay(args) {
    const pair = await this.open("openReplay", args.page_kind, args);
    const [opened, note] = pair.toJs({ depth: 1 });
    pair.destroy();
    return { ...this.keep(opened, args.page_kind), note: note ?? null };
  }

  // `work(run)` for the run `id`; when it fails and the run's device is lost, the loss is the error.
  async onRun(id, work, during) {
    const run = this.run(id);
    try {
      return await work(run);
    } catch (error) {
      const gpu = this.gpus.get(id);
      if (gpu?.lost) throw new GpuLostError(gpu.lost, gpu.name, during);
      throw error;
    }
  }

  // After a run's device was lost: where the run stands ({state}) and its state saved as a checkpoint
  // ({saved: key}) where it can still be read, else why not ({unsaved}).
  async afterLoss(id) {
    const run = this.run(id);
    const state = JSON.parse(run.state()); // kept in Python, not on the device
    try {
      return { state, saved: await run.checkpoint(), unsaved: null };
    } catch (error) {
      const gpu = this.gpus.get(id);
      const why = gpu?.lost ? `it was on the GPU that was lost (${gpu.lost.reason})` : error.message;
      return { state, saved: null, unsaved: `its state at step ${state.step} could not be saved: ${why}` };
    }
  }

  run(id) {
    const run = this.runs.get(id);
    if (!run) throw new Error(`no run ${id} in the engine (it was closed)`);
    return run;
  }

  // The calls that need the worker itself; every other name is the engine's table's (`call`).
  handlers() {
    return {
      boot: (buildText, storage) => this.boot(buildText, storage),
      forgetProbes: () => this.host.gpu?.forgetProbes(),
      // the user's files read, split and kept here: { id, summary }; progress goes out as "dataProgress"
      importData: (files, settings) => importFiles(this.kept, files, settings, (p) => this.rpc.emit("dataProgress", p)),
      readTexts: (model, texts, settings) => this.readTexts(model, texts, settings),
      openRun: async (args) => {
        // the Python phases of opening it, as they end: (name, start, end) in time.perf_counter() seconds
        const phases = (name, start, end) => this.line.record(name, start * 1000, end * 1000);
        return this.keep(await this.open("openRun", args.device_kind, { ...args, phases }), args.device_kind);
      },
      openReplay: (args) => this.openReplay(args),
      advance: (id, steps) => {
        const work = () => this.onRun(id, (run) => run.advance(steps), "a step");
        if (this.advanced.has(id)) return work();
        this.advanced.add(id); // a run's first chunk goes on the timeline (its first loss); later ones would pile up
        return this.line.span("advance: the first chunk", work);
      },
      state: (id) => this.run(id).state(),
      checkpoint: (id) => this.onRun(id, (run) => run.checkpoint(), "saving a checkpoint"),
      manifest: (id, base) => this.onRun(id, (run) => run.manifest(base), "saving the final checkpoint"),
      afterLoss: (id) => this.afterLoss(id),
      // a fresh WebGPU device after a loss: its name
      reopenGpu: async () => {
        await this.prepareDevice("webgpu", "new");
        return this.host.gpu.name;
      },
      verdict: (id) => this.run(id).verdict(),
      weights: async (id) => {
        const bytes = await this.onRun(id, (run) => run.weights(), "reading the weights"); // Python bytes
        const copy = bytes.toJs();
        bytes.destroy();
        return copy;
      },
      export: async (id, what) => {
        const bytes = await this.onRun(id, (run) => run.export(what), "exporting the model"); // Python bytes
        const copy = bytes.toJs();
        bytes.destroy();
        return copy;
      },
      closeRun: (id) => {
        this.runs.get(id)?.destroy();
        this.runs.delete(id);
        this.gpus.delete(id);
        this.advanced.delete(id);
      },
      ...(SCELLIS_TEST_HOOKS ? testHooks(this) : {}), // the test build's only (build.py --test)
    };
  }
}

// The test build's calls (build.py --test; SCELLIS_TEST_HOOKS is false in dist/, where esbuild drops this):
// `python`: Python run in the engine (after opening the device of `kind` when it is WebGPU); the answer
// must be data (text, a number, or None). Names persist from call to call in one namespace, as in a Python
// session; `values` are set in it. `script`: a JS function (its source) called in the worker, where the
// device lives, with `arg` and the engine's host module (its `gpu`: the device open now).
function testHooks(engine) {
  return {
    python: async (code, values = {}, kind = undefined) => {
      if (kind) await engine.prepareDevice(kind, "new");
      for (const [name, value] of Object.entries(values)) engine.pyodide.globals.set(name, engine.pyodide.toPy(value));
      const result = await engine.pyodide.runPythonAsync(code);
      if (result && typeof result === "object" && typeof result.toJs === "function") {
        const plain = result.toJs({ dict_converter: Object.fromEntries });
        result.destroy();
        return plain;
      }
      return result;
    },
    script: (source, arg) => (0, eval)(`(${source})`)(arg, engine.host),
  };
}

// The worker's entry calls this once: `port` is the worker's global scope.
export function startEngine(port) {
  const engine = new Engine(new URL(".", port.location.href)); // the worker sits at the site's root
  engine.rpc = serve(port, engine.handlers(), (name, args) => engine.call(name, args));
  return engine;
}
