// The Runs history's logic without the DOM or IndexedDB: a run's record as it goes (settings, the epochs'
// metrics, its checkpoints by key, its end, its manifest), the newest-first order, the summary line of
// each run, what deleting a run frees (checkpoint objects no other run refers to), and a stored record
// checked field by field before anything reads it. Node runs it in tests/js/runsmodel.test.js.
//
// A record (format FORMAT): {format, id, program (JSON text), name, data: {name, versions (null, or the
// manifest's data versions once there is one)}, level, seed (text), epochs, kind ("webgpu" or "cpu"),
// device (its name), resumedFrom (a key or null), started, ended (ms since the epoch, or null), status
// (one of STATUSES), error (text or null), step, total, rows: [{epoch, steps, train_loss, test,
// loss_scale?}], checkpoints: [{step, key, kind: "rule" | "saved" | "pinned", gone?: true once the
// retention rule deleted its object}], keep? (how many of the last rule checkpoints the run keeps: a whole
// number from 1, "all", or null for a re-run, whose link decides; older records lack it), final (a key or null),
// manifest (text or null), rerunOf (for a share link's re-run, the final key the link pins; else null),
// verdict (a re-run's comparison with the link, text, or null)}. "pinned": the state a manifest pinned
// (saved when the run paused or ended), or a re-run's final state. A record without `format` is one
// written before records carried it, read as that shape (no rerunOf, no verdict).

import { formatBytes } from "./format.js";

export const FORMAT = 1;
export const STATUSES = ["running", "paused", "done", "stopped by rule", "stopped", "failed", "refused"];
export const SITE_DATA = "digits (this site)";
const KEY = /^sha256:[0-9a-f]{64}$/;
const KINDS = { rule: "loop program", saved: "saved from the page", pinned: "pinned by a manifest" };
export const KEEP = 3; // the rule checkpoints a run keeps unless the train card says otherwise (retention.KEEP)
const MOST_KEEP = 1_000_000; // a larger count is "all"

// The train card's "Keep the last N checkpoints" field: {keep} (a whole number from 1, or "all"), or
// {error} naming the field and what it takes.
export function parseKeep(text) {
  const value = String(text ?? "").trim();
  if (value.toLowerCase() === "all") return { keep: "all" };
  const n = /^[0-9]{1,7}$/.test(value) ? Number(value) : NaN;
  if (n >= 1 && n <= MOST_KEEP) return { keep: n };
  const found = value ? `"${clip(value, 40)}"` : "nothing";
  return {
    error: `keep the last checkpoints: a whole number from 1 to ${MOST_KEEP.toLocaleString("en")}, or all (found ${found})`,
  };
}

// What the retention rule keeps (`keep`: its count), in words: why a checkpoint of the run was deleted.
export function keepRule(keep) {
  if (!Number.isInteger(keep)) return "deleted by a retention rule: no longer stored";
  const last = keep === 1 ? "its last checkpoint" : `its last ${keep} checkpoints`;
  return `deleted by the retention rule: the run keeps ${last} and its best`;
}

