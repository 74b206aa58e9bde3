// DOM rendering of the run panel (progress, live charts, controls, decision log, checkpoints, the pinned run's
// manifest and share link, resume from a key) and of a shared run's card (what the link carries, the data
// it asks for, the re-run's progress and its verdict). The logic is runmodel.js's; main.js wires them.

import { RunCharts } from "./charts.js";
import { byId, element } from "./dom.js";
import { errorText } from "./format.js";
import { controls, figures } from "./runmodel.js";
import { keepRule } from "./runsmodel.js";

let charts = null; // the panel's loss and metric charts, made when the controls are wired

// A checkpoint's line; `gone` (text, or null) says why its object is no longer stored (data-gone).
function keyItem(step, key, why, gone = null) {
  const item = element("li", `step ${step}: `);
  item.append(element("code", key), why ? ` (${why})` : "");
  item.dataset.key = key;
  if (gone) {
    item.dataset.gone = "true";
    item.append(`: ${gone}`);
  }
  return item;
}

export function showRunStart({ where, level, seed, resume }) {
  const panel = byId("run");
  panel.hidden = false;
  const from = resume ? `, resumed from ${resume}` : "";
  byId("run-line").textContent = `${where}, level ${level}, seed ${seed}${from}`;
  byId("run-progress").value = 0;
  byId("run-figures").textContent = "starting…";
  panel.dataset.stepsPerS = "";
  panel.dataset.etaS = "";
  byId("run-events").replaceChildren();
  byId("run-checkpoints").replaceChildren();
  byId("run-pinned-status").textContent = "";
  byId("run-link-box").hidden = true;
  document.querySelector("#train-log tbody").replaceChildren();
  charts ??= new RunCharts(byId("run-charts"));
  charts.start();
}

export function showRunState(state) {
  const panel = byId("run");
  panel.dataset.step = String(state.step);
  // the figures as numbers, for what reads them without parsing words ("" until measured)
  panel.dataset.stepsPerS = state.steps_per_s === null ? "" : String(state.steps_per_s);
  panel.dataset.etaS = state.eta_s === null ? "" : String(state.eta_s);
  byId("run-progress").max = Math.max(state.total, 1);
  byId("run-progress").value = state.step;
  byId("run-figures").textContent = figures(state);
  byId("run-events").replaceChildren(...state.events.map((text) => element("li", text)));
  const retired = new Set(state.retired ?? []);
  const gone = (key) => (retired.has(key) ? keepRule(state.keep) : null);
  const written = state.checkpoints.map(({ step, key }) => keyItem(step, key, "loop program", gone(key)));
  const saved = state.saved.map(({ step, key }) => keyItem(step, key, "saved from the page", gone(key)));
  byId("run-checkpoints").replaceChildren(...written, ...saved);
  charts?.feed(state);
}

export function setRunPhase(phase) {
  byId("run").dataset.phase = phase;
  if (phase === "done" || phase === "failed") charts?.finish(); // drawn before the page says it ended
  const allowed = controls(phase);
  byId("run-pause").disabled = !allowed.pause;
  byId("run-step").disabled = !allowed.step;
  byId("run-continue").disabled = !allowed.continue;
  byId("run-save").disabled = !allowed.save;
  byId("run-manifest").disabled = !allowed.pinned;
  byId("run-link").disabled = !allowed.pinned;
  byId("run-weights").disabled = !allowed.pinned;
  byId("run-export-adapter").disabled = !allowed.pinned;
  byId("run-export-model").disabled = !allowed.pinned;
  byId("run-export-torch").disabled = !allowed.pinned;
  byId("resume-button").disabled = !allowed.resume;
}

// The fine-tuning exports, offered for a program that starts from a pretrained model (the adapter only
// when it has LoRA adapters); the PyTorch export for every program.
export function showExports(pretrained, adapters) {
  byId("run-export-adapter").hidden = !(pretrained && adapters);
  byId("run-export-model").hidden = !pretrained;
  byId("run-export-torch").hidden = false;
}

export function showPinnedStatus(text) {
  byId("run-pinned-status").textContent = text;
}

export function showLink(link) {
  byId("run-link-text").value = link;
  byId("run-link-box").hidden = false;
}

export function wireRunControls(handlers) {
  charts ??= new RunCharts(byId("run-charts")); // made with the page, so its code is warm before a run
  for (const [id, handler] of Object.entries({
    "run-pause": handlers.onPause,
    "run-step": handlers.onStep,
    "run-continue": handlers.onContinue,
    "run-save": handlers.onSave,
    "run-manifest": handlers.onManifest,
    "run-link": handlers.onLink,
    "run-weights": handlers.onWeights,
    "run-export-adapter": () => handlers.onExport("adapter"),
    "run-export-model": () => handlers.onExport("model"),
    "run-export-torch": () => handlers.onExport("torch"),
  })) {
    byId(id).onclick = handler;
  }
}

// The last run's newest checkpoint (runmodel.lastRun's record, or null) in the resume form.
export function showLastKey(last) {
  if (last) {
    byId("resume-key").value = last.key;
    byId("resume-help").textContent =
      `the last run's newest checkpoint (step ${last.step}, level ${last.level}); or paste any checkpoint key`;
  } else {
    byId("resume-help").textContent = "a checkpoint's key, as the run panel lists it";
  }
}

