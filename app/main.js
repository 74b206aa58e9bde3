// Entry module: the only one that runs code on import.

import { boot, exampleGuide } from "./src/boot.js";
import { errorText } from "./src/format.js";
import {
  setRunSettings,
  showEpoch,
  showError,
  showGuide,
  showOffline,
  showReady,
  showStage,
  showTrainDone,
  showTrainPanel,
  showTrainPaused,
  showTrainRefused,
  showTrainStarting,
  stagesSeen,
} from "./src/page.js";
import { capFromText } from "./src/plan.js";
import { showCapError, showPlan, showPlanMessage, wirePlanControls } from "./src/planpanel.js";
import { Driver, checkDataFiles, keyFromText, lastRun, manifestName, rememberRun } from "./src/runmodel.js";
import {
  clearSharedError,
  download,
  setRunPhase,
  showLastKey,
  showLink,
  showPinnedStatus,
  showResumeError,
  showRunStart,
  showRunState,
  showShared,
  showSharedBusy,
  showSharedError,
  showSharedState,
  showSharedStatus,
  showSharedVerdict,
  wireResume,
  wireRunControls,
  wireShared,
} from "./src/runpanel.js";
import { openStore } from "./src/store.js";
import {
  applyRemedy,
  exampleProgram,
  fetchData,
  openReplay,
  openRun,
  planProgram,
  prepareDevice,
  readLink,
} from "./src/train.js";

// What the page will run: the program (JSON text: the example, or the example changed by the remedies
// named in `applied`), the device kind, the level, the memory cap (bytes or null). Replaced, never
// mutated, on every change; the plan shown is always of the latest one.
function runController(pyodide, files, kind, example) {
  let run = { kind, program: example, applied: [], level: "", cap: null };
  let latest = 0;
  const replan = async () => {
    if (!run.level) return;
    latest += 1;
    const ticket = latest;
    showPlanMessage("planning", "Planning…");
    try {
      const plan = await planProgram(pyodide, files, run);
      if (ticket === latest) showPlan(plan, run.applied, apply);
    } catch (error) {
      console.error(error);
      if (ticket === latest) showPlanMessage("error", `Planning failed: ${errorText(error)}`);
    }
  };
  const apply = async (remedy) => {
    showPlanMessage("planning", `Applying ${remedy.name}…`);
    try {
      const program = await applyRemedy(pyodide, run.program, remedy.change);
      run = { ...run, program, applied: [...run.applied, remedy.name] };
    } catch (error) {
      console.error(error);
      showPlanMessage("error", `Applying ${remedy.name} failed: ${errorText(error)}`);
      return;
    }
    await replan();
  };
  const update = (change) => {
    run = { ...run, ...change };
    replan();
  };
  // Another program (JSON text): a share link's; `name` says where it came from.
  const load = (program, name) => {
    run = { ...run, program, applied: [name] };
    replan();
  };
  wirePlanControls({
    probed: kind === "webgpu",
    onCap: (text) => {
      const parsed = capFromText(text);
      showCapError(parsed.error ?? "");
      if (!parsed.error) update({ cap: parsed.cap });
    },
    onReset: () => update({ program: example, applied: [] }),
    onMeasure: () => {
      globalThis.scellisGpu?.forgetProbes(); // the next plan probes the device again
      replan();
    },
  });
  return { setLevel: (level) => update({ level }), current: () => run, load };
}

// The newest of a run's checkpoints (written by its loop program or saved from the page), or null.
function latestKey(state) {
  const all = [...state.checkpoints, ...state.saved].sort((a, b) => a.step - b.step);
  return all.length ? all[all.length - 1] : null;
}

const fieldValue = (id) => document.getElementById(id).value;

