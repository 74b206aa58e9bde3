// The Runs history's logic without the DOM or IndexedDB: a run's record as it goes (settings, the epochs'
// metrics, its checkpoints by key, its end, its manifest), the newest-first order, the summary line of
// each run, and what deleting a run frees (checkpoint objects no other run refers to). Node runs it in
// tests/test_runsmodel_js.py.
//
// A record: {id, program (JSON text), name, data: {name, versions (null, or the manifest's data versions
// once there is one)}, level, seed (text), epochs, kind ("webgpu" or "cpu"), device (its name),
// resumedFrom (a key or null), started, ended (ms since the epoch, or null), status (one of STATUSES),
// error (text or null), step, total, rows: [{epoch, steps, train_loss, test, loss_scale?}],
// checkpoints: [{step, key, kind: "rule" | "saved" | "pinned"}], final (a key or null), manifest (text or
// null)}. "pinned": the state a manifest pinned (saved when the run paused or ended).

export const STATUSES = ["running", "paused", "done", "stopped by rule", "failed", "refused"];
export const SITE_DATA = "digits (this site)";
const KEY = /^sha256:[0-9a-f]{64}$/;
const KINDS = { rule: "loop program", saved: "saved from the page", pinned: "pinned by a manifest" };

export function programName(text) {
  try {
    const name = JSON.parse(text)?.name;
    if (typeof name === "string" && name) return name;
  } catch {
    // not JSON: named below
  }
  return "unnamed program";
}

// A new run's record: `settings` as RunControl.start has them ({program, kind, level, seed, epochs,
// resume, data?}); `device` the page's device name until the run's own state names it.
export function newRecord({ id, now, settings, device }) {
  const data = settings.data?.name ? { name: settings.data.name, versions: settings.data.versions ?? null } : null;
  return {
    id,
    program: settings.program,
    name: programName(settings.program),
    data: data ?? { name: SITE_DATA, versions: null },
    level: settings.level,
    seed: String(settings.seed),
    epochs: settings.epochs,
    kind: settings.kind,
    device,
    resumedFrom: settings.resume ?? null,
    started: now,
    ended: null,
    status: "running",
    error: null,
    step: 0,
    total: null,
    rows: [],
    checkpoints: [],
    final: null,
    manifest: null,
  };
}

function metricRow(row) {
  const out = { epoch: row.epoch, steps: row.steps, train_loss: row.train_loss, test: { ...row.test } };
  return row.loss_scale === undefined ? out : { ...out, loss_scale: row.loss_scale };
}

function withCheckpoints(checkpoints, found) {
  const known = new Set(checkpoints.map((c) => c.key));
  const added = [];
  for (const c of found) {
    if (known.has(c.key)) continue; // a key found again (the same state saved twice) keeps its first kind
    known.add(c.key);
    added.push(c);
  }
  return added.length ? [...checkpoints, ...added].sort((a, b) => a.step - b.step) : checkpoints;
}

// The record after the run panel's `state` (pagerun.PageRun.state): its finished epochs' rows and new
// checkpoints added. `changed` says whether it is worth a write (an epoch or a checkpoint: not a chunk).
export function withState(record, state) {
  const found = [
    ...state.checkpoints.map(({ step, key }) => ({ step, key, kind: "rule" })),
    ...state.saved.map(({ step, key }) => ({ step, key, kind: "saved" })),
  ];
  const checkpoints = withCheckpoints(record.checkpoints, found);
  const rows = state.epochs_done.length ? [...record.rows, ...state.epochs_done.map(metricRow)] : record.rows;
  const changed = checkpoints !== record.checkpoints || rows !== record.rows || record.total === null;
  const device = state.device ?? record.device;
  return { record: { ...record, rows, checkpoints, device, step: state.step, total: state.total }, changed };
}

// The record once the run paused, resumed running or ended (`status`), with `error` when it failed or was
// refused. A paused or running run has no end time.
export function withStatus(record, status, { now, error = null }) {
  if (!STATUSES.includes(status)) throw new Error(`not a run status: ${status}`);
  const ended = status === "running" || status === "paused" ? null : now;
  return { ...record, status, ended, error };
}

// The record with a manifest the engine gave (`out`: {manifest (JSON text), final, link}): the state it
// pinned is one of the run's checkpoints, its final key, and the data versions the run read.
export function withManifest(record, out) {
  const manifest = JSON.parse(out.manifest);
  const checkpoints = withCheckpoints(record.checkpoints, [{ step: manifest.steps, key: out.final, kind: "pinned" }]);
  const data = { ...record.data, versions: manifest.data };
  return { ...record, checkpoints, data, final: out.final, manifest: out.manifest, step: manifest.steps };
}

export function whyKept(kind) {
  return KINDS[kind] ?? kind;
}

// Every checkpoint object the record refers to: its checkpoints, its final key, the key it resumed from.
export function referencedKeys(record) {
  const keys = record.checkpoints.map((c) => c.key);
  if (record.final) keys.push(record.final);
  if (record.resumedFrom) keys.push(record.resumedFrom);
  return [...new Set(keys)].filter((key) => KEY.test(key));
}

