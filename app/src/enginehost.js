// The engine in its Web Worker: Pyodide, the scellis wheel, the WebGPU executor and the IndexedDB store
// live here, off the page's main thread, so the page stays responsive while a run computes. Every call
// the page makes (rpc.js) is a handler below; answers are data (JSON text or plain values). Runs the
// page drives are kept here by id and reached through `advance`, `checkpoint`, and so on. A run whose
// WebGPU device is lost fails with a GpuLostError (gpulost.js) whatever Python made of the loss.

import { openDevice } from "./executor.js";
import { GpuLostError } from "./gpulost.js";
import { verifiedWheel } from "./integrity.js";
import { mirroredStorage, serve } from "./rpc.js";
import { openStore } from "./store.js";
import { importFiles } from "./userdata.js";
import { KeptData } from "./userdatamodel.js";

const DATA_FILES = ["digits-train-x.f32", "digits-train-y.i32", "digits-test-x.f32", "digits-test-y.i32"];
const CANCER_FILES = ["breast-cancer-x.f32", "breast-cancer-y.i32"];

const REPORT_PY = `
import json
from scellis.runtime.report import environment_report
json.dumps(await environment_report(check=True))
`;

const FILES_PY = "files = {name: bytes(data) for name, data in js_files.to_py().items()}\n";

const PYTHON = {
  example: "from scellis.app import example_program\nexample_program()",
  plan: `from scellis.app import plan_example\n${FILES_PY}await plan_example(source, files, program, device_kind, level, cap=cap)`,
  data: `from scellis.app import data_json\n${FILES_PY}data_json(source, files)`,
  starter: `from scellis.app import starter_json\n${FILES_PY}starter_json(source, files)`,
  apply: "from scellis.app import apply_remedy\napply_remedy(program, change)",
  link: "from scellis.app import read_link\nread_link(href)",
  palette: "from scellis.app import palette_json\npalette_json()",
  check: "from scellis.app import check_program\ncheck_program(program)",
  guide: "from scellis.app import guide_json\nguide_json(program, level, features)",
  examples: "from scellis.app import examples_json\nexamples_json()",
  run: `from scellis.app import open_run
${FILES_PY}await open_run(source, files, program, device_kind=device_kind, level=level, seed=seed, epochs=epochs,
               build=build, cap=cap, browser=browser, resume=resume, keep=keep)`,
  replay: `from scellis.app import open_replay
${FILES_PY}await open_replay(source, files, href, page_kind, build, cap=cap, browser=browser)`,
};

async function fetchBytes(url) {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
  return new Uint8Array(await response.arrayBuffer());
}

class Engine {
  constructor(base) {
    this.base = base;
    this.runs = new Map(); // id -> PyProxy of scellis.app.Driven
    this.gpus = new Map(); // id -> the WebGPU device (executor.openDevice's) a run is on
    this.nextRun = 1;
    this.siteFiles = null;
    this.kept = new KeptData(); // the user's imported data sets, by id
    this.storage = null; // the page's probe answers, mirrored (boot)
  }

  // Start-up, reporting each stage to the page: Pyodide, the wheel, then what the engine can reach.
  async boot(buildText, storageEntries) {
    this.storage = mirroredStorage(storageEntries, (key, value) => this.rpc.emit("storage", { key, value }));
    this.buildText = buildText;
    const build = JSON.parse(buildText);
    this.rpc.emit("stage", [1, `Loading Python (Pyodide ${build.tools.pyodide})…`]);
    const { loadPyodide } = await import(new URL("pyodide/pyodide.mjs", this.base).href);
    this.pyodide = await loadPyodide({ indexURL: new URL("pyodide/", this.base).href });
    this.rpc.emit("stage", [2, `Installing the engine (${build.wheel})…`]);
    // the wheel's bytes checked against build.json, and exactly those installed
    const purelib = this.pyodide.runPython("import sysconfig; sysconfig.get_path('purelib')");
    this.pyodide.unpackArchive(await verifiedWheel(this.base, build), "wheel", { extractDir: purelib });
    this.rpc.emit("stage", [3, "Finding devices and checking the CPU path…"]);
    return JSON.parse(await this.pyodide.runPythonAsync(REPORT_PY));
  }