// The run the page drives: open it (from init or a checkpoint key), run it chunk by chunk, and answer the
// panel's buttons. One run at a time; a new one replaces the old.
function runPanel(pyodide, files, buildText, controller) {
  let current = null; // {run (PyProxy of scellis.app.Driven), driver, settings, rows}

  const remember = (state) => {
    const latest = latestKey(state);
    if (!latest || !current) return;
    const { program, level, seed, epochs, kind } = current.settings;
    const record = { program, level, seed, epochs, kind, key: latest.key, step: latest.step };
    rememberRun(localStorage, record);
    showLastKey(record);
  };
  const onState = (state) => {
    showRunState(state);
    for (const row of state.epochs_done) {
      showEpoch(row);
      current.rows.push(row);
    }
    remember(state);
  };
  const finished = (state) => {
    const rows = current.rows;
    setRunPhase("done");
    showTrainDone(rows.length ? rows[rows.length - 1] : null, null, state);
  };
  const failed = (error) => {
    console.error(error);
    setRunPhase("failed");
    showTrainDone(null, error);
  };
  const drive = async () => {
    setRunPhase("running");
    showTrainStarting(current.settings.level, `training at level ${current.settings.level}…`);
    try {
      const state = await current.driver.go();
      if (state.done) finished(state);
      else {
        setRunPhase("paused");
        showTrainPaused(state.step);
      }
    } catch (error) {
      failed(error);
    }
  };
  const start = async (settings) => {
    if (current) {
      await current.driver.pause();
      current.run.destroy();
      current = null;
    }
    showResumeError("");
    const status = settings.resume ? `resuming from ${settings.resume}…` : `training at level ${settings.level}…`;
    showTrainStarting(settings.level, status);
    let opened;
    try {
      opened = await openRun(pyodide, files, buildText, settings);
    } catch (error) {
      failed(error);
      setRunPhase("idle");
      if (settings.resume) showResumeError(`Cannot resume: ${errorText(error)}`);
      return;
    }
    if (opened.refused) {
      showTrainRefused(opened);
      return;
    }
    const where = settings.kind === "cpu" ? "CPU path (WebAssembly)" : "WebGPU";
    showRunStart({ where, level: settings.level, seed: settings.seed, resume: settings.resume });
    current = { run: opened, settings, rows: [], driver: null };
    current.driver = new Driver(opened, { onState });
    onState(JSON.parse(opened.state()));
    await drive();
  };
  // Each button's work; a failure is shown in the status line, never lost.
  const guarded = (work) => async () => {
    try {
      await work();
    } catch (error) {
      console.error(error);
      showPinnedStatus(`failed: ${errorText(error)}`);
    }
  };
  const pinned = async () => JSON.parse(await current.run.manifest(location.href));

  wireRunControls({
    onPause: guarded(async () => {
      const state = await current.driver.pause();
      if (state?.done) return; // the run ended as it was paused: drive() has shown its end
      setRunPhase("paused");
      if (state) showTrainPaused(state.step);
    }),
    onStep: guarded(async () => {
      const state = await current.driver.step();
      if (state.done) finished(state);
      else showTrainPaused(state.step);
    }),
    onContinue: drive,
    onSave: guarded(async () => {
      const key = await current.run.checkpoint();
      onState(JSON.parse(current.run.state()));
      showPinnedStatus(`saved ${key}`);
    }),
    onManifest: guarded(async () => {
      const out = await pinned();
      const manifest = JSON.parse(out.manifest);
      download(manifestName(manifest.program.json.name, out.final), out.manifest);
      showPinnedStatus(`manifest of step ${manifest.steps} downloaded; final checkpoint ${out.final}`);
      showLink(out.link);
    }),
    onLink: guarded(async () => {
      const out = await pinned();
      showLink(out.link);
      try {
        await navigator.clipboard.writeText(out.link);
        showPinnedStatus("share link copied");
      } catch {
        showPinnedStatus("the clipboard is not available here: select the link below and copy it");
      }
    }),
  });
  wireResume((text) => {
    const parsed = keyFromText(text);
    if (parsed.error) {
      showResumeError(parsed.error);
      return;
    }
    const record = lastRun(localStorage);
    const page = controller.current();
    // the last run's own settings when resuming it; otherwise the page's, which the checkpoint must match
    const own = record && record.key === parsed.key;
    const settings = own
      ? { ...page, program: record.program, level: record.level, seed: record.seed, epochs: record.epochs }
      : { ...page, seed: fieldValue("train-seed"), epochs: Number(fieldValue("train-epochs")) };
    if (!settings.level) {
      showResumeError("choose the determinism level the checkpoint was saved at first");
      return;
    }
    if (own) setRunSettings(record);
    start({ ...settings, resume: parsed.key });
  }, lastRun(localStorage));
  setRunPhase("idle");
  return { start };
}

