// The Runs card: every run the page has made, newest first, kept in IndexedDB (runstore.js), with each
// run's details (metrics, checkpoints by key, each of which resumes; its manifest), and deletion after a
// confirmation that names what goes (the record, and the checkpoint objects no other run refers to).
// RunControl reports each run through a RunLog; the logic is runsmodel.js's.

import { byId, element } from "./dom.js";
import { errorText } from "./format.js";
import { manifestName } from "./runmodel.js";
import { download } from "./runpanel.js";
import * as model from "./runsmodel.js";
import { openRuns } from "./runstore.js";
import { openStore } from "./store.js";

// One run's record as it goes: kept in memory, shown, and written in order, one write at a time — at
// its start, an epoch's end, a new checkpoint, a pause, its end and its manifest (never per chunk).
class RunLog {
  constructor(card, record) {
    Object.assign(this, { card, record, writing: Promise.resolve() });
  }

  state(state) {
    const { record, changed } = model.withState(this.record, state);
    this.record = record;
    if (changed) this.write();
  }

  settle(status, error = null) {
    if (status === this.record.status && error === null) return;
    this.record = model.withStatus(this.record, status, { now: Date.now(), error });
    this.write();
  }

  // A share link's re-run compared with the link (PageRun.verdict's answer).
  compared(verdict) {
    this.record = model.withVerdict(this.record, verdict);
    this.write();
  }

  pinned(out) {
    this.record = model.withManifest(this.record, out);
    this.write();
  }

  write() {
    const record = this.record;
    if (this.card.deleted.has(record.id)) return;
    this.card.show(record);
    this.writing = this.writing
      .then(() => this.card.runs.put(record))
      .catch((error) => this.card.fail(`The run's record could not be written: ${errorText(error)}`));
  }
}

const cell = (tag, text, attributes) => element(tag, text, attributes);

function factsOf(record, live) {
  const versions = record.data.versions ?? [];
  const facts = [
    ["Program", record.name],
    ["Data", record.data.name],
    ...versions.map((v) => [`Data, ${v.split}`, `${v.sha256} (${v.examples} examples)`]),
    ["Determinism level", record.level],
    ["Seed", record.seed],
    ["Epochs", String(record.epochs)],
    ["Device", model.deviceText(record)],
    ["Status", model.shownStatus(record, live) + (record.error ? `: ${record.error}` : "")],
    ["Steps", record.total === null ? String(record.step) : `${record.step} of ${record.total}`],
    ["Started", new Date(record.started).toLocaleString()],
  ];
  if (record.ended) facts.push(["Ended", new Date(record.ended).toLocaleString()]);
  if (record.resumedFrom) facts.push(["Resumed from", record.resumedFrom]);
  if (record.final) facts.push(["Final checkpoint", record.final]);
  if (record.rerunOf) facts.push(["Re-run of a share link pinning", record.rerunOf]);
  if (record.verdict) facts.push(["Compared with the link", record.verdict]);
  return facts;
}