  // `data`: what files(data) answers, set as Python's `source` and `js_files`.
  python(code, values = {}, data = undefined) {
    const globals = this.pyodide.toPy(values);
    if (data !== undefined) {
      globals.set("source", data.source);
      globals.set("js_files", data.files);
    }
    return this.pyodide.runPythonAsync(code, { globals });
  }

  // The data a call names, as { source, files } for scellis.app: "site" (the digits this site ships,
  // fetched once), "chars" (the Zen of Python's characters: Python has the text), "cancer" (the breast
  // cancer data this site ships, fetched once), { user: id } (a data set imported here), or { files } (the
  // digits' four files, given by the page).
  async files(data) {
    if (data === "chars" || data === "none") return { source: data, files: {} };
    if (data === "cancer") {
      this.cancerFiles ??= Object.fromEntries(
        await Promise.all(CANCER_FILES.map(async (n) => [n, await fetchBytes(new URL(`data/${n}`, this.base))])),
      );
      return { source: "cancer", files: this.cancerFiles };
    }
    if (data?.user !== undefined) return { source: "user", files: this.kept.get(data.user).files };
    if (data !== "site") return { source: "site", files: data.files };
    if (!this.siteFiles) {
      const entries = await Promise.all(
        DATA_FILES.map(async (n) => [n, await fetchBytes(new URL(`data/${n}`, this.base))]),
      );
      this.siteFiles = Object.fromEntries(entries);
    }
    return { source: "site", files: this.siteFiles };
  }

  // Opens the WebGPU device the engine's executor uses (a fresh one for each run; kept for planning
  // until it is lost). Never another kind: without an adapter, the error says so.
  async prepareDevice(kind, fresh = true) {
    if (kind !== "webgpu" || (!fresh && globalThis.scellisGpu && !globalThis.scellisGpu.lost)) return;
    const adapter = await navigator.gpu?.requestAdapter();
    if (!adapter) throw new Error("no WebGPU adapter is available now: the GPU cannot be opened");
    globalThis.scellisGpu = await openDevice(adapter, this.storage);
  }