// A share link's run: what it carries, the data it asks for, the re-run and its verdict; or, for a
// program not run yet, the program and settings loaded into the trainer.
async function sharedRun(pyodide, buildText, kind, controller) {
  let shown;
  try {
    shown = await readLink(pyodide, location.href);
  } catch (error) {
    console.error(error);
    showSharedError(error, "This share link cannot be read: ");
    return;
  }
  showShared(shown);
  if (!shown.ran_on) {
    controller.load(shown.program, "the shared program");
    setRunSettings(shown.settings);
    showSharedStatus("Loaded into the trainer below: choose Train to run it.");
    return;
  }
  const rerun = async (files) => {
    clearSharedError();
    showSharedBusy(true);
    showSharedStatus("Checking the data's hashes…");
    try {
      const opened = await openReplay(pyodide, files, buildText, kind, location.href);
      if (opened.refused) {
        showSharedError(`the re-run does not fit on this device: ${opened.refused}`);
        return;
      }
      const how = opened.note ?? `level ${shown.settings.level}, seed ${shown.settings.seed}`;
      showSharedStatus(`The data matches the pinned hashes. Re-running (${how})…`);
      const driver = new Driver(opened.run, { onState: showSharedState });
      await driver.go();
      const verdict = JSON.parse(await opened.run.verdict());
      opened.run.destroy();
      showSharedVerdict(verdict);
      showSharedStatus(verdict.verified ? "Verified." : "The re-run did not reach the pinned checkpoint.");
    } catch (error) {
      console.error(error);
      showSharedStatus("");
      showSharedError(error, "Nothing was verified: ");
    } finally {
      showSharedBusy(false);
    }
  };
  wireShared({
    onSiteData: async () => rerun(await fetchData(new URL(".", location.href))),
    onFiles: async (picked) => {
      const checked = checkDataFiles(picked.map((file) => file.name));
      if (checked.error) {
        showSharedError(checked.error);
        return;
      }
      const read = async (file) => [file.name, new Uint8Array(await file.arrayBuffer())];
      await rerun(Object.fromEntries(await Promise.all(picked.map(read))));
    },
  });
}

// The train card with its memory plan panel and run panel, once the data and the example program are
// here; then, when the address carries a share link, its card.
async function showRun(session) {
  const base = new URL(".", location.href);
  const [files, example] = await Promise.all([fetchData(base), exampleProgram(session.pyodide)]);
  const { selected, levels } = session.report;
  const kind = selected.device.kind;
  const controller = runController(session.pyodide, files, kind, example);
  const panel = runPanel(session.pyodide, files, session.buildText, controller);
  showTrainPanel(selected, levels, {
    onLevel: controller.setLevel,
    onTrain: (level, epochs, seed) => panel.start({ ...controller.current(), level, epochs, seed }),
  });
  if (location.hash.includes("run=")) await sharedRun(session.pyodide, session.buildText, kind, controller);
}

// Registers the service worker and has it keep a copy of this build; resolves once the copy is whole.
async function enableOffline(buildText) {
  if (!("serviceWorker" in navigator)) return "not available in this browser";
  await navigator.serviceWorker.register("sw.js");
  const worker = (await navigator.serviceWorker.ready).active;
  const answer = await new Promise((resolve) => {
    const channel = new MessageChannel();
    channel.port1.onmessage = (event) => resolve(event.data);
    worker.postMessage({ type: "remember", build: buildText }, [channel.port2]);
  });
  if (!answer.ok) throw new Error(answer.error);
  return "available: this site starts without a network after this visit";
}

// The engine opens the page's object store (IndexedDB) through this (runtime/browser_store.py).
globalThis.scellisStore = { open: openStore };

boot(showStage)
  .then((session) => {
    const readyMs = performance.now(); // since navigation began
    window.scellis = { ...session, readyMs, stages: stagesSeen, prepareDevice };
    showReady(session, readyMs);
    return Promise.all([
      showRun(session),
      exampleGuide(session.pyodide).then(showGuide),
      enableOffline(session.buildText)
        .catch((error) => `not available (${error.message})`)
        .then(showOffline),
    ]);
  })
  .catch((error) => {
    console.error(error);
    showError(error);
  });
