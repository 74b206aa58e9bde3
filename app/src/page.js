// DOM rendering of the start-up state and of training (the memory plan panel's is planpanel.js).

import { deviceLine } from "./devicechoice.js";
import { deviceFacts, engineFacts, errorText, formatBytes } from "./format.js";
import { resultRows } from "./runmodel.js";
import { parseKeep } from "./runsmodel.js";

const STAGES = 4;

function fillFacts(list, facts, replace = true) {
  if (replace) list.replaceChildren();
  for (const [label, value] of facts) {
    const dt = document.createElement("dt");
    dt.textContent = label;
    const dd = document.createElement("dd");
    dd.textContent = value;
    list.append(dt, dd);
  }
}

// Every stage shown, in order, with the time it began (ms since navigation): the start-up
// sequence stays inspectable, and the benchmark reads where the time goes.
export const stagesSeen = [];

export function showStage(index, label) {
  stagesSeen.push({ label, atMs: performance.now() });
  document.getElementById("progress").value = index;
  document.getElementById("progress-text").textContent = `${label} (${index + 1}/${STAGES})`;
}

export function showReady({ build, report }, readyMs, choice) {
  document.getElementById("loading").hidden = true;
  document.getElementById("device-line").textContent = choice.why;
  fillFacts(document.getElementById("device-facts"), deviceFacts(choice.device));
  fillFacts(document.getElementById("engine-facts"), engineFacts(report, build, readyMs));
  document.getElementById("device").hidden = false;
  document.getElementById("engine").hidden = false;
  showDeviceBanner(choice);
  document.body.dataset.device = choice.kind;
  document.body.dataset.state = build.engine_version === report.engine_version ? "ready" : "error";
}

// On the CPU path, a banner says why (no GPU, a software adapter, or the user's choice) and what it costs.
export function showDeviceBanner(choice) {
  const banner = document.getElementById("banner");
  banner.hidden = choice.kind !== "cpu";
  if (banner.hidden) return;
  banner.textContent = `CPU path (WebAssembly) — ${choice.why}. `;
  const link = document.createElement("a");
  link.href = "limits.html#cpu-path";
  link.textContent = "What this means: Honest limits";
  banner.append(link);
}

// The level has no default: planning and training start only once one is chosen, and its promise is
// shown. `onLevel(level)` runs on each choice; `onTrain(level, epochs)` on the button.
export function showTrainPanel(choice, promises, { onLevel, onTrain, onDevice }) {
  const section = document.getElementById("train");
  const level = document.getElementById("train-level");
  level.onchange = () => {
    const promise = document.getElementById("level-promise");
    const link = document.createElement("a");
    link.href = `correctness.html#level-${level.value}`;
    link.textContent = "how it is checked, and what was measured";
    promise.replaceChildren(`${promises[level.value]} `, link);
    document.getElementById("train-button").disabled = false;
    onLevel(level.value);
  };
  showDeviceChoice(choice);
  const devices = document.getElementById("train-device-choice");
  devices.replaceChildren(
    ...choice.options.map(({ kind, label }) => new Option(label, kind, false, kind === choice.kind)),
  );
  devices.onchange = () => onDevice(devices.value);
  const button = document.getElementById("train-button");
  button.onclick = () => {
    const epochs = document.getElementById("train-epochs");
    const seed = document.getElementById("train-seed");
    if (!epochs.checkValidity() || epochs.value === "") {
      document.getElementById("train-status").textContent = "epochs: a whole number from 1 to 1000";
      return;
    }
    if (!seed.checkValidity() || seed.value === "" || BigInt(seed.value) >= 2n ** 64n) {
      document.getElementById("train-status").textContent = "seed: a whole number from 0 to 18446744073709551615";
      return;
    }
    const keep = keepSetting();
    if (keep.error) {
      document.getElementById("train-status").textContent = keep.error;
      return;
    }
    showTrainStarting(level.value, `${doing()} at level ${level.value}…`);
    onTrain(level.value, Number(epochs.value), seed.value);
  };
  section.hidden = false;
}

// The device the page trains on, and why.
export function showDeviceChoice(choice) {
  document.getElementById("train-device").textContent = deviceLine(choice);
  document.getElementById("train-device-why").textContent = choice.why;
  document.getElementById("train-device-choice").value = choice.kind;
  document.body.dataset.device = choice.kind;
}

// The run's settings as a share link or the last run's record gives them; the level's change event
// fires, so its promise and plan are shown. A record's keep count goes into its field (where it has one).
export function setRunSettings({ level, seed, epochs, keep }) {
  const select = document.getElementById("train-level");
  select.value = level;
  select.dispatchEvent(new Event("change"));
  document.getElementById("train-seed").value = String(seed);
  document.getElementById("train-epochs").value = String(epochs);
  if (keep !== undefined && keep !== null) document.getElementById("train-keep").value = String(keep);
}

// The train card's "Keep the last N checkpoints": {keep} (a whole number from 1, or "all") or {error}.
export function keepSetting() {
  return parseKeep(document.getElementById("train-keep").value);
}

// The run's settings are locked while it trains (or resumes), and the page says what it is doing.
export function showTrainStarting(level, status) {
  const section = document.getElementById("train");
  document.getElementById("train-setup").disabled = true;
  section.dataset.state = "running";
  section.dataset.level = level;
  document.getElementById("train-memory").textContent = "";
  document.getElementById("train-status").textContent = status;
}