  // A run opened in Python: kept by id (with its device, when WebGPU), or its refusal answered as is.
  keep(opened, kind) {
    if (typeof opened === "string") return { opened: JSON.parse(opened) };
    const id = this.nextRun++;
    this.runs.set(id, opened);
    if (kind === "webgpu") this.gpus.set(id, globalThis.scellisGpu);
    return { id, state: JSON.parse(opened.state()) };
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

  handlers() {
    return {
      boot: (buildText, storage) => this.boot(buildText, storage),
      // the Guide of a program (JSON text): stages, links from nodes to IR ops and kernels, buffer lifetimes
      guide: async (program, level, features) =>
        JSON.parse(await this.python(PYTHON.guide, { program, level, features })),
      example: () => this.python(PYTHON.example),
      plan: async (data, run) => {
        await this.prepareDevice(run.kind, false);
        const values = { program: run.program, device_kind: run.kind, level: run.level, cap: run.cap ?? undefined };
        return JSON.parse(await this.python(PYTHON.plan, values, await this.files(data)));
      },
      apply: (program, change) => this.python(PYTHON.apply, { program, change: JSON.stringify(change) }),
      // the editor's op palette, and every problem of a program (JSON text) with its node and port
      palette: async () => JSON.parse(await this.python(PYTHON.palette)),
      check: async (program) => JSON.parse(await this.python(PYTHON.check, { program })),
      // the example programs the editor opens: [{name, summary, program}]
      examples: async () => JSON.parse(await this.python(PYTHON.examples)),
      forgetProbes: () => globalThis.scellisGpu?.forgetProbes(),
      // the user's files read, split and kept here: { id, summary }; progress goes out as "dataProgress"
      importData: (files, settings) => importFiles(this.kept, files, settings, (p) => this.rpc.emit("dataProgress", p)),
      // a data set as the engine reads it (its description, split versions, vocabulary), and a starter
      // program for it (JSON text)
      dataInfo: async (data) => JSON.parse(await this.python(PYTHON.data, {}, await this.files(data))),
      starter: async (data) => this.python(PYTHON.starter, {}, await this.files(data)),
      openRun: (data, run) => this.openRun(data, run),
      advance: (id, steps) => this.onRun(id, (run) => run.advance(steps), "a step"),
      state: (id) => this.run(id).state(),
      checkpoint: (id) => this.onRun(id, (run) => run.checkpoint(), "saving a checkpoint"),
      manifest: (id, base) => this.onRun(id, (run) => run.manifest(base), "saving the final checkpoint"),
      afterLoss: (id) => this.afterLoss(id),
      // a fresh WebGPU device after a loss: its name
      reopenGpu: async () => {
        await this.prepareDevice("webgpu", true);
        return globalThis.scellisGpu.name;
      },
      verdict: (id) => this.run(id).verdict(),
      weights: async (id) => {
        const bytes = await this.onRun(id, (run) => run.weights(), "reading the weights"); // Python bytes
        const copy = bytes.toJs();
        bytes.destroy();
        return copy;
      },
      closeRun: (id) => {
        this.runs.get(id)?.destroy();
        this.runs.delete(id);
        this.gpus.delete(id);
      },
      readLink: async (href) => JSON.parse(await this.python(PYTHON.link, { href })),
      openReplay: (data, kind, href, browser) => this.openReplay(data, kind, href, browser),
      ...(SCELLIS_TEST_HOOKS ? testHooks(this) : {}), // the test build's only (build.py --test)
    };
  }

  async openRun(data, run) {
    await this.prepareDevice(run.kind);
    const values = {
      program: run.program,
      device_kind: run.kind,
      level: run.level,
      epochs: run.epochs,
      seed: run.seed,
      build: this.buildText,
      cap: run.cap ?? undefined, // Python's None
      browser: run.browser,
      resume: run.resume ?? undefined,
      keep: run.keep ?? undefined, // a whole number, "all", or Python's None (scellis.app: its default)
    };
    const gpu = run.kind === "webgpu" ? globalThis.scellisGpu : null;
    let opened;
    try {
      opened = await this.python(PYTHON.run, values, await this.files(data));
    } catch (error) {
      if (gpu?.lost) throw new GpuLostError(gpu.lost, gpu.name, "opening the run");
      throw error;
    }
    return this.keep(opened, run.kind);
  }

  async openReplay(data, kind, href, browser) {
    await this.prepareDevice(kind);
    const values = { href, page_kind: kind, build: this.buildText, cap: undefined, browser };
    const pair = await this.python(PYTHON.replay, values, await this.files(data));
    const [opened, note] = pair.toJs({ depth: 1 });
    pair.destroy();
    return { ...this.keep(opened, kind), note: note ?? null };
  }
}

// The test build's calls (build.py --test; SCELLIS_TEST_HOOKS is false in dist/, where esbuild drops this):
// `python`: Python run in the engine as the page's own calls are (after opening the device of `kind` when it
// is WebGPU); the answer must be data (text, a number, or None). Names persist from call to call in one
// namespace, as in a Python session; `values` are set in it. `script`: a JS function (its source) called
// with `arg` in the worker, where the device lives.
function testHooks(engine) {
  return {
    python: async (code, values = {}, kind = undefined) => {
      if (kind) await engine.prepareDevice(kind);
      for (const [name, value] of Object.entries(values)) engine.pyodide.globals.set(name, engine.pyodide.toPy(value));
      const result = await engine.pyodide.runPythonAsync(code);
      if (result && typeof result === "object" && typeof result.toJs === "function") {
        const plain = result.toJs({ dict_converter: Object.fromEntries });
        result.destroy();
        return plain;
      }
      return result;
    },
    script: (source, arg) => (0, eval)(`(${source})`)(arg),
  };
}

// The worker's entry calls this once: `port` is the worker's global scope.
export function startEngine(port) {
  globalThis.scellisStore = { open: openStore }; // the engine's BrowserStore opens IndexedDB through it
  const engine = new Engine(new URL(".", port.location.href)); // the worker sits at the site's root
  engine.rpc = serve(port, engine.handlers());
  return engine;
}
