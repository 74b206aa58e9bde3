// The run the page drives: opened from init or a checkpoint key, run chunk by chunk (runmodel.Driver),
// and the run panel's buttons answered. One run at a time; a new one replaces the old. The last run's
// newest checkpoint is kept in the Runs history's IndexedDB (runstore.js "kept") so a later visit can
// resume it: that is convenience only, and a failure to keep it (the site's storage full) is noted
// quietly and never stops a run. Every run is reported to
// the Runs history (runs.js: its start, epochs, checkpoints, pauses, end, and the manifest of a paused or
// finished run), which resumes a run from any of its checkpoints through the resume form's path.

import { byId } from "./dom.js";
import { errorText } from "./format.js";
import { hideLoss, offerReopen } from "./gpuloss.js";
import { isGpuLost } from "./gpulost.js";
import {
  doing,
  keepSetting,
  setRunSettings,
  showEpoch,
  showResults,
  showTrainDone,
  showTrainPaused,
  showTrainRefused,
  showTrainStarting,
} from "./page.js";
import {
  checkLastRun,
  Driver,
  exportName,
  finetuned,
  forgetLastRun,
  keyFromText,
  LAST_RUN,
  lastRun,
  manifestName,
  weightsName,
} from "./runmodel.js";
import {
  download,
  setRunPhase,
  showExports,
  showImported,
  showLastKey,
  showLink,
  showPinnedStatus,
  showResumeError,
  showRunStart,
  showRunState,
  wireResume,
  wireRunControls,
} from "./runpanel.js";
import { resumeSettings, SITE_DATA, sameData } from "./runsmodel.js";
import { openRun } from "./train.js";

// The newest of a run's checkpoints (written by its loop program or saved from the page), or null.
function latestKey(state) {
  const all = [...state.checkpoints, ...state.saved].sort((a, b) => a.step - b.step);
  return all.length ? all[all.length - 1] : null;
}

const fieldValue = (id) => document.getElementById(id).value;

export class RunControl {
  // `controller.current()`: the page's program, device kind, level and memory cap. `history`: the Runs
  // card (runs.RunsCard), or null.
  constructor(engine, controller, history = null) {
    Object.assign(this, { engine, controller, history });
    this.current = null; // {run (engine.RemoteRun), driver, settings, rows, log (runs.js), pinning}
    this.last = null; // the last run's newest checkpoint (runmodel.checkLastRun's record), or null
  }

  // The last run kept by an earlier visit, into the resume form (unless a run has begun meanwhile): from
  // the Runs history's IndexedDB, or as pages before kept it in localStorage (then moved from there).
  async offerLast() {
    let last = checkLastRun(await this.history?.kept(LAST_RUN));
    if (!last) {
      last = lastRun(localStorage);
      if (last && (await this.history?.keep(LAST_RUN, last))) forgetLastRun(localStorage);
    }
    if (last && !this.last) {
      this.last = last;
      showLastKey(last);
    }
  }

  wire() {
    const guarded = (work) => async () => {
      try {
        await work();
      } catch (error) {
        console.error(error);
        showPinnedStatus(`failed: ${errorText(error)}`);
      }
    };
    wireRunControls({
      onPause: guarded(() => this.pause()),
      onStep: guarded(() => this.step()),
      onContinue: () => this.drive(),
      onSave: guarded(() => this.save()),
      onManifest: guarded(() => this.downloadManifest()),
      onLink: guarded(() => this.copyLink()),
      onWeights: guarded(() => this.downloadWeights()),
      onExport: (what) => guarded(() => this.downloadExport(what))(),
    });
    wireResume(
      (text) => this.resume(text),
      null,
      (file) => this.importTorch(file),
    );
    setRunPhase("idle");
    return this.offerLast().catch((error) => console.warn(error));
  }

  onState(state) {
    this.current.step = state.step;
    this.current.log?.state(state);
    showRunState(state);
    for (const row of state.epochs_done) {
      showEpoch(row);
      this.current.rows.push(row);
    }
    const latest = latestKey(state);
    if (!latest || latest.key === this.last?.key) return;
    const { program, level, seed, epochs, kind } = this.current.settings;
    this.last = { program, level, seed, epochs, kind, key: latest.key, step: latest.step };
    showLastKey(this.last);
    this.history?.keep(LAST_RUN, this.last); // never fails the run: the card notes a failure
  }

