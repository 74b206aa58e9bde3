// The Data card's pure decisions under Node (app/src/userdatamodel.js): which importer a set of files
// calls for and why not, which .npy holds the labels, the import settings from the card's fields with each
// wrong field named, the engine's description of a data set (read back by scellis.datasets in
// tests/test_js.py), thumbnails' pixels, and the facts the card lists.
import assert from "node:assert/strict";
import { test } from "node:test";
import { engineFiles, makeDataset, splitDataset } from "../../app/src/data/dataset.js";
import * as model from "../../app/src/userdatamodel.js";
import { forPython } from "./lib.js";

const file = (name, path = "") => ({ name, webkitRelativePath: path });

test("files are sorted to their importer or refused with why", () => {
  const cases = {
    csv: [file("iris.csv")],
    tsv: [file("t.TSV")],
    npz: [file("a.npz")],
    zip: [file("pets.zip")],
    npy: [file("x.npy"), file("y.npy")],
    folder: [file("a.png", "pets/cat/a.png"), file("b.jpg", "pets/dog/b.jpg")],
    dropped: [{ path: "pets/cat/a.png", file: file("a.png") }],
    one_npy: [file("x.npy")],
    one_png: [file("a.png")],
    pngs: [file("a.png"), file("b.png")],
    docx: [file("notes.docx")],
    none: [],
    mixed: [file("a.csv"), file("b.npz")],
    empty_folder: [file("readme.txt", "pets/readme.txt")],
  };
  const out = Object.fromEntries(Object.entries(cases).map(([name, files]) => [name, model.describeFiles(files)]));
  assert.deepEqual(
    ["csv", "tsv", "npz", "zip", "npy", "folder", "dropped"].map((k) => out[k].format),
    ["csv", "csv", "npz", "zip", "npy", "folder", "folder"],
  );
  assert.equal(out.folder.name, "pets");
  assert.equal(out.folder.label, "a folder of 2 images");
  const why = {
    one_npy: "one .npy holds either the features or the labels",
    one_png: "images need one subfolder per class",
    pngs: "images need one subfolder per class",
    docx: "it is not a CSV (.csv, .tsv, .txt), NumPy",
    mixed: "give one file (CSV, NPZ or ZIP)",
    empty_folder: "it holds no PNG or JPEG images",
  };
  for (const [name, said] of Object.entries(why)) {
    assert.ok(out[name].why.startsWith(said), `${name}: ${out[name].why}`);
  }
  assert.equal(out.none.why, "no files were given");
});

test("the labels npy is found by its name", () => {
  const pick = (a, b) => {
    const r = model.npyRoles([file(a), file(b)]);
    return [r.x.name, r.y.name];
  };
  const pairs = [
    pick("y.npy", "x.npy"),
    pick("features.npy", "labels.npy"),
    pick("train_y.npy", "train_x.npy"),
    pick("a.npy", "b.npy"),
    pick("targets.npy", "inputs.npy"),
  ];
  assert.deepEqual(pairs, [
    ["x.npy", "y.npy"],
    ["features.npy", "labels.npy"],
    ["train_x.npy", "train_y.npy"],
    ["a.npy", "b.npy"],
    ["inputs.npy", "targets.npy"],
  ]);
});

test("settings come from the fields and a wrong field is named", () => {
  const fields = {
    header: "auto",
    target: "progression",
    labels: "auto",
    missing: "drop",
    stream: true,
    color: "gray",
    size: " 32 \u00d7 24 ",
    fraction: "0.25",
    seed: "7",
  };
  const good = model.importSettings(fields);
  // the target by name, the last column where a file lacks it: never a column index carried to another file
  assert.deepEqual(good.csv, {
    header: "auto",
    target: "progression",
    ifTargetAbsent: "last",
    labels: "auto",
    missing: "drop",
  });
  assert.deepEqual(good.images, { color: "gray", size: { height: 32, width: 24 } });
  assert.deepEqual(good.split, { fraction: 0.25, seed: 7 });
  assert.equal(good.stream, true);
  assert.equal(
    model.importSettings({ ...fields, size: "big" }).error,
    'resize to: "big" is not a size like 32\u00d732 (height \u00d7 width, 1 to 1024 each)',
  );
  const fraction = model.importSettings({ ...fields, fraction: "1" }).error;
  assert.ok(fraction.startsWith("the validation fraction must be a number between 0 and 1"), fraction);
  const seed = model.importSettings({ ...fields, seed: "-1" }).error;
  assert.ok(seed.startsWith("the split seed must be a whole number"), seed);
  const blank = model.importSettings({ ...fields, size: "", target: "", header: "false" });
  assert.equal(blank.images.size, null);
  assert.equal(blank.csv.target, null);
  assert.equal(blank.csv.header, false);
});