// What deleting `record` does: `free`, the keys of its checkpoint objects that no other record refers to
// and that are stored (`stored`: a Set of the object store's keys); `kept`, those other runs still refer
// to, each with the runs' names; `gone`, those no longer stored.
export function deletionPlan(record, records, stored) {
  const others = records.filter((r) => r.id !== record.id);
  const plan = { free: [], kept: [], gone: [] };
  for (const key of referencedKeys(record)) {
    const users = others.filter((r) => referencedKeys(r).includes(key));
    if (users.length) plan.kept.push({ key, runs: users.map((r) => `${r.name} of ${formatWhen(r.started)}`) });
    else if (stored.has(key)) plan.free.push(key);
    else plan.gone.push(key);
  }
  return plan;
}

// The confirmation dialog's sentences for `plan` (deletionPlan's).
export function deletionText(record, plan) {
  const n = plan.free.length;
  const k = plan.kept.length;
  const lines = [`The record of the run of ${record.name} started ${formatWhen(record.started)} will be deleted.`];
  const objects = `${n} checkpoint object${n === 1 ? "" : "s"}`;
  lines.push(n ? `${objects} no other run refers to will be deleted:` : "No checkpoint object will be deleted.");
  const them = k === 1 ? "1 checkpoint object is kept: other runs refer to it." : "";
  const kept = k > 1 ? `${k} checkpoint objects are kept: other runs refer to them.` : them;
  const g = plan.gone.length;
  const gone = g ? `${g} of its checkpoint objects ${g === 1 ? "is" : "are"} no longer stored.` : "";
  return { lines, kept, gone };
}

// Records newest first (by start time, then id).
export function sortedRuns(records) {
  return [...records].sort((a, b) => b.started - a.started || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
}

// The status shown: a record left "running" or "paused" by a page that is gone is "interrupted" (its
// newest checkpoint, if any, still resumes). `live`: the id of the run this page has open.
export function shownStatus(record, live) {
  const open = record.status === "running" || record.status === "paused";
  return open && record.id !== live ? "interrupted" : record.status;
}

// A held-out metric as the page shows it: an accuracy as a percentage.
export function metricValue(name, value) {
  if (typeof value !== "number") return String(value);
  return name.includes("accuracy") ? `${(value * 100).toFixed(1)} %` : value.toPrecision(4);
}

// The run's headline metric over its epochs: its first program metric (higher is better), else the
// held-out loss (lower is better); its last and best value and the epoch of the best. Null before any
// epoch has finished.
export function headline(record) {
  if (!record.rows.length) return null;
  const names = Object.keys(record.rows[0].test);
  const name = names.filter((n) => n.startsWith("metric/")).sort()[0] ?? "loss";
  const higher = name !== "loss";
  let best = null;
  for (const row of record.rows) {
    const value = row.test[name];
    if (typeof value !== "number") continue;
    if (best === null || (higher ? value > best.value : value < best.value)) best = { value, epoch: row.epoch };
  }
  const last = record.rows[record.rows.length - 1];
  const label = name.replace(/^metric\//, "");
  const text = `${label} ${metricValue(name, last.test[name])}`;
  const differs = best && best.epoch !== last.epoch;
  return { name, label, text: differs ? `${text} (best ${metricValue(name, best.value)}, epoch ${best.epoch})` : text };
}

const pad = (n) => String(n).padStart(2, "0");

// A start time: how long ago when within a day of `now`, else the local date and time.
export function formatWhen(ms, now = null) {
  const ago = now === null ? Infinity : (now - ms) / 1000;
  if (ago >= 0 && ago < 60) return "just now";
  if (ago >= 0 && ago < 3600) return `${Math.floor(ago / 60)} min ago`;
  if (ago >= 0 && ago < 86400) return `${Math.floor(ago / 3600)} h ago`;
  const d = new Date(ms);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

// The device a run ran on (the CPU path's name says that it is the CPU path).
export function deviceText(record) {
  return record.kind === "cpu" ? record.device : `WebGPU: ${record.device}`;
}

// The cells of the run's row in the Runs table.
export function summaryCells(record, { now, live }) {
  return {
    program: record.name,
    data: record.data.name,
    level: record.level,
    device: deviceText(record),
    status: shownStatus(record, live),
    metric: headline(record)?.text ?? "—",
    when: formatWhen(record.started, now),
  };
}

// Whether the data a run read (`recorded`, a record's `data`) is the data `page` ({name, versions}) the
// page has chosen: by content hash, split by split, where both have versions; else by name.
export function sameData(recorded, page) {
  const ours = recorded.versions ?? [];
  const theirs = page.versions ?? [];
  if (!ours.length || !theirs.length) return recorded.name === page.name;
  const hashes = new Map(ours.map((v) => [v.split, v.sha256]));
  return theirs.length === ours.length && theirs.every((v) => hashes.get(v.split) === v.sha256);
}

// The settings a resume from one of the record's checkpoints runs with (RunControl.resume).
export function resumeSettings(record) {
  return { program: record.program, level: record.level, seed: record.seed, epochs: record.epochs };
}

// A record as IndexedDB gave it back, checked enough for the card to show it (null when it cannot be).
export function readRecord(value) {
  const ok =
    value &&
    typeof value.id === "string" &&
    typeof value.program === "string" &&
    typeof value.started === "number" &&
    STATUSES.includes(value.status) &&
    Array.isArray(value.rows) &&
    Array.isArray(value.checkpoints) &&
    value.data &&
    typeof value.data.name === "string";
  return ok ? value : null;
}