// The resume form; `onResume(text)` on submit. `last` (runmodel.lastRun) prefills the key.
// The resume form: a key to resume from (`onResume(text)`), or a train.py checkpoint file to take back
// first (`onImport(file)`, which fills the key in).
export function wireResume(onResume, last, onImport) {
  const form = byId("resume-form");
  showLastKey(last);
  form.onsubmit = (event) => {
    event.preventDefault();
    onResume(byId("resume-key").value);
  };
  const file = byId("resume-torch");
  file.onchange = () => {
    const chosen = file.files?.[0];
    file.value = "";
    if (chosen) onImport(chosen);
  };
}

// What taking back a train.py checkpoint did: `imported` ({key, level, seed, step, by}) into the form, or
// `error`; the form says which (data-imported: the key, or "failed").
export function showImported({ imported = null, error = null }) {
  const form = byId("resume-form");
  if (imported) {
    byId("resume-key").value = imported.key;
    byId("resume-torch-status").textContent =
      `took back step ${imported.step} of ${imported.by} as ${imported.key}: Resume goes on from it at level ${imported.level}`;
    showResumeError("");
  } else {
    byId("resume-torch-status").textContent = "";
    showResumeError(`Cannot take back that checkpoint: ${error}`);
  }
  form.dataset.imported = imported ? imported.key : "failed";
}

export function showResumeError(text) {
  const box = byId("resume-error");
  box.textContent = text;
  box.hidden = !text;
}

// Starts a download of `content` (text, or bytes) as the file `name`.
export function download(name, content, type = "application/json") {
  const url = URL.createObjectURL(new Blob([content], { type }));
  const link = element("a", undefined, { href: url, download: name });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

// A shared run's card: what the link carries.
export function showShared(shown) {
  const card = byId("shared");
  card.hidden = false;
  card.dataset.state = "asking";
  const s = shown.settings;
  const ran = shown.ran_on;
  const readsData = s.data.length > 0;
  let summary = `This link shares ${shown.name} with its settings; it has not been run, so there is nothing to compare with.`;
  if (ran && readsData) {
    summary = `This link pins a run of ${shown.name}. Give it the data, and the page re-runs it and compares the result with the pinned final checkpoint.`;
  } else if (ran) {
    summary = `This link pins a run of ${shown.name}, which reads no data. Re-run it, and the page compares the result with the pinned final checkpoint.`;
  }
  byId("shared-summary").textContent = summary;
  const facts = [
    ["Program", shown.name],
    ["Determinism level", s.level],
    ["Seed", String(s.seed)],
    ["Device kind", s.device === "cpu" ? "CPU path (WebAssembly)" : "WebGPU"],
    ["Epochs", String(s.epochs)],
  ];
  if (s.steps !== null) facts.push(["Steps", String(s.steps)]);
  for (const v of s.data)
    facts.push([`Data, ${v.split}`, `${v.sha256} (${v.examples} examples of shape [${v.shape}])`]);
  if (ran) facts.push(["Ran on", ran.device], ["Engine", ran.engine_version], ["Final checkpoint", s.final]);
  const list = byId("shared-facts");
  list.replaceChildren();
  for (const [label, value] of facts) list.append(element("dt", label), element("dd", value));
  byId("shared-data").hidden = !(ran && readsData);
  byId("shared-no-data").hidden = !(ran && !readsData);
}

export function wireShared({ onSiteData, onChosenData, onFiles, onRerun }) {
  byId("shared-rerun").onclick = onRerun;
  byId("shared-site-data").onclick = onSiteData;
  byId("shared-chosen-data").onclick = onChosenData;
  byId("shared-files").onchange = (event) => onFiles([...event.target.files]);
}

export function showSharedBusy(busy) {
  for (const id of ["shared-site-data", "shared-chosen-data", "shared-files", "shared-rerun"]) byId(id).disabled = busy;
}

export function showSharedStatus(text) {
  byId("shared-status").textContent = text;
}

export function showSharedState(state) {
  byId("shared").dataset.state = "running";
  byId("shared-progress").max = Math.max(state.total, 1);
  byId("shared-progress").value = state.step;
  byId("shared-figures").textContent = figures(state);
}

export function showSharedVerdict(verdict) {
  const word = verdict.lines.find((line) => !line.startsWith("note:")) ?? "";
  const state = verdict.verified ? "verified" : word.startsWith("MISMATCH") ? "mismatch" : "different";
  byId("shared").dataset.state = state;
  const box = byId("shared-verdict");
  box.textContent = verdict.lines.join("\n");
  box.hidden = false;
}

export function showSharedError(error, prefix = "") {
  const box = byId("shared-error");
  byId("shared").hidden = false;
  byId("shared").dataset.state = "error";
  box.textContent = `${prefix}${typeof error === "string" ? error : errorText(error)}`;
  box.hidden = false;
}

export function clearSharedError() {
  byId("shared-error").hidden = true;
}
