// Entry module: the only one that runs code on import.

import { boot } from "./src/boot.js";
import { RunCharts } from "./src/charts.js";
import { DataCard } from "./src/datacard.js";
import { chooseDevice, keepDevice, storedDevice } from "./src/devicechoice.js";
import { showBlocked } from "./src/editor/blocked.js";
import { mountEditor } from "./src/editor/mount.jsx";
import { sameProgram } from "./src/editor/program.js";
import { FineTuneCard } from "./src/finetune.js";
import { errorText } from "./src/format.js";
import { Guide } from "./src/guide.js";
import {
  showDeviceBanner,
  showDeviceChoice,
  showError,
  showOffline,
  showProgramKind,
  showReady,
  showStage,
  showTrainPanel,
  stagesSeen,
} from "./src/page.js";
import { capFromText } from "./src/plan.js";
import { showCapError, showChanges, showPlan, showPlanMessage, showUnfit, wirePlanControls } from "./src/planpanel.js";
import { RunControl } from "./src/runcontrol.js";
import { trains } from "./src/runmodel.js";
import { RunsCard } from "./src/runs.js";
import { SharedRun } from "./src/sharedrun.js";
import { StorageCheck } from "./src/storagecheck.js";
import { applyRemedy, exampleProgram, forgetProbes, planProgram, warmKernels } from "./src/train.js";

const EDITED = "edited"; // `applied` of a program changed in the editor (remedies included)

// A program's loop settings (JSON text), or null when it cannot be read.
function programLoop(text) {
  try {
    return JSON.parse(text).loop ?? null;
  } catch {
    return null;
  }
}

// What the page will run: the program (JSON text: the example, or the editor's, changed by the remedies
// named in `applied`), the device kind, the level, the memory cap (bytes or null), and the data the Data
// card chose (`source` for the engine, `data` for the record). Replaced, never mutated, on every change;
// the plan shown is always of the latest one.
// The Guide (`guide`) follows the same program and level.
// `editor` (mountEditor's, or null) shows every program the page runs and hands over its own after each
// check (`edited`); while that program has problems (`blocked` says which), nothing is planned or trained.
function runController(engine, kind, example, guide, editor, data) {
  const start = editor?.program ?? example;
  const applied = sameProgram(start, example) ? [] : [EDITED];
  let run = { kind, program: start, applied, level: "", cap: null, ...data.current() };
  let blocked = sameProgram(start, example) ? "" : "the program in the editor is being checked";
  let latest = 0;
  let shown = null; // the program the train card was last set for
  const replan = async () => {
    showChanges(run.applied);
    guide.show(run.program, run.level);
    if (run.program !== shown) {
      shown = run.program;
      const loop = programLoop(run.program);
      showProgramKind(trains(run.program), loop?.epochs);
    }
    if (!run.level) return;
    latest += 1;
    const ticket = latest;
    if (blocked) {
      showPlanMessage("blocked", `No plan: ${blocked}.`);
      return;
    }
    showPlanMessage("planning", "Planning…");
    try {
      const plan = await planProgram(engine, run);
      if (ticket !== latest) return;
      if (plan.unfit) showUnfit(plan.unfit, { onSource: (source) => data.select(source), onStarter: starter });
      else showPlan(plan, run.applied, apply);
    } catch (error) {
      console.error(error);
      if (ticket === latest) showPlanMessage("error", `Planning failed: ${errorText(error)}`);
    }
  };
  const apply = async (remedy) => {
    showPlanMessage("planning", `Applying ${remedy.name}…`);
    try {
      const program = await applyRemedy(engine, run.program, remedy.change);
      run = { ...run, program, applied: [...run.applied, remedy.name] };
      editor?.setProgram(program, `the remedy ${remedy.name}`);
    } catch (error) {
      console.error(error);
      showPlanMessage("error", `Applying ${remedy.name} failed: ${errorText(error)}`);
      return;
    }
    await replan();
  };
  // The program replaced by a starter program for the data chosen (the editor can undo it).
  const starter = async () => {
    showPlanMessage("planning", "Writing a starter program for the data…");
    try {
      load(await data.starter(), `the starter program for ${data.name()}`);
    } catch (error) {
      console.error(error);
      showPlanMessage("error", `No starter program: ${errorText(error)}`);
    }
  };
  const update = (change) => {
    run = { ...run, ...change };
    showBlocked(blocked, run.level);
    replan();
  };
  // Another program (JSON text): a share link's; `name` says where it came from.
  const load = (program, name) => {
    run = { ...run, program, applied: [name] };
    editor?.setProgram(program, name);
    replan();
  };
  // The editor's program after its check: the program to run when `ok`, else `why` nothing runs.
  const edited = (program, ok, why) => {
    const was = blocked;
    blocked = ok ? "" : why;
    showBlocked(blocked, run.level);
    if (ok && !sameProgram(program, run.program)) {
      run = { ...run, program, applied: sameProgram(program, example) ? [] : [EDITED] }; // remedies included
    } else if (blocked === was) return;
    replan();
  };
  wirePlanControls({
    probed: kind === "webgpu",
    onCap: (text) => {
      const parsed = capFromText(text);
      showCapError(parsed.error ?? "");
      if (!parsed.error) update({ cap: parsed.cap });
    },
    onReset: () => {
      editor?.setProgram(example, "the page's example");
      update({ program: example, applied: [] });
    },
    onMeasure: async () => {
      // the plan shown is stale from the press on, not from when the worker has forgotten the answers
      showPlanMessage("planning", "Measuring the device again…");
      try {
        await forgetProbes(engine); // the next plan probes the device again
      } catch (error) {
        console.error(error);
        showPlanMessage("error", `Measuring again failed: ${errorText(error)}`);
        return;
      }
      replan();
    },
  });
  return {
    setLevel: (level) => update({ level }),
    setData: (choice) => update(choice),
    setDevice: (chosen) => update({ kind: chosen }),
    current: () => run,
    load,
    edited,
  };
}