// `text` cut to at most `most` characters (an ellipsis at the end says so).
export function clip(text, most) {
  const whole = String(text);
  return whole.length > most ? `${whole.slice(0, most - 1)}…` : whole;
}

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
  const named = settings.data?.name;
  const data = named ? { name: clip(named, LIMITS.name), versions: settings.data.versions ?? null } : null;
  return {
    format: FORMAT,
    id,
    program: settings.program,
    name: clip(programName(settings.program), LIMITS.name),
    data: data ?? { name: SITE_DATA, versions: null },
    level: settings.level,
    seed: String(settings.seed),
    epochs: settings.epochs,
    kind: settings.kind,
    device: clip(device, LIMITS.text),
    resumedFrom: settings.resume ?? null,
    keep: settings.rerunOf ? null : (settings.keep ?? KEEP),
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
    rerunOf: settings.rerunOf ?? null,
    verdict: null,
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

// `checkpoints` with those whose key is in `retired` marked gone (by key: a state saved from the page
// under the same key is the same object, gone with it); the same list when nothing changes.
function withGone(checkpoints, retired) {
  const gone = new Set(retired);
  if (!checkpoints.some((c) => gone.has(c.key) && !c.gone)) return checkpoints;
  return checkpoints.map((c) => (gone.has(c.key) && !c.gone ? { ...c, gone: true } : c));
}

// The record after the run panel's `state` (pagerun.PageRun.state): its finished epochs' rows and new
// checkpoints added, and those the retention rule deleted (`state.retired`) marked gone. `changed` says
// whether it is worth a write (an epoch, a checkpoint or a deletion: not a chunk).
export function withState(record, state) {
  const found = [
    ...state.checkpoints.map(({ step, key }) => ({ step, key, kind: "rule" })),
    ...state.saved.map(({ step, key }) => ({ step, key, kind: "saved" })),
  ];
  const checkpoints = withGone(withCheckpoints(record.checkpoints, found), state.retired ?? []);
  const done = state.epochs_done.map(metricRow);
  const rows = done.length ? [...record.rows, ...done].slice(-LIMITS.rows) : record.rows; // the newest kept
  const changed = checkpoints !== record.checkpoints || rows !== record.rows || record.total === null;
  const device = clip(state.device ?? record.device, LIMITS.text);
  return { record: { ...record, rows, checkpoints, device, step: state.step, total: state.total }, changed };
}

// The record once the run paused, resumed running or ended (`status`), with `error` when it failed or was
// refused. A paused or running run has no end time.
export function withStatus(record, status, { now, error = null }) {
  if (!STATUSES.includes(status)) throw new Error(`not a run status: ${status}`);
  const ended = status === "running" || status === "paused" ? null : now;
  return { ...record, status, ended, error: error === null ? null : clip(error, LIMITS.text) };
}

// The record with a manifest the engine gave (`out`: {manifest (JSON text), final, link}): the state it
// pinned is one of the run's checkpoints, its final key, and the data versions the run read.
export function withManifest(record, out) {
  const manifest = JSON.parse(out.manifest);
  const checkpoints = withCheckpoints(record.checkpoints, [{ step: manifest.steps, key: out.final, kind: "pinned" }]);
  const data = { ...record.data, versions: manifest.data };
  return { ...record, checkpoints, data, final: out.final, manifest: out.manifest, step: manifest.steps };
}

// A re-run's record once it is compared with the link (`verdict`: {verified, final, lines}): the final state
// it saved is one of its checkpoints, and the comparison is kept as text.
export function withVerdict(record, verdict) {
  const checkpoints = withCheckpoints(record.checkpoints, [{ step: record.step, key: verdict.final, kind: "pinned" }]);
  return { ...record, checkpoints, final: verdict.final, verdict: verdict.lines.join("\n") };
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
// newest checkpoint, if any, still resumes). `live`: the id of the run this page has open, or a Set of
// the ids of those it has open (a run it trains, and a share link's re-run).
export function shownStatus(record, live) {
  const open = record.status === "running" || record.status === "paused";
  const isLive = live instanceof Set ? live.has(record.id) : record.id === live;
  return open && !isLive ? "interrupted" : record.status;
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
// The record's keep count goes with them where it has one (else the train card's field decides).
export function resumeSettings(record) {
  const settings = { program: record.program, level: record.level, seed: record.seed, epochs: record.epochs };
  return record.keep === undefined || record.keep === null ? settings : { ...settings, keep: record.keep };
}

// Bounds on what a record may hold: a record beyond them is damaged, not shown (a page never writes one).
export const LIMITS = {
  id: 200, // characters
  name: 1000,
  text: 4000, // the device's name, an error, a data version's fields, a metric's name
  program: 16 * 1024 * 1024, // the program's JSON text
  manifest: 64 * 1024 * 1024,
  rows: 100_000,
  checkpoints: 1_000_000,
  metrics: 1000, // metrics in one row
};
const LEVELS = ["debug", "prod", "fast"];
const DEVICE_KINDS = ["webgpu", "cpu"];
const MOST_PROBLEMS = 8; // a damaged record names at most these many problems

// What `value` is, in a few words, for a problem's text.
function kindOf(value) {
  if (value === undefined) return "nothing (the field is missing)";
  if (value === null) return "null";
  if (Array.isArray(value)) return "a list";
  if (typeof value === "string") return `text of ${value.length.toLocaleString("en")} characters`;
  if (typeof value === "number") return Number.isFinite(value) ? `the number ${value}` : String(value);
  return typeof value === "object" ? "an object" : `a ${typeof value}`;
}

const isObject = (value) => value !== null && typeof value === "object" && !Array.isArray(value);
const isCount = (value) => Number.isSafeInteger(value) && value >= 0;
const isTime = (value) => typeof value === "number" && Number.isFinite(value);
const isMetric = (value) =>
  (typeof value === "number" && Number.isFinite(value)) || ["nan", "inf", "-inf"].includes(value);

// A checker of one record: `problems` gathers "path: what is wrong" lines.
class Checker {
  constructor() {
    this.problems = [];
  }

  fail(path, what) {
    this.problems.push(`${path}: ${what}`);
    return false;
  }

  text(path, value, most, { empty = false } = {}) {
    if (typeof value !== "string") return this.fail(path, `expected text, found ${kindOf(value)}`);
    if (value.length > most)
      return this.fail(path, `${kindOf(value)}, more than the ${most.toLocaleString("en")} allowed`);
    if (!empty && !value) return this.fail(path, "empty");
    return true;
  }

  oneOf(path, value, allowed) {
    return allowed.includes(value) || this.fail(path, `${kindOf(value)} is not one of ${allowed.join(", ")}`);
  }

  count(path, value) {
    return isCount(value) || this.fail(path, `expected a whole number from 0, found ${kindOf(value)}`);
  }

  metric(path, value) {
    return isMetric(value) || this.fail(path, `expected a number, found ${kindOf(value)}`);
  }

  time(path, value) {
    return isTime(value) || this.fail(path, `expected a time (milliseconds), found ${kindOf(value)}`);
  }

  key(path, value) {
    return (typeof value === "string" && KEY.test(value)) || this.fail(path, `not a checkpoint key (${kindOf(value)})`);
  }

  list(path, value, most) {
    if (!Array.isArray(value)) return this.fail(path, `expected a list, found ${kindOf(value)}`);
    if (value.length > most) return this.fail(path, `${value.length} entries, more than the ${most} allowed`);
    return true;
  }

  object(path, value) {
    return isObject(value) || this.fail(path, `expected an object, found ${kindOf(value)}`);
  }

  nullable(path, value, check) {
    return value === null || check(path, value);
  }
}

function checkData(c, data) {
  if (!c.object("data", data)) return;
  c.text("data.name", data.name, LIMITS.name);
  if (data.versions === null || !c.list("data.versions", data.versions, 16)) return;
  data.versions.forEach((v, i) => {
    const at = `data.versions[${i}]`;
    if (!c.object(at, v)) return;
    c.text(`${at}.split`, v.split, LIMITS.text);
    c.text(`${at}.sha256`, v.sha256, LIMITS.text);
    c.count(`${at}.examples`, v.examples);
  });
}

function checkRows(c, rows) {
  if (!c.list("rows", rows, LIMITS.rows)) return;
  for (const [i, row] of rows.entries()) {
    const at = `rows[${i}]`;
    if (!c.object(at, row)) continue;
    c.count(`${at}.epoch`, row.epoch);
    c.count(`${at}.steps`, row.steps);
    c.metric(`${at}.train_loss`, row.train_loss);
    if (row.loss_scale !== undefined) c.metric(`${at}.loss_scale`, row.loss_scale);
    if (!c.object(`${at}.test`, row.test)) continue;
    const names = Object.keys(row.test);
    if (names.length > LIMITS.metrics)
      c.fail(`${at}.test`, `${names.length} metrics, more than the ${LIMITS.metrics} allowed`);
    for (const name of names.slice(0, LIMITS.metrics)) {
      if (name.length > LIMITS.text) c.fail(`${at}.test`, `a metric's name of ${name.length} characters`);
      else c.metric(`${at}.test["${name}"]`, row.test[name]);
    }
    if (c.problems.length >= MOST_PROBLEMS) return;
  }
}

function checkCheckpoints(c, checkpoints) {
  if (!c.list("checkpoints", checkpoints, LIMITS.checkpoints)) return;
  for (const [i, checkpoint] of checkpoints.entries()) {
    const at = `checkpoints[${i}]`;
    if (!c.object(at, checkpoint)) continue;
    c.count(`${at}.step`, checkpoint.step);
    c.key(`${at}.key`, checkpoint.key);
    c.oneOf(`${at}.kind`, checkpoint.kind, Object.keys(KINDS));
    if (checkpoint.gone !== undefined && typeof checkpoint.gone !== "boolean") {
      c.fail(`${at}.gone`, `expected true or false, found ${kindOf(checkpoint.gone)}`);
    }
    if (c.problems.length >= MOST_PROBLEMS) return;
  }
}

// The fields every record of FORMAT has, as a record written before records carried a format has them:
// those it lacks are the ones added since, with the value a record of its kind would have.
function upgraded(value) {
  if (value.format !== undefined) return value;
  return { ...value, format: FORMAT, rerunOf: value.rerunOf ?? null, verdict: value.verdict ?? null };
}

// A record as IndexedDB gave it back (`value`, stored under `key`): {record} when every field the card
// reads is as runsmodel.js describes it (a record of before FORMAT read as its shape then was, and
// upgraded), else {damaged: {key, problems}} naming what is wrong where (the first MOST_PROBLEMS).
// Never throws, whatever `value` is.
export function readRecord(value, key = value?.id) {
  const damaged = (problems) => ({ damaged: { key, problems: problems.slice(0, MOST_PROBLEMS) } });
  if (!isObject(value)) return damaged([`the record: expected an object, found ${kindOf(value)}`]);
  if (value.format !== undefined && value.format !== FORMAT) {
    const what = isCount(value.format) && value.format > FORMAT ? "written by a newer version of this site" : "unknown";
    return damaged([`format: ${kindOf(value.format)}, ${what} (this page reads format ${FORMAT})`]);
  }
  const record = upgraded(value);
  const c = new Checker();
  c.text("id", record.id, LIMITS.id);
  if (typeof record.id === "string" && record.id !== key) c.fail("id", "differs from the key it is stored under");
  c.text("program", record.program, LIMITS.program, { empty: true });
  c.text("name", record.name, LIMITS.name);
  checkData(c, record.data);
  c.oneOf("level", record.level, LEVELS);
  const seed = typeof record.seed === "string" && /^\d{1,20}$/.test(record.seed);
  if (!seed) c.fail("seed", `expected a whole number as text, found ${kindOf(record.seed)}`);
  c.count("epochs", record.epochs);
  c.oneOf("kind", record.kind, DEVICE_KINDS);
  c.text("device", record.device, LIMITS.text, { empty: true });
  c.nullable("resumedFrom", record.resumedFrom, (p, v) => c.key(p, v));
  const keep = record.keep;
  const keeps =
    keep === undefined ||
    keep === null ||
    keep === "all" ||
    (Number.isSafeInteger(keep) && keep >= 1 && keep <= MOST_KEEP);
  if (!keeps) c.fail("keep", `expected a whole number from 1 to ${MOST_KEEP}, or "all", found ${kindOf(keep)}`);
  c.time("started", record.started);
  c.nullable("ended", record.ended, (p, v) => c.time(p, v));
  c.oneOf("status", record.status, STATUSES);
  c.nullable("error", record.error, (p, v) => c.text(p, v, LIMITS.text, { empty: true }));
  c.count("step", record.step);
  c.nullable("total", record.total, (p, v) => c.count(p, v));
  checkRows(c, record.rows);
  checkCheckpoints(c, record.checkpoints);
  c.nullable("final", record.final, (p, v) => c.key(p, v));
  c.nullable("manifest", record.manifest, (p, v) => c.text(p, v, LIMITS.manifest));
  c.nullable("rerunOf", record.rerunOf, (p, v) => c.key(p, v));
  c.nullable("verdict", record.verdict, (p, v) => c.text(p, v, LIMITS.manifest, { empty: true }));
  return c.problems.length ? damaged(c.problems) : { record };
}

// A damaged record's line in the card: its key (shortened) and what is wrong.
export function damagedText({ key, problems }) {
  const shown = String(key);
  const name = shown.length > 60 ? `${shown.slice(0, 60)}…` : shown;
  const more = problems.length >= MOST_PROBLEMS ? " (and perhaps more)" : "";
  return { name, problems: problems.map((p) => (p.length > 300 ? `${p.slice(0, 300)}…` : p)), more };
}

// The storage cap a share link's re-run starts under unless the user gives another (MiB).
export const DEFAULT_CAP_MIB = 1024;

// Whether a share link's re-run may start: `storage` (the link's, app.read_link: the steps it takes and
// at most how many checkpoints of what size) against the cap `capBytes` the user sees and `free`, the
// bytes the browser says this site may still store (null when it does not say). {ok, text}: the text
// says the numbers either way.
export function rerunStorageCheck(storage, capBytes, free) {
  const n = storage.checkpoints;
  const estimate =
    `${storage.steps.toLocaleString("en")} steps; its checkpoints take at most ${formatBytes(storage.bytes)} ` +
    `(${n.toLocaleString("en")} of ${formatBytes(storage.per_checkpoint)} each)`;
  if (!(Number.isFinite(capBytes) && capBytes > 0)) {
    return {
      ok: false,
      text: `Not started: the storage cap must be a number of MiB above 0. The re-run takes ${estimate}.`,
    };
  }
  const cap = `the storage cap of ${formatBytes(capBytes)}`;
  if (storage.bytes > capBytes) {
    return { ok: false, text: `Not started: the re-run takes ${estimate}, more than ${cap}. Nothing was written.` };
  }
  const room = free === null ? "" : `the ${formatBytes(Math.max(free, 0))} this browser still lets this site store`;
  if (free !== null && storage.bytes > free) {
    return { ok: false, text: `Not started: the re-run takes ${estimate}, more than ${room}. Nothing was written.` };
  }
  return { ok: true, text: `The re-run takes ${estimate}: within ${cap}${room ? ` and ${room}` : ""}.` };
}
