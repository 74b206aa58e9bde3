// What the Data card decides without reading a byte: which importer a set of files calls for (by their
// names and paths), which of two .npy files holds the features; and what the engine is told of a data
// set (its dataset.json); a thumbnail's pixels. Pure: tests run it in Node.

import { formatMiB } from "./data/limits.js";

const CSV_NAME = /\.(csv|tsv|txt)$/i;
const IMAGE_NAME = /\.(png|jpe?g)$/i;

// A file as the page hands it over: a File (a picked folder's carry webkitRelativePath), or a dropped
// folder's { path, file }.
export function pathOf(entry) {
  return entry.path ?? (entry.webkitRelativePath || entry.name);
}

export function nameOf(entry) {
  return entry.file?.name ?? entry.name;
}

// { format: "csv" | "npz" | "npy" | "zip" | "folder" | null, label, name, why (when format is null) }.
export function describeFiles(files) {
  const list = Array.from(files);
  if (list.length === 0) return { format: null, label: "nothing", name: "the drop", why: "no files were given" };
  const inFolder = list.filter((f) => pathOf(f).includes("/"));
  if (inFolder.length > 0) {
    const top = pathOf(inFolder[0]).split("/")[0];
    const images = list.filter((f) => IMAGE_NAME.test(nameOf(f))).length;
    if (images === 0) {
      return {
        format: null,
        label: "a folder",
        name: top,
        why: "it holds no PNG or JPEG images (one subfolder per class)",
      };
    }
    return { format: "folder", label: `a folder of ${images} images`, name: top };
  }
  const names = list.map(nameOf);
  if (list.length === 1) {
    const [name] = names;
    if (CSV_NAME.test(name)) return { format: "csv", label: "a CSV table", name };
    if (/\.npz$/i.test(name)) return { format: "npz", label: "a NumPy archive (.npz)", name };
    if (/\.zip$/i.test(name)) return { format: "zip", label: "a ZIP of images", name };
    if (/\.npy$/i.test(name)) {
      const why = "one .npy holds either the features or the labels: give both .npy files together, or one .npz";
      return { format: null, label: "a NumPy array", name, why };
    }
    if (IMAGE_NAME.test(name)) {
      return {
        format: null,
        label: "an image",
        name,
        why: "images need one subfolder per class: pick the folder, or give a ZIP of it",
      };
    }
    const why = "it is not a CSV (.csv, .tsv, .txt), NumPy (.npz, or two .npy) or ZIP of images (.zip) file";
    return { format: null, label: "a file", name, why };
  }
  if (list.length === 2 && names.every((n) => /\.npy$/i.test(n))) {
    return { format: "npy", label: "two NumPy arrays (.npy)", name: `${names[0]} and ${names[1]}` };
  }
  if (names.every((n) => IMAGE_NAME.test(n))) {
    const why = "images need one subfolder per class: pick or drop their folder, or give a ZIP of it";
    return { format: null, label: `${list.length} images`, name: names[0], why };
  }
  const why = "give one file (CSV, NPZ or ZIP), two .npy files (features and labels), or one folder of images";
  return { format: null, label: `${list.length} files`, name: names.join(", "), why };
}

// Which of two .npy files holds the labels: the one whose name (without .npy) is y, ends in y or says
// label or target; the other holds the features. Names that tell nothing: the first given is x.
export function npyRoles(files) {
  const [a, b] = files;
  const stem = (f) =>
    nameOf(f)
      .replace(/\.npy$/i, "")
      .toLowerCase();
  const isLabels = (f) => /(^|[_\-.])y$|^y$|label|target/.test(stem(f));
  if (isLabels(a) && !isLabels(b)) return { x: b, y: a };
  return { x: a, y: b };
}

// The engine's description of a data set (scellis.datasets.DataInfo's JSON): a table's columns and its
// target column go by name.
export function dataJson(dataset) {
  const numbers = dataset.classes === null;
  return {
    format: "scellis.data/1",
    name: dataset.name,
    example_shape: dataset.exampleShape,
    feature_type: dataset.featureType,
    label_type: numbers ? "float32" : "int32",
    classes: numbers ? null : dataset.classes,
    columns: dataset.source.names ?? null,
    target: dataset.source.target ?? null,
  };
}

// One image example (height x width x channels values in [0, 1]) as RGBA bytes, gray drawn as gray; an
// example of rank 2 is one channel. Values outside [0, 1] are clamped. Null for other shapes.
export function thumbnailRgba(dataset, index) {
  const shape = dataset.exampleShape;
  const drawable = shape.length === 2 || (shape.length === 3 && (shape[2] === 1 || shape[2] === 3));
  if (!drawable) return null;
  const [height, width, channels = 1] = shape;
  const size = height * width * channels;
  const values = dataset.x.subarray(index * size, (index + 1) * size);
  const rgba = new Uint8ClampedArray(height * width * 4);
  for (let p = 0; p < height * width; p++) {
    for (let c = 0; c < 3; c++) rgba[p * 4 + c] = Math.round(values[p * channels + (channels === 3 ? c : 0)] * 255);
    rgba[p * 4 + 3] = 255;
  }
  return { width, height, rgba };
}

// The data sets the worker holds, by id; `add` returns the new one's id. Only the latest few are kept.
export class KeptData {
  constructor(limit = 4) {
    this.limit = limit;
    this.entries = new Map();
    this.next = 1;
  }

  add(entry) {
    const id = this.next++;
    this.entries.set(id, entry);
    while (this.entries.size > this.limit) this.entries.delete(this.entries.keys().next().value);
    return id;
  }

