"""The Data card's pure decisions under Node (app/src/userdatamodel.js): which importer a set of files
calls for and why not, which .npy holds the labels, the import settings from the card's fields with each
wrong field named, the engine's description of a data set (read back by scellis.datasets), thumbnails'
pixels, and the facts the card lists."""

from __future__ import annotations

import json
from pathlib import Path

from nodejs import run_node

from scellis.datasets import from_user_files

ROOT = Path(__file__).resolve().parents[1]
SRC = (ROOT / "app" / "src").as_uri()

PRELUDE = f"""
import * as model from "{SRC}/userdatamodel.js";
import {{ makeDataset, splitDataset, engineFiles }} from "{SRC}/data/dataset.js";
const file = (name, path = "") => ({{ name, webkitRelativePath: path }});
const out = {{}};
"""


def test_files_are_sorted_to_their_importer_or_refused_with_why() -> None:
    out = run_node(
        PRELUDE,
        """
        const cases = {
          csv: [file("iris.csv")], tsv: [file("t.TSV")], npz: [file("a.npz")], zip: [file("pets.zip")],
          npy: [file("x.npy"), file("y.npy")],
          folder: [file("a.png", "pets/cat/a.png"), file("b.jpg", "pets/dog/b.jpg")],
          dropped: [{ path: "pets/cat/a.png", file: file("a.png") }],
          one_npy: [file("x.npy")], one_png: [file("a.png")], pngs: [file("a.png"), file("b.png")],
          docx: [file("notes.docx")], none: [], mixed: [file("a.csv"), file("b.npz")],
          empty_folder: [file("readme.txt", "pets/readme.txt")],
        };
        for (const [name, files] of Object.entries(cases)) out[name] = model.describeFiles(files);
        """,
    )
    assert [out[k]["format"] for k in ("csv", "tsv", "npz", "zip", "npy", "folder", "dropped")] == [
        "csv",
        "csv",
        "npz",
        "zip",
        "npy",
        "folder",
        "folder",
    ]
    assert out["folder"]["name"] == "pets" and out["folder"]["label"] == "a folder of 2 images"
    assert out["one_npy"]["why"].startswith("one .npy holds either the features or the labels")
    assert out["one_png"]["why"].startswith("images need one subfolder per class")
    assert out["pngs"]["why"].startswith("images need one subfolder per class")
    assert out["docx"]["why"].startswith("it is not a CSV (.csv, .tsv, .txt), NumPy")
    assert out["none"]["why"] == "no files were given"
    assert out["mixed"]["why"].startswith("give one file (CSV, NPZ or ZIP)")
    assert out["empty_folder"]["why"].startswith("it holds no PNG or JPEG images")


def test_the_labels_npy_is_found_by_its_name() -> None:
    out = run_node(
        PRELUDE,
        """
        const pick = (a, b) => { const r = model.npyRoles([file(a), file(b)]); return [r.x.name, r.y.name]; };
        out.pairs = [pick("y.npy", "x.npy"), pick("features.npy", "labels.npy"), pick("train_y.npy", "train_x.npy"),
                     pick("a.npy", "b.npy"), pick("targets.npy", "inputs.npy")];
        """,
    )
    assert out["pairs"] == [
        ["x.npy", "y.npy"],
        ["features.npy", "labels.npy"],
        ["train_x.npy", "train_y.npy"],
        ["a.npy", "b.npy"],
        ["inputs.npy", "targets.npy"],
    ]


def test_settings_come_from_the_fields_and_a_wrong_field_is_named() -> None:
    out = run_node(
        PRELUDE,
        """
        const fields = { header: "auto", target: "progression", labels: "auto", missing: "drop", stream: true,
                         color: "gray", size: " 32 \u00d7 24 ", fraction: "0.25", seed: "7" };
        out.good = model.importSettings(fields);
        out.size = model.importSettings({ ...fields, size: "big" });
        out.fraction = model.importSettings({ ...fields, fraction: "1" });
        out.seed = model.importSettings({ ...fields, seed: "-1" });
        out.blank = model.importSettings({ ...fields, size: "", target: "", header: "false" });
        """,
    )
    good = out["good"]
    # the target by name, the last column where a file lacks it: never a column index carried to another file
    assert good["csv"] == {
        "header": "auto",
        "target": "progression",
        "ifTargetAbsent": "last",
        "labels": "auto",
        "missing": "drop",
    }
    assert good["images"] == {"color": "gray", "size": {"height": 32, "width": 24}}
    assert good["split"] == {"fraction": 0.25, "seed": 7} and good["stream"] is True
    assert (
        out["size"]["error"] == 'resize to: "big" is not a size like 32\u00d732 (height \u00d7 width, 1 to 1024 each)'
    )
    assert out["fraction"]["error"].startswith("the validation fraction must be a number between 0 and 1")
    assert out["seed"]["error"].startswith("the split seed must be a whole number")
    assert out["blank"]["images"]["size"] is None and out["blank"]["csv"]["target"] is None
    assert out["blank"]["csv"]["header"] is False


