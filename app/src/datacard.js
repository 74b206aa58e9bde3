// The Data card: which data the page trains on (this site's digits, the Zen of Python's characters, the
// breast cancer data for the statistical analysis, or the user's own files, dropped or picked), its import options, and what was read: facts, content hash,
// split versions, a preview table or thumbnails. Files are read in the engine's worker; a file that
// cannot be read is named with its row, column or entry, and the data chosen before stays chosen.

import { byId, element } from "./dom.js";
import { errorText, formatBytes } from "./format.js";
import { describeData, importData, starterProgram } from "./train.js";
import { builtinFacts, dataRecord, importSettings, summaryFacts } from "./userdatamodel.js";

// As the engine names them (scellis.datasets), so a run's record names its data the same way.
const BUILTIN_NAMES = {
  site: "digits (this site)",
  chars: "Zen of Python characters",
  cancer: "breast cancer (this site; every row in both splits)",
};

export class DataCard {
  // `onChoice({ source, data })` hears every change of the data chosen (data: dataRecord's).
  constructor(engine, onChoice) {
    Object.assign(this, { engine, onChoice });
    this.files = null; // the user's files last given (kept to read again with other options)
    this.user = null; // { id, summary } of the user's data set read last
    this.source = "site";
    this.record = dataRecord(BUILTIN_NAMES.site, []);
    this.device = null; // the engine report's entry of the device runs use (setDevice)
  }

  // The device runs use: the card says whether the user's data set could be kept on it.
  setDevice(device) {
    this.device = device;
    if (this.source === "user") showSummary(this.user.summary, device);
  }

  wire() {
    byId("data").hidden = false;
    for (const radio of document.querySelectorAll("input[name=data-source]")) {
      radio.addEventListener("change", () => radio.checked && this.choose(radio.value));
    }
    byId("data-files").addEventListener("change", (event) => this.read(Array.from(event.target.files)));
    byId("data-folder").addEventListener("change", (event) => this.read(Array.from(event.target.files)));
    byId("data-reread").addEventListener("click", () => this.files && this.read(this.files));
    const drop = byId("data-drop");
    drop.addEventListener("dragover", (event) => {
      event.preventDefault();
      drop.dataset.over = "yes";
    });
    drop.addEventListener("dragleave", () => delete drop.dataset.over);
    drop.addEventListener("drop", async (event) => {
      event.preventDefault();
      delete drop.dataset.over;
      this.read(await droppedFiles(event.dataTransfer));
    });
    drop.addEventListener("keydown", (event) => {
      if (event.key === "Enter" || event.key === " ") {
        event.preventDefault();
        byId("data-files").click();
      }
    });
    this.engine.on("dataProgress", showProgress);
    this.showBuiltin("site");
  }

  // What runs and plans name: the engine's source and the record a run keeps.
  current() {
    const sources = { user: () => ({ user: this.user.id }), text: () => ({ text: this.text.id }) };
    return { source: sources[this.source]?.() ?? this.source, data: this.record };
  }

  // The texts the Fine-tune card read for a pretrained model ({ id, name } as the engine keeps them),
  // chosen: runs read them, tokenized by the model's tokenizer, and bind the model's weights.
  async useTexts(texts) {
    this.text = texts;
    byId("data-text-choice").disabled = false;
    byId("data-text-name").textContent = texts.name;
    await this.select("text");
  }

  async choose(source) {
    this.source = source;
    if (source === "user") {
      this.record = dataRecord(this.user.summary.name, this.user.summary.versions);
      showSummary(this.user.summary, this.device);
    } else if (source === "text") {
      this.record = dataRecord(this.text.name, []);
      await this.showTexts();
    } else {
      this.record = dataRecord(BUILTIN_NAMES[source], []);
      await this.showBuiltin(source);
    }
    this.onChoice(this.current());
  }

  // Selects a built-in data set (a share link or a fit suggestion asks for it).
  select(source) {
    const radio = document.querySelector(`input[name=data-source][value=${source}]`);
    radio.checked = true;
    return this.choose(source);
  }

  async showBuiltin(source) {
    try {
      const info = await describeData(this.engine, source);
      if (this.source !== source) return;
      this.record = dataRecord(BUILTIN_NAMES[source], info.versions);
      fillFacts(builtinFacts(info));
      byId("data-preview").replaceChildren();
      byId("data-thumbs").replaceChildren();
    } catch (error) {
      console.error(error);
      showError(`The data set could not be read: ${errorText(error)}`);
    }
  }

  async showTexts() {
    try {
      const info = await describeData(this.engine, { text: this.text.id });
      if (this.source !== "text") return;
      this.record = dataRecord(this.text.name, info.versions);
      fillFacts(builtinFacts(info));
      byId("data-preview").replaceChildren();
      byId("data-thumbs").replaceChildren();
    } catch (error) {
      console.error(error);
      showError(`The texts could not be read: ${errorText(error)}`);
    }
  }