// Paused: the settings stay locked (the run goes on from here), the status says where it stands.
export function showTrainPaused(step) {
  document.getElementById("train").dataset.state = "paused";
  document.getElementById("train-status").textContent = `paused after step ${step}`;
}

export function showEpoch(row) {
  const tr = document.createElement("tr");
  const held = row.test["metric/accuracy"]; // a regression has none
  const accuracy = held === undefined ? "—" : `${(held * 100).toFixed(1)} %`;
  // fast scales its loss dynamically (levels.PROMISES); the other levels have no scale to show
  const scale = row.loss_scale === undefined ? "—" : `2^${Math.log2(row.loss_scale)}`;
  const loss = (value) => (typeof value === "number" ? value.toFixed(4) : "—"); // a simulation has none
  const cells = [row.epoch, row.steps, loss(row.train_loss), loss(row.test.loss), accuracy, scale];
  for (const value of cells) {
    const td = document.createElement("td");
    td.textContent = value;
    tr.append(td);
  }
  document.querySelector("#train-log tbody").append(tr);
  const memory = `Memory: ${formatBytes(row.memory.bytes)} on the device, verdict ${row.memory.verdict}`;
  document.getElementById("train-memory").textContent = `${memory}: ${row.memory.reasons.join("; ")}`;
  const notes = document.getElementById("train-notes");
  notes.textContent = row.notes.join(" ");
  notes.hidden = row.notes.length === 0;
  if (row.trains === false) {
    showResults(row.test);
    document.getElementById("train-status").textContent = `epoch ${row.epoch}: ${resultSummary(row.test)}`;
    return;
  }
  const score = held === undefined ? `test loss ${row.test.loss.toFixed(4)}` : `test accuracy ${accuracy}`;
  document.getElementById("train-status").textContent = `epoch ${row.epoch}: ${score}`;
}

// The results of a program without a loss (a simulation, an analysis), as of its latest epoch.
export function showResults(metrics) {
  const list = document.getElementById("run-results");
  list.replaceChildren();
  for (const { name, text } of resultRows(metrics)) {
    const term = document.createElement("dt");
    term.textContent = name;
    const value = document.createElement("dd");
    value.textContent = text;
    list.append(term, value);
  }
  document.getElementById("run-results-box").hidden = list.childElementCount === 0;
}

const resultSummary = (metrics) => {
  const rows = resultRows(metrics);
  const first = rows.slice(0, 2).map(({ name, text }) => `${name} ${text}`);
  return `results: ${first.join("; ")}${rows.length > 2 ? `; ${rows.length - 2} more below` : ""}`;
};

// The train card for a program: its loop's epochs (a simulation's time depends on them), and its words
// (a program without a loss runs: it has results, no training).
export function showProgramKind(trains, epochs) {
  document.getElementById("train-button").textContent = trains ? "Train" : "Run";
  document.getElementById("train").dataset.trains = trains ? "yes" : "no";
  if (Number.isInteger(epochs)) document.getElementById("train-epochs").value = String(epochs);
}

// "training" or "running", as the program in the train card does.
export const doing = () => (document.getElementById("train").dataset.trains === "no" ? "running" : "training");

// The run's end: `last` is its last finished epoch's row (null when it ended before finishing one).
export function showTrainDone(last, error, state = null) {
  const section = document.getElementById("train");
  section.dataset.state = error ? "error" : "done";
  const accuracy = last?.test["metric/accuracy"];
  if (!error && accuracy !== undefined) section.dataset.accuracy = String(accuracy);
  const how = state?.stopped ? "stopped by a rule" : "done";
  const score =
    last?.trains === false
      ? resultSummary(last.test)
      : accuracy === undefined
        ? `test loss ${last?.test.loss.toFixed(4)}`
        : `test accuracy ${(accuracy * 100).toFixed(1)} %`;
  document.getElementById("train-status").textContent = error
    ? `${doing()} failed: ${errorText(error)}`
    : last
      ? `${how}: ${score} after ${last.steps} steps, level ${last.level}`
      : `${how} after ${state?.step ?? 0} steps`;
  document.getElementById("train-setup").disabled = false;
}

// A red memory plan: the engine refused the run before anything reached the device; its reasons.
export function showTrainRefused(refused) {
  const section = document.getElementById("train");
  section.dataset.state = "refused";
  document.getElementById("train-status").textContent = `refused: ${refused.refused}`;
  const memory = refused.memory;
  document.getElementById("train-memory").textContent =
    `Memory: ${formatBytes(memory.bytes)} planned, verdict ${memory.verdict}`;
  document.getElementById("train-setup").disabled = false;
}

export function showOffline(status) {
  const list = document.getElementById("engine-facts");
  fillFacts(list, [["Offline use", status]], false);
  document.body.dataset.offline = status.startsWith("available") ? "yes" : "no";
}

export function showError(error) {
  document.getElementById("loading").hidden = true;
  const box = document.getElementById("error");
  box.textContent = `Scellis could not start: ${error?.message ? error.message : error}`;
  box.hidden = false;
  document.body.dataset.state = "error";
}