  finished(state) {
    const rows = this.current.rows;
    setRunPhase("done");
    showTrainDone(rows.length ? rows[rows.length - 1] : null, null, state);
    this.current.log?.settle(state.stopped ? "stopped by rule" : "done");
    this.keepManifest();
  }

  // A paused or finished run's manifest, kept with its record in the Runs history (the engine saves the
  // state it pins; PageRun does one thing at a time, so a step asked for meanwhile waits for it).
  keepManifest() {
    const current = this.current;
    if (!current.log) return;
    current.pinning = this.pinned(current).catch((error) => console.error(error));
  }

  async drive() {
    const { level } = this.current.settings;
    setRunPhase("running");
    showTrainStarting(level, `${doing()} at level ${level}…`);
    this.current.log?.settle("running");
    try {
      const state = await this.current.driver.go();
      if (state.done) this.finished(state);
      else {
        setRunPhase("paused");
        showTrainPaused(state.step);
        this.current.log?.settle("paused");
        this.keepManifest();
      }
    } catch (error) {
      console.error(error);
      setRunPhase("failed");
      showTrainDone(null, error);
      this.current.log?.settle("failed", errorText(error));
      if (isGpuLost(error)) await offerReopen(this, error);
    }
  }

  // Opens a run with `settings` ({program, kind, level, seed, epochs, cap, resume, keep?}) and drives it;
  // without `keep`, the train card's field says how many of the last rule checkpoints the run keeps.
  async start(given) {
    const keep = given.keep === undefined ? keepSetting() : { keep: given.keep };
    if (keep.error) {
      if (given.resume) showResumeError(`Cannot resume: ${keep.error}`);
      showTrainDone(null, keep.error);
      return;
    }
    const settings = { ...given, keep: keep.keep };
    hideLoss();
    if (this.current) {
      await this.current.driver.pause();
      await this.current.pinning;
      await this.current.run.close();
      this.current = null;
    }
    showResumeError("");
    const status = settings.resume ? `resuming from ${settings.resume}…` : `${doing()} at level ${settings.level}…`;
    showResults({});
    showTrainStarting(settings.level, status);
    const log = this.history?.begin(settings) ?? null;
    let opened;
    try {
      opened = await openRun(this.engine, settings);
    } catch (error) {
      console.error(error);
      showTrainDone(null, error);
      setRunPhase("idle");
      if (settings.resume) showResumeError(`Cannot resume: ${errorText(error)}`);
      log?.settle("failed", errorText(error));
      return;
    }
    if (opened.refused) {
      showTrainRefused(opened);
      log?.settle("refused", opened.refused);
      return;
    }
    const where = settings.kind === "cpu" ? "CPU path (WebAssembly)" : "WebGPU";
    showRunStart({ where, level: settings.level, seed: settings.seed, resume: settings.resume });
    showExports(...finetuned(settings.program));
    this.current = { run: opened, settings, rows: [], driver: null, log, pinning: null };
    this.current.driver = new Driver(opened, { onState: (state) => this.onState(state) });
    this.onState(opened.first);
    await this.drive();
  }

  async pause() {
    const state = await this.current.driver.pause();
    if (state?.done) return; // the run ended as it was paused: drive() has shown its end
    setRunPhase("paused");
    if (state) showTrainPaused(state.step);
  }

  async step() {
    const state = await this.current.driver.step();
    if (state.done) this.finished(state);
    else showTrainPaused(state.step);
  }

  async save() {
    const key = await this.current.run.checkpoint();
    this.onState(JSON.parse(await this.current.run.state()));
    showPinnedStatus(`saved ${key}`);
  }

  async pinned(current = this.current) {
    const out = JSON.parse(await current.run.manifest(location.href));
    current.log?.pinned(out);
    return out;
  }

  async downloadManifest() {
    const out = await this.pinned();
    const manifest = JSON.parse(out.manifest);
    download(manifestName(manifest.program.json.name, out.final), out.manifest);
    showPinnedStatus(`manifest of step ${manifest.steps} downloaded; final checkpoint ${out.final}`);
    showLink(out.link);
  }