test("the engine reads back what the page writes", () => {
  const dataset = makeDataset({
    name: "pets.zip",
    exampleShape: [2, 2, 3],
    featureType: "float32",
    classes: ["cat", "dog"],
    x: Float32Array.from({ length: 5 * 12 }, (_, i) => (i % 12) / 11),
    y: Int32Array.from([0, 1, 0, 1, 1]),
  });
  const { train, validation } = splitDataset(dataset, { fraction: 0.4, seed: 1 });
  const hex = (bytes) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("hex");
  const files = { "dataset.json": JSON.stringify(model.dataJson(dataset)) };
  for (const [split, part] of [
    ["train", train],
    ["test", validation],
  ]) {
    const { features, labels } = engineFiles(part);
    files[`${split}-x`] = hex(features);
    files[`${split}-y`] = hex(labels);
  }
  forPython("userdatamodel", "engine_files", files); // tests/test_js.py reads them with scellis.datasets
  const described = JSON.parse(files["dataset.json"]);
  assert.equal(described.label_type, "int32");
  assert.equal(described.target, null); // images: no table columns
  const thumb = model.thumbnailRgba(dataset, 1);
  assert.deepEqual(
    { width: thumb.width, height: thumb.height, first: Array.from(thumb.rgba.slice(0, 8)) },
    { width: 2, height: 2, first: [0, 23, 46, 255, 70, 93, 116, 255] },
  );
  assert.equal(model.thumbnailRgba(makeDataset({ ...dataset, exampleShape: [12] }), 0), null);
  const source = { format: "csv", names: ["age", "bmi", "progression"], target: "progression" };
  const table = makeDataset({
    name: "d.csv",
    exampleShape: [2],
    featureType: "float32",
    x: new Float32Array(4),
    y: new Float32Array(2),
    source,
  });
  const tableJson = model.dataJson(table);
  assert.deepEqual([tableJson.columns, tableJson.target], [["age", "bmi", "progression"], "progression"]);
});

test("the card lists what was read", () => {
  const summary = {
    name: "shapes.csv",
    kind: "a CSV table",
    streamed: true,
    n: 1200,
    skippedRows: 3,
    exampleShape: [5],
    featureType: "float32",
    target: "size",
    labels: "classes",
    classes: ["high", "low"],
    preview: {
      classCounts: [
        { name: "high", count: 600 },
        { name: "low", count: 600 },
      ],
    },
    split: { train: 960, validation: 240, fraction: 0.2, seed: 0 },
    hash: "sha256:ab",
    versions: [
      { split: "train", sha256: "sha256:cd", examples: 960 },
      { split: "test", sha256: "sha256:ef", examples: 240 },
    ],
  };
  assert.deepEqual(model.summaryFacts(summary), [
    ["Read from", "shapes.csv: a CSV table, read in chunks"],
    ["Examples", "1,200 (3 rows with missing values dropped)"],
    ["One example", "[5] float32"],
    ["Target column", "size (the last column)"],
    ["Classes (2)", "high (600), low (600)"],
    ["Split", "960 training, 240 held out (fraction 0.2, seed 0)"],
    ["Data set version", "sha256:ab"],
    ["train split", "sha256:cd (960 examples)"],
    ["held-out split", "sha256:ef (240 examples)"],
  ]);
  const regression = model.summaryFacts({
    ...summary,
    target: null,
    labels: "numbers",
    classes: null,
    preview: { classCounts: null },
    streamed: false,
    skippedRows: 0,
  });
  assert.ok(
    regression.some((f) => f.length === 2 && f[0] === "Labels" && f[1] === "none: a numeric target (regression)"),
    JSON.stringify(regression),
  );
  const gpu = { kind: "webgpu", name: "SwiftShader", max_buffer_size: 2 ** 28, max_storage_binding: 2 ** 27 };
  assert.deepEqual(model.summaryFacts(summary, gpu).at(-1), [
    "On the device",
    "the training split's features take 19,200 bytes, within the 128 MiB one buffer of SwiftShader holds: a " +
      "program may keep them there",
  ]);
  assert.equal(
    model.residentText({ ...summary, split: { train: 10 ** 7 } }, gpu),
    "the training split's features take 190.7 MiB, more than the 128 MiB one buffer of SwiftShader holds: a " +
      'program must stream them (memory.data "stream")',
  );
  const cpu = { kind: "cpu", max_buffer_size: 2 ** 32, max_storage_binding: 2 ** 32 };
  const onCpu = model.residentText(summary, cpu);
  assert.ok(onCpu.endsWith("within the 4 GiB one buffer of the CPU path holds: a program may keep them there"), onCpu);
  assert.equal(model.targetText({ target: "colour", targetChosen: "named", asked: "colour" }), "colour (as chosen)");
  assert.equal(
    model.targetText({ target: "size", targetChosen: "fallback", asked: "progression" }),
    'size (the last column: the target chosen before, "progression", is not in this file)',
  );
  const record = model.dataRecord("shapes.csv", summary.versions);
  assert.equal(record.name, "shapes.csv");
  assert.deepEqual(
    record.versions.map((v) => [v.split, v.examples]),
    [
      ["train", 960],
      ["test", 240],
    ],
  );
});