  get(id) {
    const entry = this.entries.get(id);
    if (!entry) throw new Error(`no imported data set ${id} in the engine: import the files again`);
    return entry;
  }
}

// The Data card's option fields (text, as the form holds them) as importFiles' settings, or { error }
// naming the field that is wrong.
export function importSettings(fields) {
  const size = sizeFromText(fields.size);
  if (size.error) return { error: size.error };
  const fraction = Number(fields.fraction);
  if (!(fraction > 0 && fraction < 1)) {
    return {
      error: `the validation fraction must be a number between 0 and 1 (both excluded), not ${JSON.stringify(fields.fraction)}`,
    };
  }
  const seed = Number(fields.seed);
  if (!Number.isInteger(seed) || seed < 0 || seed > 0xffffffff || String(fields.seed).trim() === "") {
    return { error: `the split seed must be a whole number from 0 to 4294967295, not ${JSON.stringify(fields.seed)}` };
  }
  const header = { auto: "auto", true: true, false: false }[fields.header];
  // the target goes by name: a file without a column of that name takes its last column, and says so
  const target = fields.target === "" ? null : String(fields.target);
  return {
    csv: { header, target, ifTargetAbsent: "last", labels: fields.labels, missing: fields.missing },
    images: { color: fields.color, size: size.size },
    npy: {},
    split: { fraction, seed },
    stream: Boolean(fields.stream),
  };
}

// "32x32", "32 × 24" (height then width), or empty (keep each image's size).
export function sizeFromText(text) {
  const trimmed = String(text ?? "").trim();
  if (trimmed === "") return { size: null };
  const match = /^(\d+)\s*[x×]\s*(\d+)$/i.exec(trimmed);
  const [height, width] = match ? [Number(match[1]), Number(match[2])] : [0, 0];
  if (!match || height < 1 || width < 1 || height > 1024 || width > 1024) {
    return { error: `resize to: "${trimmed}" is not a size like 32×32 (height × width, 1 to 1024 each)` };
  }
  return { size: { height, width } };
}

// What the Data card lists of an imported data set, as [label, value] pairs; with `device` (the engine
// report's entry of the device runs use), whether the training split could be kept on it.
export function summaryFacts(summary, device = null) {
  const counts = summary.preview.classCounts;
  const classes = counts
    ? counts.map(({ name, count }) => `${name} (${count})`).join(", ")
    : "none: a numeric target (regression)";
  const facts = [
    ["Read from", `${summary.name}: ${summary.kind}${summary.streamed ? ", read in chunks" : ""}`],
    [
      "Examples",
      `${summary.n.toLocaleString("en")}${summary.skippedRows ? ` (${summary.skippedRows} rows with missing values dropped)` : ""}`,
    ],
    ["One example", `[${summary.exampleShape.join(", ")}] ${summary.featureType}`],
  ];
  if (summary.target !== null) facts.push(["Target column", targetText(summary)]);
  facts.push(
    [summary.labels === "classes" ? `Classes (${summary.classes.length})` : "Labels", classes],
    [
      "Split",
      `${summary.split.train.toLocaleString("en")} training, ${summary.split.validation.toLocaleString("en")} held out (fraction ${summary.split.fraction}, seed ${summary.split.seed})`,
    ],
    ["Data set version", summary.hash],
    ...summary.versions.map((v) => [
      `${v.split === "test" ? "held-out" : v.split} split`,
      `${v.sha256} (${v.examples} examples)`,
    ]),
  );
  if (device) facts.push(["On the device", residentText(summary, device)]);
  return facts;
}

// Whether the training split's features fit the one buffer a program that keeps its data set on the
// device (memory.data "resident") holds them in: the device's largest buffer and storage binding.
export function residentText(summary, device) {
  const bytes = summary.split.train * summary.exampleShape.reduce((a, b) => a * b, 1) * 4;
  const limit = Math.min(device.max_buffer_size, device.max_storage_binding);
  const name = device.kind === "cpu" ? "the CPU path" : device.name;
  const held = `the training split's features take ${formatMiB(bytes)}`;
  if (bytes <= limit)
    return `${held}, within the ${formatMiB(limit)} one buffer of ${name} holds: a program may keep them there`;
  return `${held}, more than the ${formatMiB(limit)} one buffer of ${name} holds: a program must stream them (memory.data "stream")`;
}

// The target column as the card names it, and how it was chosen.
export function targetText({ target, targetChosen, asked }) {
  if (targetChosen === "named") return `${target} (as chosen)`;
  if (targetChosen === "fallback") {
    return `${target} (the last column: the target chosen before, ${JSON.stringify(asked)}, is not in this file)`;
  }
  return `${target} (the last column)`;
}

// What the Data card lists of a built-in data set (scellis.app.data_json's answer).
function featureKind(info) {
  if (info.feature_type !== "int32") return "float32";
  return info.example_shape.length === 2 ? "int32 (token ids, then the attention mask)" : "int32 (character indices)";
}

export function builtinFacts(info) {
  const classes = info.classes === null ? "none: a numeric target" : `${info.classes.length}`;
  return [
    ["Data set", info.name],
    ["One example", `[${info.example_shape.join(", ")}] ${featureKind(info)}`],
    ["Classes", classes],
    ...info.versions.map((v) => [
      `${v.split === "test" ? "held-out" : v.split} split`,
      `${v.sha256} (${v.examples} examples)`,
    ]),
  ];
}

// The data a run records: its name and the versions its manifest will pin.
export function dataRecord(name, versions) {
  return { name, versions: versions.map(({ split, sha256, examples }) => ({ split, sha256, examples })) };
}