// The graph editor in its card, once it has the engine's catalog; null (the card saying why) when it
// cannot start: the page then trains the example.
async function openEditor(engine, example, onProgram, onExample) {
  const root = document.getElementById("editor-root");
  document.getElementById("editor").hidden = false;
  try {
    return await mountEditor(root, { engine, example, onProgram, onExample });
  } catch (error) {
    console.error(error);
    root.textContent = `The editor could not start: ${errorText(error)}`;
    return null;
  }
}

// The editor, the train card with its memory plan panel and run panel, and the Runs history, once the
// example program is here; then, when the address carries a share link, its card.
// `choice`: the device the page trains on (devicechoice.js); the user may choose another in the train card.
async function showRun(session, choice) {
  // On WebGPU, the device begins making the example's first pipelines before anything else (seconds on a
  // software adapter), so that this overlaps with all that follows; the page waits only for them to be begun.
  if (choice.kind === "webgpu") await warmKernels(session.engine, choice.kind).catch((error) => console.warn(error));
  const example = await exampleProgram(session.engine);
  const { levels } = session.report;
  const kind = choice.kind;
  const guide = new Guide(session.engine, choice.device.features);
  guide.show(example, "");
  let controller = null; // set before the editor's first check answers (that waits for a timer)
  let data = null;
  // An example opened in the editor that reads a built-in data set (the analysis: the breast cancer data)
  // chooses it in the Data card; a simulation reads none, and the data chosen stays.
  const onExample = (opened) => {
    if (opened.source && data && data.source !== opened.source) data.select(opened.source);
  };
  const editor = await openEditor(session.engine, example, (...checked) => controller.edited(...checked), onExample);
  data = new DataCard(session.engine, (choice) => controller.setData(choice));
  data.wire();
  data.setDevice(choice.device);
  controller = runController(session.engine, kind, example, guide, editor, data);
  // A run of a built-in data set resumes on that data set, chosen in the Data card first; a run of the
  // user's own files needs them read again (RunControl.resumeFrom says so).
  const onResume = async (record, key) => {
    const source = data.builtinNamed(record.data?.name);
    if (source && source !== data.source) await data.select(source);
    return runs.resumeFrom(record, key);
  };
  const history = await RunsCard.open({ device: choice.device.name, onResume });
  StorageCheck.mount();
  const runs = new RunControl(session.engine, controller, history);
  runs.wire();
  // A way to fine-tune chosen in the Fine-tune card: its texts become the data, its program the page's.
  const finetune = new FineTuneCard(session.engine, {
    kind: () => controller.current().kind,
    onChoose: async ({ program, label, texts }) => {
      await data.useTexts(texts);
      controller.load(program, `fine-tuning: ${label}`);
      document.getElementById("train").scrollIntoView({ block: "start" });
    },
  });
  finetune.wire();
  // Another device chosen: kept for later visits; the plan, the Guide and the runs follow it.
  const onDevice = (chosen) => {
    if (!keepDevice(() => localStorage, chosen)) console.warn("the device choice could not be kept for later visits");
    const next = chooseDevice(session.report, chosen);
    showDeviceChoice(next);
    showDeviceBanner(session.report.selected, next);
    guide.features = next.device.features;
    history.device = next.device.name;
    data.setDevice(next.device);
    controller.setDevice(next.kind);
  };
  showTrainPanel(choice, levels, {
    onDevice,
    onLevel: controller.setLevel,
    onTrain: (level, epochs, seed) => runs.start({ ...controller.current(), level, epochs, seed }),
  });
  if (location.hash.includes("run=")) await new SharedRun(session.engine, controller, data, history).show();
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

boot(showStage)
  .then((session) => {
    const readyMs = performance.now(); // since navigation began
    window.scellis = { report: session.report, build: session.build, readyMs, stages: stagesSeen };
    if (SCELLIS_TEST_HOOKS) {
      // the test build's (build.py --test): Python run in the engine's worker (after opening WebGPU when
      // `kind` says), and a JS function's source called there with `arg` and the engine's host module
      window.scellis.python = (code, values = {}, kind = undefined) =>
        session.engine.call("python", code, values, kind);
      window.scellis.inWorker = (source, arg) => session.engine.call("script", source, arg);
    }
    window.scellis.charts = RunCharts; // bench/charts.py feeds the run panel's charts synthetic states
    const choice = chooseDevice(
      session.report,
      storedDevice(() => localStorage),
    );
    showReady(session, readyMs, choice);
    // The service worker keeps its copy of the build (every file fetched and checked again) once the page
    // is usable, not while it competes with the page's own start for the same cores.
    return showRun(session, choice).finally(() =>
      enableOffline(session.buildText)
        .catch((error) => `not available (${error.message})`)
        .then(showOffline),
    );
  })
  .catch((error) => {
    console.error(error);
    showError(error);
  });