  // The model as it stands (parameters and state, no optimizer state) as a safetensors file.
  async downloadWeights() {
    const { run, settings } = this.current;
    const bytes = await run.weights();
    const name = weightsName(JSON.parse(settings.program).name, this.current.step ?? 0);
    download(name, bytes, "application/octet-stream");
    showPinnedStatus(`weights downloaded as ${name} (${bytes.byteLength.toLocaleString("en")} bytes, safetensors)`);
  }

  // One ZIP: a fine-tuned model's files for the Hugging Face tools, the PEFT adapter and the head
  // (`adapter`) or the merged model with its config and tokenizer and the head (`model`); or the run as it
  // stands for PyTorch (`torch`: model.py, train.py, weights, data, epoch orders; saved as a checkpoint first).
  async downloadExport(what) {
    const { run, settings } = this.current;
    const label = { adapter: "the LoRA adapter (PEFT)", model: "the model", torch: "the run for PyTorch" }[what];
    showPinnedStatus(`exporting ${label}…`);
    const bytes = await run.export(what);
    const name = exportName(JSON.parse(settings.program).name, what, this.current.step ?? 0);
    download(name, bytes, "application/zip");
    const size = bytes.byteLength.toLocaleString("en");
    byId("run").dataset.exported = what;
    const then = what === "torch" ? ": unzip it, then python train.py or torchrun … train.py --strategy ddp|fsdp" : "";
    showPinnedStatus(`${label} downloaded as ${name} (${size} bytes)${then}`);
  }

  // A checkpoint an exported train.py wrote, stored as the page's program's checkpoint at the level it
  // continues (the engine refuses another program's by name); its key, level and seed go into the forms.
  async importTorch(file) {
    const page = this.controller.current();
    try {
      const checkpoint = new Uint8Array(await file.arrayBuffer());
      const args = { data: page.source ?? "site", program: page.program, checkpoint };
      const imported = JSON.parse(await this.engine.call("importTorch", args));
      setRunSettings({ level: imported.level, seed: imported.seed, epochs: fieldValue("train-epochs") });
      showImported({ imported });
    } catch (error) {
      showImported({ error: errorText(error) });
    }
  }

  async copyLink() {
    const out = await this.pinned();
    showLink(out.link);
    try {
      await navigator.clipboard.writeText(out.link);
      showPinnedStatus("share link copied");
    } catch {
      showPinnedStatus("the clipboard is not available here: select the link below and copy it");
    }
  }

  // The resume form: the settings of the run the key is from (`from`; else the last run's, or a run's of
  // the Runs history, that wrote it); otherwise the page's, which the checkpoint must match (the engine
  // names what differs).
  resume(text, from = null) {
    const parsed = keyFromText(text);
    if (parsed.error) {
      showResumeError(parsed.error);
      return;
    }
    const last = this.last;
    const record = from ?? (last?.key === parsed.key ? last : this.history?.settingsOf(parsed.key));
    const page = this.controller.current();
    const own = Boolean(record);
    const settings = own
      ? {
          ...page,
          program: record.program,
          level: record.level,
          seed: record.seed,
          epochs: record.epochs,
          keep: record.keep,
        }
      : { ...page, seed: fieldValue("train-seed"), epochs: Number(fieldValue("train-epochs")) };
    if (!settings.level) {
      showResumeError("choose the determinism level the checkpoint was saved at first");
      return;
    }
    if (own) setRunSettings(record);
    this.start({ ...settings, resume: parsed.key });
  }

  // "Resume from here" in the Runs history: the run's program and settings go into the page, then the
  // resume form's path. The page's data must be the data the run read (the card names it otherwise).
  resumeFrom(run, key) {
    const data = this.controller.current().data ?? { name: SITE_DATA, versions: null };
    if (!sameData(run.data, data)) {
      return `the run read ${run.data.name}; the page's data is ${data.name}: choose it in the Data card first`;
    }
    this.controller.load(run.program, `the run of ${run.name}`);
    this.resume(key, resumeSettings(run));
    return null;
  }
}