  // Reads `files` (new ones, or those read last with other options). The target column goes by name: a
  // table without a column of the name chosen takes its last column, and the card says so.
  async read(files) {
    if (!files.length) return;
    const settings = importSettings(optionFields());
    if (settings.error) {
      showError(settings.error);
      return;
    }
    showError("");
    const card = byId("data");
    card.setAttribute("aria-busy", "true");
    card.dataset.state = "reading";
    byId("data-progress").textContent =
      `Reading ${files.length === 1 ? (files[0].file ?? files[0]).name : `${files.length} files`}…`;
    try {
      const { id, summary } = await importData(this.engine, files, settings);
      this.files = files;
      this.user = { id, summary };
      byId("data-reread").disabled = false;
      byId("data-user-choice").disabled = false;
      byId("data-user-name").textContent = `${summary.name} (${summary.n.toLocaleString("en")} examples)`;
      fillTargets(summary);
      byId("data-progress").textContent = "";
      card.dataset.state = "read";
      await this.select("user");
    } catch (error) {
      console.error(error);
      byId("data-progress").textContent = "";
      card.dataset.state = "error";
      if (this.user) fillTargets(this.user.summary); // the data chosen stays, and its options with it
      const kept = this.record.name;
      showError(`${errorText(error)}. Still training on ${kept}.`);
    } finally {
      card.removeAttribute("aria-busy");
    }
  }

  // The built-in data set (its source) a run's record names, or null.
  builtinNamed(name) {
    return Object.keys(BUILTIN_NAMES).find((source) => BUILTIN_NAMES[source] === name) ?? null;
  }

  // A starter program (JSON text) for the data chosen now.
  starter() {
    return starterProgram(this.engine, this.current().source);
  }

  name() {
    return this.record.name;
  }
}

// The files of a drop: files as they are, folders walked (their files carry their paths).
async function droppedFiles(transfer) {
  const entries = Array.from(transfer.items ?? [], (item) => item.webkitGetAsEntry?.()).filter(Boolean);
  if (!entries.some((entry) => entry.isDirectory)) return Array.from(transfer.files);
  const out = [];
  const walk = async (entry, path) => {
    if (entry.isFile) {
      const file = await new Promise((resolve, reject) => entry.file(resolve, reject));
      out.push({ path: `${path}${entry.name}`, file });
      return;
    }
    const reader = entry.createReader();
    for (;;) {
      const batch = await new Promise((resolve, reject) => reader.readEntries(resolve, reject));
      if (!batch.length) break;
      for (const child of batch) await walk(child, `${path}${entry.name}/`);
    }
  };
  for (const entry of entries) await walk(entry, "");
  return out;
}

function optionFields() {
  const value = (id) => byId(id).value;
  return {
    header: value("data-csv-header"),
    target: value("data-csv-target"),
    labels: value("data-csv-labels"),
    missing: value("data-csv-missing"),
    stream: byId("data-stream").checked,
    color: value("data-color"),
    size: value("data-size"),
    fraction: value("data-fraction"),
    seed: value("data-split-seed"),
  };
}

function showProgress(progress) {
  const line = byId("data-progress");
  if (progress.total !== undefined && progress.done !== undefined) {
    line.textContent = `Reading ${progress.file}: image ${progress.done} of ${progress.total}…`;
  } else if (progress.bytes !== undefined) {
    const share = progress.total ? ` (${Math.round((100 * progress.bytes) / progress.total)} %)` : "";
    line.textContent = `Reading ${progress.file}: ${formatBytes(progress.bytes)}${share}, ${progress.rows.toLocaleString("en")} rows…`;
  }
}

function showError(text) {
  const box = byId("data-error");
  box.textContent = text;
  box.hidden = !text;
}

function fillFacts(facts) {
  const list = byId("data-facts");
  list.replaceChildren();
  for (const [label, value] of facts) list.append(element("dt", label), element("dd", value));
}

// The table's columns in the target chooser, by name: the one chosen selected, or "the last" when the
// last was taken (asked for, or because the file lacks the name chosen before).
function fillTargets(summary) {
  const select = byId("data-csv-target");
  const card = byId("data");
  if (!summary.columns) {
    delete card.dataset.target; // not a table: the chooser keeps the last table's columns for the next one
    delete card.dataset.targetChosen;
    return;
  }
  card.dataset.target = summary.target;
  card.dataset.targetChosen = summary.targetChosen;
  select.replaceChildren(element("option", "the last", { value: "" }));
  for (const name of new Set(summary.columns)) {
    const option = element("option", name, { value: name });
    if (summary.targetChosen === "named" && name === summary.target) option.selected = true;
    select.append(option);
  }
}

function showSummary(summary, device) {
  fillFacts(summaryFacts(summary, device));
  const table = summary.preview.table;
  const preview = byId("data-preview");
  preview.replaceChildren();
  if (table) {
    const grid = element("table", undefined, { "aria-label": `The first ${table.rows.length} examples` });
    const head = element("tr");
    for (const name of table.header) head.append(element("th", name, { scope: "col" }));
    grid.append(element("thead"), element("tbody"));
    grid.tHead.append(head);
    for (const row of table.rows) {
      const tr = element("tr");
      for (const cell of row)
        tr.append(
          element("td", cell === null ? "—" : typeof cell === "number" ? String(Number(cell.toPrecision(6))) : cell),
        );
      grid.tBodies[0].append(tr);
    }
    preview.append(grid);
  }
  const thumbs = byId("data-thumbs");
  thumbs.replaceChildren();
  for (const thumb of summary.preview.thumbnails ?? []) {
    const canvas = element("canvas", undefined, {
      width: thumb.width,
      height: thumb.height,
      role: "img",
      "aria-label": `example ${thumb.index}: ${thumb.label}`,
    });
    canvas.getContext("2d").putImageData(new ImageData(thumb.rgba, thumb.width, thumb.height), 0, 0);
    const figure = element("figure");
    figure.append(canvas, element("figcaption", thumb.label));
    thumbs.append(figure);
  }
}