function metricsTable(record) {
  const name = model.headline(record)?.name;
  const metric = name && name !== "loss" ? [name.replace(/^metric\//, "")] : [];
  const head = ["epoch", "steps", "train loss", "test loss", ...metric];
  const number = (value, digits) => (typeof value === "number" ? value.toFixed(digits) : String(value));
  const table = element("table", undefined, { class: "runs-metrics", "aria-label": "Metrics, epoch by epoch" });
  const tr = element("tr");
  tr.append(...head.map((text) => cell("th", text, { scope: "col" })));
  const body = element("tbody");
  for (const row of record.rows) {
    const cells = [row.epoch, row.steps, number(row.train_loss, 4), number(row.test.loss, 4)];
    if (head.length > 4) cells.push(model.metricValue(name, row.test[name]));
    const line = element("tr");
    line.append(...cells.map((value) => cell("td", String(value))));
    body.append(line);
  }
  const thead = element("thead");
  thead.append(tr);
  table.append(thead, body);
  return table;
}

export class RunsCard {
  // The card over the records kept in this browser; `device` names the page's device (a run's record
  // says it until its state names the device it opened), `onResume(record, key)` resumes a run (or
  // answers why it cannot).
  constructor(device, onResume) {
    Object.assign(this, { device, onResume, runs: null, objects: null });
    this.records = new Map();
    this.damaged = []; // [{key, problems}]: stored records that fail the checks (runsmodel.readRecord)
    this.deleted = new Set();
    this.live = null; // the id of the run this page trains
    this.rerun = null; // the id of the share link's re-run this page has open
    this.open = null; // the id of the run whose details are shown
  }

  // The card, shown; when IndexedDB cannot be opened it says so and keeps no runs. Never throws: a stored
  // record that fails runsmodel.readRecord's checks is listed as damaged (what is wrong, and a delete
  // button) while the others are shown as usual.
  static async open({ device, onResume }) {
    const card = new RunsCard(device, onResume);
    try {
      byId("runs").hidden = false;
      card.runs = await openRuns();
      card.objects = await openStore();
      for (const { key, value } of await card.runs.all()) {
        const read = model.readRecord(value, key);
        if (read.record) card.records.set(read.record.id, read.record);
        else card.damaged.push(read.damaged);
      }
    } catch (error) {
      console.error(error);
      card.runs = null;
      card.fail(`The Runs history is not available in this browser: ${errorText(error)}`);
    }
    try {
      card.render();
    } catch (error) {
      console.error(error);
      card.fail(`The Runs history cannot be shown: ${errorText(error)}`);
    }
    return card;
  }

  // The convenience state kept under `name` (the last run, for the resume form), or null when there is
  // none or it cannot be read (the reason goes to the console: nothing depends on it).
  async kept(name) {
    try {
      return this.runs ? await this.runs.kept(name) : null;
    } catch (error) {
      console.warn(error);
      return null;
    }
  }

  // Keeps `value` under `name`; a failure (the site's storage full) is said quietly in the card and
  // changes nothing else. Resolves to whether it was kept.
  async keep(name, value) {
    if (!this.runs) return false;
    try {
      await this.runs.keep(name, value);
      if (this.noted === name) this.note("");
      return true;
    } catch (error) {
      console.warn(error);
      this.noted = name;
      this.note(`Not kept for a later visit (${errorText(error)}); the run goes on as before.`);
      return false;
    }
  }

  // A new run's log (null when the history is not available): RunControl reports the run through it.
  begin(settings) {
    if (!this.runs) return null;
    const record = model.newRecord({ id: crypto.randomUUID(), now: Date.now(), settings, device: this.device });
    if (settings.rerunOf) this.rerun = record.id;
    else this.live = record.id;
    const log = new RunLog(this, record);
    log.write();
    return log;
  }

  // The settings of a run that wrote or resumed from `key` (the newest such), or null.
  settingsOf(key) {
    const found = model.sortedRuns([...this.records.values()]).find((r) => model.referencedKeys(r).includes(key));
    return found ? model.resumeSettings(found) : null;
  }

  show(record) {
    this.records.set(record.id, record);
    this.render();
  }

  fail(text) {
    const box = byId("runs-error");
    box.textContent = text;
    box.hidden = !text;
  }

  say(text) {
    byId("runs-status").textContent = text;
  }

  // A quiet note of something only convenient that failed (nothing a run needs).
  note(text) {
    const box = byId("runs-note");
    box.textContent = text;
    box.hidden = !text;
  }

  // The ids of the runs this page has open.
  lives() {
    return new Set([this.live, this.rerun].filter(Boolean));
  }

  busy() {
    return this.records.get(this.live)?.status === "running";
  }

  // The table and, when one is chosen, its details; the focused button keeps focus across the redraw.
  render() {
    const focused = document.activeElement?.dataset?.focus;
    const records = model.sortedRuns([...this.records.values()]);
    byId("runs").dataset.count = String(records.length);
    byId("runs-empty").hidden = records.length > 0;
    byId("runs-table").hidden = records.length === 0;
    byId("runs-table").tBodies[0].replaceChildren(...records.map((r) => this.row(r)));
    this.renderDetail();
    this.renderDamaged();
    if (focused) document.querySelector(`#runs [data-focus="${CSS.escape(focused)}"]`)?.focus();
  }

  // The stored records that cannot be read, each with what is wrong and a button that deletes it.
  renderDamaged() {
    const box = byId("runs-damaged");
    box.hidden = this.damaged.length === 0;
    box.dataset.count = String(this.damaged.length);
    const items = this.damaged.map((damaged, i) => {
      const text = model.damagedText(damaged);
      const item = element("li", undefined, { "data-damaged": text.name });
      item.append(element("p", `Record ${text.name} cannot be read${text.more}:`));
      const problems = element("ul");
      problems.append(...text.problems.map((line) => element("li", line)));
      const remove = element("button", "Delete this record", { type: "button", "data-focus": `damaged:${i}` });
      remove.onclick = () => this.removeDamaged(damaged);
      item.append(problems, remove);
      return item;
    });
    byId("runs-damaged-list").replaceChildren(...items);
  }

  // Deletes a damaged record (only the record: the checkpoint objects it may name stay stored).
  async removeDamaged(damaged) {
    this.fail("");
    try {
      await this.runs.delete(damaged.key);
    } catch (error) {
      this.fail(`Deleting the damaged record failed: ${errorText(error)}`);
      return;
    }
    this.damaged = this.damaged.filter((d) => d !== damaged);
    byId("runs-title").focus();
    this.say(`Deleted the damaged record ${model.damagedText(damaged).name}; no checkpoint object was deleted.`);
    this.render();
  }

  row(record) {
    const cells = model.summaryCells(record, { now: Date.now(), live: this.lives() });
    const tr = element("tr", undefined, { "data-run": record.id, "data-status": cells.status });
    const button = element("button", cells.program, { type: "button", "data-focus": `details:${record.id}` });
    button.setAttribute("aria-expanded", String(this.open === record.id));
    button.setAttribute("aria-controls", "runs-detail");
    button.onclick = () => this.toggle(record.id);
    const first = element("th", undefined, { scope: "row" });
    first.append(button);
    tr.append(first, ...["data", "level", "device", "status", "metric", "when"].map((k) => cell("td", cells[k])));
    return tr;
  }

  toggle(id) {
    this.open = this.open === id ? null : id;
    this.fail("");
    this.render();
  }

  renderDetail() {
    const box = byId("runs-detail");
    const record = this.records.get(this.open);
    box.hidden = !record;
    if (!record) return;
    box.dataset.run = record.id;
    byId("runs-detail-title").textContent = `Run of ${record.name}, ${model.formatWhen(record.started, Date.now())}`;
    const facts = byId("runs-detail-facts");
    facts.replaceChildren();
    for (const [label, value] of factsOf(record, this.lives()))
      facts.append(element("dt", label), element("dd", value));
    const metrics = record.rows.length ? metricsTable(record) : element("p", "No epoch finished.");
    byId("runs-detail-metrics").replaceChildren(metrics);
    const keys = record.checkpoints.map((c) => this.checkpointItem(record, c));
    byId("runs-checkpoints").replaceChildren(...(keys.length ? keys : [element("li", "none written")]));
    const manifest = byId("runs-manifest");
    manifest.disabled = !record.manifest;
    manifest.onclick = () => download(manifestName(record.name, record.final), record.manifest);
    const remove = byId("runs-delete");
    const open = this.lives().has(record.id) && ["running", "paused"].includes(record.status);
    remove.disabled = open;
    remove.title = open ? "this run is open in the page: stop it, start another or reload first" : "";
    remove.onclick = () => this.confirmDelete(record);
  }

  // A checkpoint's line: its key, why it was kept, and "Resume from here"; one the retention rule deleted
  // says so instead (data-gone), with no button.
  checkpointItem(record, { step, key, kind, gone }) {
    const item = element("li", `step ${step}: `, { "data-key": key });
    if (gone) {
      item.dataset.gone = "true";
      item.append(element("code", key), ` (${model.whyKept(kind)}): ${model.keepRule(record.keep ?? model.KEEP)}`);
      return item;
    }
    const resume = element("button", "Resume from here", { type: "button", "data-focus": `resume:${key}` });
    resume.setAttribute("aria-label", `Resume from here: step ${step}, ${key}`);
    resume.disabled = this.busy();
    resume.onclick = () => this.resume(record, key);
    item.append(element("code", key), ` (${model.whyKept(kind)}) `, resume);
    return item;
  }

  // A checkpoint resumes only while its object is stored; otherwise the card says which key is gone.
  async resume(record, key) {
    this.fail("");
    try {
      if (!(await this.objects.has(key))) {
        const why = "this browser no longer stores that checkpoint (it was deleted, or the site's storage was cleared)";
        this.fail(`Cannot resume from ${key}: ${why}.`);
        return;
      }
    } catch (error) {
      this.fail(`Cannot resume from ${key}: ${errorText(error)}`);
      return;
    }
    const why = await this.onResume(record, key); // why not, or null
    if (why) this.fail(`Cannot resume from ${key}: ${why}.`);
    else this.say(`Resuming the run of ${record.name} from ${key} in the train card above.`);
  }

  async plan(record) {
    return model.deletionPlan(record, [...this.records.values()], new Set(await this.objects.keys()));
  }

  // Asks first (naming the record and every checkpoint object that goes, and those kept); deletes only on
  // the dialog's Delete.
  async confirmDelete(record) {
    this.fail("");
    let plan;
    try {
      plan = await this.plan(record);
    } catch (error) {
      this.fail(`Cannot tell which checkpoint objects the run frees: ${errorText(error)}; nothing was deleted.`);
      return;
    }
    const text = model.deletionText(record, plan);
    byId("runs-confirm-text").replaceChildren(...text.lines.map((line) => element("p", line)));
    byId("runs-confirm-free").replaceChildren(...plan.free.map((key) => element("li", key)));
    byId("runs-confirm-kept-text").textContent = [text.kept, text.gone].filter(Boolean).join(" ");
    const kept = plan.kept.map(({ key, runs }) => element("li", `${key} (${runs.join("; ")})`));
    byId("runs-confirm-kept").replaceChildren(...kept);
    const dialog = byId("runs-confirm");
    const answer = new Promise((resolve) => {
      dialog.addEventListener("close", () => resolve(dialog.returnValue), { once: true });
    });
    dialog.returnValue = "";
    dialog.showModal();
    if ((await answer) !== "delete") {
      this.say("Nothing was deleted.");
      return;
    }
    await this.remove(record, plan.free);
  }

  // The record and the freed objects (those still free now: a run may have begun to use one since).
  async remove(record, freed) {
    const now = await this.plan(record);
    const free = freed.filter((key) => now.free.includes(key));
    try {
      for (const key of free) await this.objects.delete(key);
      this.deleted.add(record.id);
      await this.runs.delete(record.id);
    } catch (error) {
      this.fail(`Deleting the run failed: ${errorText(error)}`);
      return;
    }
    this.records.delete(record.id);
    if (this.open === record.id) this.open = null;
    byId("runs-title").focus(); // its details went with it
    const n = free.length;
    const kept = now.kept.length ? `; kept ${now.kept.length} that other runs refer to` : "";
    this.say(`Deleted the run of ${record.name} and ${n} checkpoint object${n === 1 ? "" : "s"}${kept}.`);
    this.render();
  }
}