def test_the_engine_reads_back_what_the_page_writes() -> None:
    out = run_node(
        PRELUDE,
        """
        const dataset = makeDataset({ name: "pets.zip", exampleShape: [2, 2, 3], featureType: "float32",
          classes: ["cat", "dog"], x: Float32Array.from({ length: 5 * 12 }, (_, i) => (i % 12) / 11),
          y: Int32Array.from([0, 1, 0, 1, 1]) });
        const { train, validation } = splitDataset(dataset, { fraction: 0.4, seed: 1 });
        const hex = (bytes) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("hex");
        const files = { "dataset.json": JSON.stringify(model.dataJson(dataset)) };
        for (const [split, part] of [["train", train], ["test", validation]]) {
          const { features, labels } = engineFiles(part);
          files[`${split}-x`] = hex(features);
          files[`${split}-y`] = hex(labels);
        }
        out.files = files;
        const thumb = model.thumbnailRgba(dataset, 1);
        out.thumb = { width: thumb.width, height: thumb.height, first: Array.from(thumb.rgba.slice(0, 8)) };
        out.flat = model.thumbnailRgba(makeDataset({ ...dataset, exampleShape: [12] }), 0);
        const source = { format: "csv", names: ["age", "bmi", "progression"], target: "progression" };
        const table = makeDataset({ name: "d.csv", exampleShape: [2], featureType: "float32", x: new Float32Array(4),
          y: new Float32Array(2), source });
        out.table = model.dataJson(table);
        """,
    )
    files = {k: v.encode() if k == "dataset.json" else bytes.fromhex(v) for k, v in out["files"].items()}
    train, test, info = from_user_files(files)
    assert (train.n, test.n, info.example_shape, info.classes) == (3, 2, (2, 2, 3), ("cat", "dog"))
    assert json.loads(files["dataset.json"])["label_type"] == "int32"
    assert out["thumb"] == {"width": 2, "height": 2, "first": [0, 23, 46, 255, 70, 93, 116, 255]}
    assert out["flat"] is None
    assert (out["table"]["columns"], out["table"]["target"]) == (["age", "bmi", "progression"], "progression")
    assert (out["files"] and json.loads(files["dataset.json"])["target"]) is None  # images: no table columns


def test_the_card_lists_what_was_read() -> None:
    out = run_node(
        PRELUDE,
        """
        const summary = { name: "shapes.csv", kind: "a CSV table", streamed: true, n: 1200, skippedRows: 3,
          exampleShape: [5], featureType: "float32", target: "size", labels: "classes", classes: ["high", "low"],
          preview: { classCounts: [{ name: "high", count: 600 }, { name: "low", count: 600 }] },
          split: { train: 960, validation: 240, fraction: 0.2, seed: 0 }, hash: "sha256:ab",
          versions: [{ split: "train", sha256: "sha256:cd", examples: 960 },
                     { split: "test", sha256: "sha256:ef", examples: 240 }] };
        out.facts = model.summaryFacts(summary);
        out.regression = model.summaryFacts({ ...summary, target: null, labels: "numbers", classes: null,
          preview: { classCounts: null }, streamed: false, skippedRows: 0 });
        out.record = model.dataRecord("shapes.csv", summary.versions);
        const gpu = { kind: "webgpu", name: "SwiftShader", max_buffer_size: 2 ** 28, max_storage_binding: 2 ** 27 };
        out.onGpu = model.summaryFacts(summary, gpu).at(-1);
        out.tooBig = model.residentText({ ...summary, split: { train: 10 ** 7 } }, gpu);
        const cpu = { kind: "cpu", max_buffer_size: 2 ** 32, max_storage_binding: 2 ** 32 };
        out.onCpu = model.residentText(summary, cpu);
        out.named = model.targetText({ target: "colour", targetChosen: "named", asked: "colour" });
        out.fallback = model.targetText({ target: "size", targetChosen: "fallback", asked: "progression" });
        """,
    )
    assert out["facts"] == [
        ["Read from", "shapes.csv: a CSV table, read in chunks"],
        ["Examples", "1,200 (3 rows with missing values dropped)"],
        ["One example", "[5] float32"],
        ["Target column", "size (the last column)"],
        ["Classes (2)", "high (600), low (600)"],
        ["Split", "960 training, 240 held out (fraction 0.2, seed 0)"],
        ["Data set version", "sha256:ab"],
        ["train split", "sha256:cd (960 examples)"],
        ["held-out split", "sha256:ef (240 examples)"],
    ]
    assert ["Labels", "none: a numeric target (regression)"] in out["regression"]
    assert out["onGpu"] == [
        "On the device",
        "the training split's features take 19,200 bytes, within the 128 MiB one buffer of SwiftShader holds: a "
        "program may keep them there",
    ]
    assert out["tooBig"] == (
        "the training split's features take 190.7 MiB, more than the 128 MiB one buffer of SwiftShader holds: a "
        'program must stream them (memory.data "stream")'
    )
    assert out["onCpu"].endswith("within the 4 GiB one buffer of the CPU path holds: a program may keep them there")
    assert out["named"] == "colour (as chosen)"
    assert out["fallback"] == 'size (the last column: the target chosen before, "progression", is not in this file)'
    assert out["record"]["name"] == "shapes.csv"
    assert [(v["split"], v["examples"]) for v in out["record"]["versions"]] == [("train", 960), ("test", 240)]
