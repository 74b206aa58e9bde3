"""Data import under Node (app/src/data/): CSV files (whole or streamed) with header detection, categories and
missing values; NPY and NPZ arrays written by numpy; image folders zipped by Python with a fake decoder; the
data set's split, content hash and engine byte layout, checked against Python's own computation."""

from __future__ import annotations

import hashlib
import io
import json
import struct
import zipfile
import zlib
from pathlib import Path

import numpy as np
import pytest
from nodejs import run_node

from scellis.datasets import DATA_FILES, from_files
from scellis.manifest.pins import data_versions

ROOT = Path(__file__).resolve().parents[1]
DATA = (ROOT / "app" / "src" / "data").as_uri()

# `plain` makes a data set JSON (typed arrays as lists); `failure` gives the error a call throws, or null.
# The fake decoder reads what fake_image() writes: a PNG signature and IHDR chunk (or a JPEG's start and frame
# header), which give the width and height, then the RGBA bytes.
PRELUDE = f"""
import {{ readFileSync, writeFileSync }} from "node:fs";
import * as data from "{DATA}/index.js";
const out = {{}};
const plain = (d) => ({{ ...d, x: Array.from(d.x), y: Array.from(d.y) }});
const failure = async (run) => {{
  try {{ await run(); }} catch (error) {{
    return {{ name: error.name, message: error.message, file: error.file, entry: error.entry, row: error.row,
      column: error.column }};
  }}
  return null;
}};
const bytes = (path) => new Uint8Array(readFileSync(path));
const decode = async (b, name) => {{
  if (name.includes("broken")) throw new Error("bad Huffman table");
  const view = new DataView(b.buffer, b.byteOffset, b.byteLength);
  const png = b[0] === 0x89;
  const [width, height] = png ? [view.getUint32(16), view.getUint32(20)] : [view.getUint16(9), view.getUint16(7)];
  return {{ width, height, rgba: new Uint8ClampedArray(b.subarray(png ? 33 : 21)) }};
}};
"""


def run_js(body: str, *, gc: bool = False) -> dict:
    return run_node(PRELUDE, body, flags=("--expose-gc",) if gc else (), timeout=120)


def js(value: object) -> str:
    """A Python value as a JavaScript literal."""
    return json.dumps(value)


def csv_error(text: str, options: dict | None = None) -> dict:
    out = run_js(f"out.error = await failure(() => data.parseCsv({js(text)}, 't.csv', {js(options or {})}));")
    assert out["error"] is not None, "the CSV was accepted"
    return out["error"]


# CSV: known answers


def test_a_header_is_detected_and_text_columns_become_sorted_one_hot_blocks() -> None:
    text = "length,color,species\n5.1,red,setosa\n4.9,blue,virginica\n6.0,red,setosa\n"
    out = run_js(f"const d = await data.parseCsv({js(text)}, 'iris.csv'); out.d = plain(d);")
    d = out["d"]
    names = ["length", "color", "species"]  # every column in the file's order, the target's chooser's list
    assert d["source"] == {
        "format": "csv",
        "header": True,
        "names": names,
        "target": "species",
        "targetChosen": "last",
        "asked": None,
        "skippedRows": 0,
    }
    assert d["exampleShape"] == [3] and d["n"] == 3 and d["featureType"] == "float32"
    assert d["classes"] == ["setosa", "virginica"] and d["y"] == [0, 1, 0]
    assert [(c["name"], c["kind"], c["categories"], c["offset"], c["width"]) for c in d["columns"]] == [
        ("length", "number", None, 0, 1),
        ("color", "category", ["blue", "red"], 1, 2),  # sorted, not first-seen (red came first)
    ]
    assert d["x"] == pytest.approx([5.1, 0, 1, 4.9, 1, 0, 6.0, 0, 1], rel=1e-6)


def test_a_numeric_first_row_is_data_and_a_numeric_target_is_a_regression() -> None:
    text = "1,2.5,0.25\n3,4,1.5\n"
    out = run_js(f"""
out.auto = plain(await data.parseCsv({js(text)}, 'r.csv'));
out.classes = plain(await data.parseCsv({js(text)}, 'r.csv', {{ labels: "classes" }}));
out.forced = plain(await data.parseCsv("a,b\\nx,1\\ny,2\\n", 'f.csv', {{ header: false }}));
out.allText = plain(await data.parseCsv("a,b\\nx,p\\n", 'g.csv', {{ header: true }}));
""")
    auto = out["auto"]
    assert auto["source"]["header"] is False and [c["name"] for c in auto["columns"]] == ["A", "B"]
    assert auto["classes"] is None and auto["y"] == [0.25, 1.5] and auto["x"] == [1, 2.5, 3, 4]
    assert out["classes"]["classes"] == ["0.25", "1.5"] and out["classes"]["y"] == [0, 1]
    forced = out["forced"]  # header off: "a" and "x", "y" are one column's categories, "b" a text target
    assert forced["n"] == 3 and forced["columns"][0]["categories"] == ["a", "x", "y"]
    assert forced["classes"] == ["1", "2", "b"] and forced["y"] == [2, 0, 1]
    assert out["allText"]["n"] == 1 and out["allText"]["source"]["target"] == "b"


def test_quotes_crlf_a_bom_blank_lines_and_spaces_are_read_as_a_spreadsheet_reads_them() -> None:
    text = '\ufeffname,"note, quoted",y\r\n"Smith, J.", "say ""hi""\r\nthen go",1\r\n\r\n  Doe  ,plain,2\r\n'
    raw = list(text.encode())
    out = run_js(f"""
const d = await data.parseCsv(new Uint8Array({js(raw)}), 'q.csv');
out.d = plain(d);
out.fromText = plain(await data.parseCsv({js(text)}, 'q.csv'));
out.preview = data.preview(d).table;
""")
    d = out["d"]
    assert d == out["fromText"]
    assert [c["name"] for c in d["columns"]] == ["name", "note, quoted"]  # the BOM is not in the name
    assert d["columns"][0]["categories"] == ["Doe", "Smith, J."]  # unquoted fields are trimmed
    assert d["columns"][1]["categories"] == ["plain", 'say "hi"\r\nthen go']
    assert out["preview"] == {
        "header": ["name", "note, quoted", "y"],
        "rows": [["Smith, J.", 'say "hi"\r\nthen go', 1], ["Doe", "plain", 2]],
    }


def test_the_target_is_chosen_by_name_or_index_and_defaults_to_the_last_column() -> None:
    text = "a,kind,b\n1,x,2\n3,y,4\n"
    out = run_js(f"""
for (const target of [null, "kind", 1, -2, 0]) {{
  const d = await data.parseCsv({js(text)}, 't.csv', {{ target }});
  out[String(target)] = [d.source.target, d.classes, d.columns.map((c) => c.name)];
}}
""")
    assert out["null"] == ["b", None, ["a", "kind"]]
    assert out["kind"] == out["1"] == out["-2"] == ["kind", ["x", "y"], ["a", "b"]]
    assert out["0"] == ["a", None, ["kind", "b"]]


def test_missing_values_are_refused_dropped_or_filled_as_asked() -> None:
    text = "a,c,y\n1,p,0\nNA,q,1\n5,,0\n3,p,1\n"
    out = run_js(f"""
out.drop = plain(await data.parseCsv({js(text)}, 'm.csv', {{ missing: "drop" }}));
out.fill = plain(await data.parseCsv({js(text)}, 'm.csv', {{ missing: "fill" }}));
out.tokens = plain(await data.parseCsv("a,y\\n-,0\\nNA,1\\n", 'm.csv', {{ missingTokens: ["-"], missing: "drop" }}));
""")
    assert out["drop"]["n"] == 2 and out["drop"]["source"]["skippedRows"] == 2 and out["drop"]["y"] == [0, 1]
    fill = out["fill"]
    assert fill["columns"][0]["fill"] == pytest.approx(3.0)  # the mean of 1, 5 and 3
    assert fill["x"] == [1, 1, 0, 3, 0, 1, 5, 0, 0, 3, 1, 0]  # the missing category: all zeros
    assert out["tokens"]["n"] == 1 and out["tokens"]["columns"][0]["categories"] == ["NA"]


# CSV: streaming


def test_a_row_split_anywhere_across_chunks_parses_as_the_whole_file() -> None:
    text = 'city,"quote ""x""",n\r\n"Zürich, CH","a\r\nb",1.5\r\nLyon,é,2\n'
    out = run_js(f"""
const all = new TextEncoder().encode({js(text)});
const whole = JSON.stringify(plain(await data.parseCsv(all, 's.csv')));
out.whole = JSON.parse(whole);
out.splits = 0;
out.mismatches = [];
async function* pieces(cuts) {{
  let from = 0;
  for (const cut of [...cuts, all.length]) {{ yield all.slice(from, cut); from = cut; }}
}}
const check = async (cuts) => {{
  out.splits += 1;
  const got = JSON.stringify(plain(await data.parseCsvStream(pieces(cuts), 's.csv')));
  if (got !== whole) out.mismatches.push(cuts);
}};
for (let i = 1; i < all.length; i++) {{
  await check([i]);
  for (let j = i + 1; j < all.length; j += 3) await check([i, j]);
}}
await check(Array.from({{ length: all.length - 1 }}, (_, i) => i + 1));
const stream = new ReadableStream({{ start(c) {{ c.enqueue(all.slice(0, 9)); c.enqueue(all.slice(9)); c.close(); }} }});
out.readable = JSON.stringify(plain(await data.parseCsvStream(stream, 's.csv'))) === whole;
""")
    assert out["whole"]["columns"][0]["categories"] == ["Lyon", "Zürich, CH"]
    assert out["whole"]["columns"][1]["categories"] == ["a\r\nb", "é"] and out["whole"]["y"] == [1.5, 2]
    assert out["splits"] > 400 and out["mismatches"] == []
    assert out["readable"] is True


def test_a_large_stream_is_parsed_chunk_by_chunk_and_never_held_whole() -> None:
    rows = 200_000
    out = run_js(
        f"""
const ROWS = {rows};
const CHUNK = 64 * 1024;
const line = (i) => `${{i}},${{(i % 97) / 4}},${{"abc"[i % 3]}},${{i % 5 ? "no" : "yes"}}\\n`;
const encoder = new TextEncoder();
let progress = {{ bytes: 0, rows: 0 }};
out.pulls = [];  // whenever a chunk is asked for: [bytes sent, lines sent, bytes taken, rows read]
const refs = [];
// Chunks of exactly CHUNK bytes (rows and UTF-8 split anywhere), made as they are asked for.
async function* generate() {{
  let pending = encoder.encode("i,half,letter,label\\n");
  let sent = 0, lines = 0;
  for (let i = 0; i <= ROWS; ) {{
    let text = "";
    while (i < ROWS && pending.length + text.length < CHUNK) text += line(i++);
    if (i === ROWS) i += 1;
    const more = encoder.encode(text);
    const all = new Uint8Array(pending.length + more.length);
    all.set(pending);
    all.set(more, pending.length);
    const cut = i > ROWS ? all.length : CHUNK;
    const chunk = all.slice(0, cut);
    pending = all.slice(cut);
    // A macrotask turn, then a collection: chunks the parser let go of are gone.
    await new Promise((resolve) => setImmediate(resolve));
    globalThis.gc();
    out.pulls.push([sent, lines, progress.bytes, progress.rows]);
    refs.push(new WeakRef(chunk));
    sent += chunk.length;
    lines += chunk.filter((b) => b === 10).length;
    yield chunk;
  }}
  out.sent = sent;
}}
const d = await data.parseCsvStream(generate(), "big.csv", {{ onProgress: (p) => (progress = p) }});
out.alive = refs.slice(0, -2).filter((ref) => ref.deref() !== undefined).length;
out.progress = progress;
out.n = d.n;
out.classes = d.classes;
out.yes = d.y.reduce((a, b) => a + b, 0);
out.width = d.exampleShape[0];
let sumI = 0, sumHalf = 0, bs = 0;
for (let r = 0; r < d.n; r++) {{ sumI += d.x[r * 5]; sumHalf += d.x[r * 5 + 1]; bs += d.x[r * 5 + 3]; }}
Object.assign(out, {{ sumI, sumHalf, bs, last: Array.from(d.x.subarray(-5)) }});
""",
        gc=True,
    )
    assert out["n"] == rows and out["classes"] == ["no", "yes"] and out["yes"] == rows // 5
    assert out["width"] == 5  # i, half, and a one-hot of a, b, c
    assert out["sumI"] == sum(range(rows)) and out["bs"] == len(range(1, rows, 3))
    assert out["sumHalf"] == pytest.approx(sum((i % 97) / 4 for i in range(rows)), rel=1e-9)
    assert out["last"] == [rows - 1, ((rows - 1) % 97) / 4, 0, 1, 0]
    assert out["progress"] == {"bytes": out["sent"], "rows": rows + 1} and out["sent"] > 3_000_000
    # Streamed, not read whole first: when each chunk is asked for, the parser has taken every chunk
    # before it and read each row those chunks completed.
    assert len(out["pulls"]) > 40
    for sent, lines, taken, read in out["pulls"]:
        assert (taken, read) == (sent, lines)
    assert out["alive"] == 0  # no earlier chunk is kept (a list of chunks to join later would keep them all)


def test_a_stream_refused_midway_is_cancelled_and_read_no_further() -> None:
    out = run_js("""
out.pulls = 0;
const rows = ["a,b\\n", "1,2\\n", "3,NA\\n", "5,6\\n", "7,8\\n", "9,10\\n"];
const stream = new ReadableStream({
  pull(controller) { controller.enqueue(new TextEncoder().encode(rows[out.pulls++])); },
  cancel(reason) { out.cancelled = reason ?? "no reason"; },
}, { highWaterMark: 0 });
out.error = await failure(() => data.parseCsvStream(stream, "s.csv"));
""")
    assert out["error"]["message"].startswith('s.csv: row 3, column B ("b"): the value is missing ("NA")')
    assert out["cancelled"] == "no reason" and out["pulls"] == 3


# CSV: every error names the file, the row and the column


@pytest.mark.parametrize(
    ("text", "options", "row", "column", "said"),
    [
        ("a,b\n1,2\n3,NA\n", {}, 3, 'B ("b")', 'the value is missing ("NA")'),
        ("a,b\n1,2\n3\n", {}, 3, 'B ("b")', "the row has 1 fields where the first row has 2: it is missing"),
        ("a,b\n1,2\n3,4,5\n", {}, 3, "C", "the row has 3 fields where the first row has 2: it is one too many"),
        ('a,b\n1,2\n3,"4\n5,6\n', {}, 3, 'B ("b")', "a quoted field is never closed"),
        ('a,b\n1,"2"x\n', {}, 2, 'B ("b")', "text follows a quoted field's closing quote"),
        ("a,b\n1,2\n1e39,0\n", {}, 3, 'A ("a")', '"1e39" is beyond float32\'s range'),
        ("a,y\n1,cat\n2,dog\n", {"labels": "numbers"}, 2, 'B ("y")', 'the target holds text ("cat"), not a number'),
        ("a,y\n1,0\n2,?\n", {"missing": "fill"}, 3, 'B ("y")', 'the target is missing ("?"), and a target cannot'),
        ("a,b,y\n1,x,0\n2,y,1\n3,z,0\n", {"maxCategories": 2}, 4, 'B ("b")', "holds more than 2 distinct values"),
    ],
)
def test_a_bad_cell_is_named_by_file_row_and_column(text: str, options: dict, row: int, column: str, said: str) -> None:
    error = csv_error(text, options)
    assert error["name"] == "DataError" and error["file"] == "t.csv"
    assert (error["row"], error["column"]) == (row, column)
    assert error["message"].startswith(f"t.csv: row {row}, column {column}: {said}"), error["message"]


@pytest.mark.parametrize(
    ("text", "options", "message"),
    [
        ("", {}, "t.csv: is empty: it holds no rows"),
        ("\n\n", {}, "t.csv: is empty: it holds no rows"),
        ("a,b\n", {"header": True}, "t.csv: holds no data rows"),
        ("a,b\n1,2\n", {"target": "c"}, 't.csv: has no column named "c" (the first row holds "a", "b")'),
        ("a,b\n1,2\n", {"target": "a", "header": False}, 't.csv: has no column named "a"'),
        ("a,b\n1,2\n", {"target": 2}, "t.csv: has 2 columns, so column index 2 names none of them"),
        ("y\n1\n", {}, "t.csv: has no feature columns besides the target"),
        ("a,y\nNA,0\n?,1\n", {"missing": "fill"}, 't.csv: column A ("a"): the column has no value in any row'),
    ],
)
def test_a_bad_file_is_named_with_the_reason(text: str, options: dict, message: str) -> None:
    assert csv_error(text, options)["message"].startswith(message)


def test_text_that_is_not_utf8_is_refused_with_its_row() -> None:
    out = run_js("""
const b = new Uint8Array([...new TextEncoder().encode("a,b\\n1,2\\n3,"), 0xff, 0x0a]);
out.error = await failure(() => data.parseCsv(b, 'latin.csv'));
""")
    assert out["error"]["message"] == (
        'latin.csv: row 3, column B ("b"): is not UTF-8 text (a byte here is no UTF-8 character): '
        "save the file as CSV UTF-8"
    )


def test_options_that_are_none_of_their_choices_are_refused() -> None:
    error = csv_error("a,b\n1,2\n", {"missing": "ignore"})
    assert error["name"] == "TypeError" and 'missing must be one of "refuse", "drop", "fill"' in error["message"]


# NPY and NPZ


def npy(array: np.ndarray, version: tuple[int, int] = (1, 0)) -> bytes:
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, array, version=version, allow_pickle=False)
    return buffer.getvalue()


def npz(compressed: bool = False, **arrays: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    (np.savez_compressed if compressed else np.savez)(buffer, **arrays)
    return buffer.getvalue()


DTYPES = ["<f4", "<f8", "<i4", "<i8", "|u1", "|b1"]


def test_npy_of_each_dtype_and_version_reads_as_numpy_wrote_it(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    cases = []
    for dtype in DTYPES:
        for version in [(1, 0), (2, 0), (3, 0)]:
            x = (rng.standard_normal((4, 2, 3)) * 50).astype(dtype)
            y = np.array([0, 2, 1, 2], dtype=dtype if dtype != "|b1" else "|u1")
            if dtype == "|b1":
                y = np.array([True, False, True, True])
            path = tmp_path / f"{dtype[1:]}-{version[0]}.npy"
            path.write_bytes(npy(x, version))
            (tmp_path / f"y-{path.name}").write_bytes(npy(y, version))
            cases.append((dtype, version[0], str(path), str(tmp_path / f"y-{path.name}"), x, y))
    out = run_js(f"""
out.read = {{}};
for (const [dtype, version, xPath, yPath] of {js([c[:4] for c in cases])}) {{
  const d = data.datasetFromNpyPair({{ bytes: bytes(xPath), name: "x.npy" }}, {{ bytes: bytes(yPath), name: "y.npy" }});
  out.read[`${{dtype}} v${{version}}`] = plain(d);
}}
""")
    for dtype, version, _, _, x, y in cases:
        d = out["read"][f"{dtype} v{version}"]
        assert d["exampleShape"] == [2, 3] and d["n"] == 4, dtype
        assert d["x"] == x.astype(np.float32).ravel().tolist(), dtype
        if dtype in ("<f4", "<f8"):  # float labels: a regression target
            assert d["classes"] is None and d["y"] == y.astype(np.float32).tolist()
        else:
            assert d["y"] == y.astype(int).tolist() and d["classes"] == [str(i) for i in range(int(y.max()) + 1)]


def test_fortran_order_is_reordered_and_int32_features_are_kept_as_integers(tmp_path: Path) -> None:
    x = np.asfortranarray(np.arange(24, dtype="<i8").reshape(2, 3, 4) * 1000)
    assert x.flags.f_contiguous and not x.flags.c_contiguous
    path = tmp_path / "f.npz"
    path.write_bytes(npz(x=x, y=np.array([1, 0])))
    out = run_js(f"""
out.f = plain(data.datasetFromNpz(bytes({js(str(path))}), "f.npz", {{ featureType: "int32" }}));
out.float = plain(data.datasetFromNpz(bytes({js(str(path))}), "f.npz"));
""")
    assert out["f"]["featureType"] == "int32" and out["f"]["x"] == np.ascontiguousarray(x).ravel().tolist()
    assert out["float"]["featureType"] == "float32" and out["float"]["x"] == out["f"]["x"]


def test_npz_arrays_are_x_and_y_or_the_first_two_or_as_named(tmp_path: Path) -> None:
    x = np.arange(6, dtype="<f4").reshape(3, 2)
    files = {
        "xy.npz": npz(y=np.array([1, 0, 1]), x=x, extra=np.zeros(1)),
        "positional.npz": npz(arr_0=x, arr_1=np.array([0.5, 1.5, 2.5])),
        "named.npz": npz(compressed=True, images=x, targets=np.array([2, 0, 1], dtype="<i8")),
    }
    for name, content in files.items():
        (tmp_path / name).write_bytes(content)
    out = run_js(f"""
const at = (name) => bytes({js(str(tmp_path))} + "/" + name);
const summary = (d) => [d.source, d.x.length, Array.from(d.y), d.classes];
out.xy = summary(data.datasetFromNpz(at("xy.npz"), "xy.npz"));
out.preview = data.preview(data.datasetFromNpz(at("xy.npz"), "xy.npz"), {{ rows: 2 }});
out.positional = summary(data.datasetFromNpz(at("positional.npz"), "positional.npz"));
out.named = summary(data.datasetFromNpz(at("named.npz"), "named.npz", {{ x: "images", y: "targets.npy" }}));
out.missing = await failure(() => data.datasetFromNpz(at("positional.npz"), "p.npz", {{ x: "arr_0", y: "x" }}));
""")
    assert out["xy"] == [{"format": "npz", "x": "x.npy", "y": "y.npy"}, 6, [1, 0, 1], ["0", "1"]]
    assert out["preview"]["table"] == {"header": ["x[0]", "x[1]", "label"], "rows": [[0, 1, "1"], [2, 3, "0"]]}
    assert out["positional"] == [{"format": "npz", "x": "arr_0.npy", "y": "arr_1.npy"}, 6, [0.5, 1.5, 2.5], None]
    assert out["named"] == [{"format": "npz", "x": "images.npy", "y": "targets.npy"}, 6, [2, 0, 1], ["0", "1", "2"]]
    assert out["missing"]["message"] == 'p.npz: has no array "x" for the labels (its arrays: "arr_0", "arr_1")'


def npy_error(tmp_path: Path, x: bytes, y: bytes, options: dict | None = None) -> dict:
    (tmp_path / "bad.npz").write_bytes(zip_of({"x.npy": x, "y.npy": y}))
    out = run_js(f"""
const archive = bytes({js(str(tmp_path / "bad.npz"))});
out.error = await failure(() => data.datasetFromNpz(archive, "bad.npz", {js(options or {})}));
""")
    assert out["error"] is not None, "the arrays were accepted"
    return out["error"]


def zip_of(entries: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, content in entries.items():
            archive.writestr(name, content)
    return buffer.getvalue()


GOOD_X = npy(np.zeros((3, 2), dtype="<f4"))
GOOD_Y = npy(np.array([0, 1, 0]))
INT32 = {"featureType": "int32"}


@pytest.mark.parametrize(
    ("x", "y", "options", "entry", "said"),
    [
        (b"PK not numpy", GOOD_Y, {}, "x.npy", "is not a NumPy .npy array"),
        (GOOD_X[:6] + b"\x04\x00" + GOOD_X[8:], GOOD_Y, {}, "x.npy", "is a .npy file of format version 4.0"),
        (npy(np.zeros((3, 2), dtype=">f4")), GOOD_Y, {}, "x.npy", "holds big-endian numbers (>f4); save it little"),
        (npy(np.zeros((3, 2), dtype="<f2")), GOOD_Y, {}, "x.npy", "has dtype <f2; the dtypes read are <f4, <f8"),
        (npy(np.zeros(3, dtype=[("a", "<f4"), ("b", "<i4")])), GOOD_Y, {}, "x.npy", "holds a structured array"),
        (GOOD_X[:-4], GOOD_Y, {}, "x.npy", "holds 20 bytes of data, but shape (3, 2) of <f4 takes 24"),
        (npy(np.array([[0, 1], [np.nan, 2], [3, 4]], dtype="<f8")), GOOD_Y, {}, "x.npy", "element [1, 0] is NaN"),
        (npy(np.array([[1e39, 0]] * 3)), GOOD_Y, {}, "x.npy", "element [0, 0] is 1e+39 as float32; features must"),
        (npy(np.array([[2**40]] * 3)), GOOD_Y, INT32, "x.npy", "element [0, 0] is 1099511627776, which"),
        (npy(np.zeros((3, 1), dtype="<f4")), GOOD_Y, INT32, "x.npy", "holds <f4 values; int32 features need"),
        (GOOD_X, npy(np.array([0, 2**40, 1])), {}, "y.npy", "label 1 is 1099511627776; class labels must be whole"),
        (GOOD_X, npy(np.array([0, -1, 1])), {}, "y.npy", "label 1 is -1; class labels must be whole numbers"),
        (GOOD_X, npy(np.array([0, 1.5, 1])), {"labels": "classes"}, "y.npy", "label 1 is 1.5; class labels"),
        (GOOD_X, npy(np.array([0, 1])), {}, "y.npy", "holds 2 labels, but the features hold 3 examples"),
        (GOOD_X, npy(np.zeros((3, 2), dtype="<i4")), {}, "y.npy", "has shape (3, 2); labels must have shape (n,)"),
        (GOOD_X, GOOD_Y, {"classes": ["only"]}, "y.npy", "has label 1, but 1 class names were given"),
    ],
)
def test_bad_arrays_are_named_by_file_and_entry(
    tmp_path: Path, *, x: bytes, y: bytes, options: dict, entry: str, said: str
) -> None:
    error = npy_error(tmp_path, x, y, options)
    assert (error["file"], error["entry"]) == ("bad.npz", entry)
    assert error["message"].startswith(f'bad.npz: entry "{entry}": {said}'), error["message"]


def test_an_archive_that_is_no_zip_or_lacks_arrays_is_refused(tmp_path: Path) -> None:
    (tmp_path / "one.npz").write_bytes(npz(x=np.zeros((2, 2))))
    (tmp_path / "text.npz").write_bytes(b"not a zip at all")
    out = run_js(f"""
const at = (name) => bytes({js(str(tmp_path))} + "/" + name);
out.one = await failure(() => data.datasetFromNpz(at("one.npz"), "one.npz"));
out.text = await failure(() => data.datasetFromNpz(at("text.npz"), "text.npz"));
out.same = await failure(() => data.datasetFromNpz(at("one.npz"), "one.npz", {{ x: "x", y: "x" }}));
""")
    assert out["one"]["message"] == 'one.npz: holds 1 array(s) ("x"); a data set needs two, features and labels'
    assert out["text"]["message"].startswith("text.npz: is not a readable ZIP archive")
    assert out["same"]["message"] == 'one.npz: entry "x.npy": is named for both the features and the labels'


# Images


def image_header(width: int, height: int, jpeg: bool = False) -> bytes:
    """A PNG's signature and IHDR chunk, or a JPEG's start and baseline frame header: what gives the size."""
    if jpeg:
        return b"\xff\xd8\xff\xc0" + struct.pack(">HBHHB", 17, 8, height, width, 3) + bytes(9)
    ihdr = b"IHDR" + struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + ihdr + struct.pack(">I", zlib.crc32(ihdr))


def fake_image(width: int, height: int, rgba: list[int], jpeg: bool = False) -> bytes:
    assert len(rgba) == width * height * 4
    return image_header(width, height, jpeg) + bytes(rgba)


OUTSIDE = "lies outside any class folder: put each image in a folder named for its class"


def gray_pixels(values: list[int]) -> list[int]:
    return [c for v in values for c in (v, v, v, 255)]


def test_an_image_zip_gives_sorted_classes_from_its_folders(tmp_path: Path) -> None:
    red_green = [255, 0, 0, 255, 0, 255, 0, 128]  # 2x1: red, then half-transparent green
    entries = {
        "pets/": b"",
        "pets/dog/": b"",
        "pets/dog/b.png": fake_image(2, 1, red_green),
        "pets/dog/a.jpg": fake_image(2, 1, gray_pixels([0, 51]), jpeg=True),
        "pets/cat/deeper/c.PNG": fake_image(2, 1, gray_pixels([255, 102])),
        "pets/cat/.DS_Store": b"junk",
        "__MACOSX/pets/cat/._c.PNG": b"junk",
    }
    (tmp_path / "pets.zip").write_bytes(zip_of(entries))
    out = run_js(f"""
const zip = bytes({js(str(tmp_path / "pets.zip"))});
out.gray = plain(await data.imagesFromZip(zip, "pets.zip", {{ decode, color: "gray" }}));
out.rgb = plain(await data.imagesFromZip(zip, "pets.zip", {{ decode, color: "rgb" }}));
out.preview = data.preview(await data.imagesFromZip(zip, "pets.zip", {{ decode, color: "gray" }}));
""")
    gray = out["gray"]
    assert gray["classes"] == ["cat", "dog"] and gray["y"] == [0, 1, 1]
    assert gray["source"]["paths"] == ["cat/deeper/c.PNG", "dog/a.jpg", "dog/b.png"]
    assert gray["exampleShape"] == [1, 2, 1]
    expected = [1, 0.4, 0, 0.2, 0.299, 0.587]  # BT.601 luma of red and of green; alpha is dropped
    assert gray["x"] == pytest.approx(expected, abs=1e-6)
    assert out["rgb"]["exampleShape"] == [1, 2, 3] and out["rgb"]["x"][-6:] == [1, 0, 0, 0, 1, 0]
    assert out["preview"]["classCounts"] == [{"name": "cat", "count": 1}, {"name": "dog", "count": 2}]
    assert out["preview"]["thumbnails"] == [0, 1, 2] and out["preview"]["table"] is None


def test_a_folders_files_are_read_by_their_relative_paths_and_resized_when_asked() -> None:
    out = run_js(f"""
const file = (path, b) => ({{ webkitRelativePath: path, name: path.split("/").pop(),
  arrayBuffer: async () => new Uint8Array(b).buffer }});
const files = [
  file("picked/b/one.png", {js(list(fake_image(2, 2, gray_pixels([0, 100, 200, 100]))))}),
  file("picked/a/two.png", {js(list(fake_image(2, 1, gray_pixels([40, 200]))))}),
];
const sized = (width) => ({{ decode, color: "gray", size: {{ height: 1, width }} }});
out.down = plain(await data.imagesFromFiles(files, "picked", sized(1)));
out.up = plain(await data.imagesFromFiles(files, "picked", sized(4)));
out.progress = [];
await data.imagesFromFiles(files, "picked", {{ decode, color: "rgb", size: {{ height: 2, width: 2 }},
  onProgress: (p) => out.progress.push(p) }});
""")
    assert out["down"]["classes"] == ["a", "b"] and out["down"]["exampleShape"] == [1, 1, 1]
    assert out["down"]["x"] == pytest.approx([120 / 255, 100 / 255], rel=1e-6)  # 1x1: the mean of the pixels
    # 2 -> 4 wide: centres at -0.25 (clamped), 0.25, 0.75 and 1.25 (clamped) of the source's.
    assert out["up"]["x"][:4] == pytest.approx([40 / 255, 80 / 255, 160 / 255, 200 / 255], rel=1e-6)
    assert out["progress"] == [{"done": 1, "total": 2}, {"done": 2, "total": 2}]


@pytest.mark.parametrize(
    ("entries", "options", "message"),
    [
        (
            {"cat/a.png": fake_image(1, 1, [0] * 4), "notes.png": fake_image(1, 1, [0] * 4)},
            {},
            'set.zip: entry "notes.png": ' + OUTSIDE,
        ),
        (
            {"cat/a.png": fake_image(1, 1, [0] * 4), "dog/": b"", "dog/.DS_Store": b"x"},
            {},
            'set.zip: entry "dog/": is a class folder with no PNG or JPEG image',
        ),
        (
            {"cat/a.png": fake_image(1, 1, [0] * 4), "cat/a.gif": b"GIF89a"},
            {},
            'set.zip: entry "cat/a.gif": is not a PNG or JPEG image (.png, .jpg or .jpeg)',
        ),
        (
            {"cat/a.png": fake_image(1, 1, [0] * 4), "cat/b.png": fake_image(2, 1, [0] * 8)},
            {},
            'set.zip: entry "cat/b.png": is 2x1 pixels but cat/a.png is 1x1: give a size to resize them all to',
        ),
        (
            {"cat/broken.png": fake_image(1, 1, [0] * 4)},
            {},
            'set.zip: entry "cat/broken.png": could not be decoded (bad Huffman table)',
        ),
        (
            {"cat/a.png": b"GIF89a...."},
            {},
            'set.zip: entry "cat/a.png": is neither PNG nor JPEG inside (its first bytes are 47 49 46 38)',
        ),
        (
            {"cat/a.png": fake_image(1, 1, [0] * 4)[:-1]},
            {},
            'set.zip: entry "cat/a.png": was decoded to 1x1 pixels with 3 RGBA bytes, which do not agree',
        ),
        (
            {"readme.txt": b"hi"},
            {},
            'set.zip: entry "readme.txt": ' + OUTSIDE,
        ),
        ({}, {}, "set.zip: holds no class folders of images"),
    ],
)
def test_a_bad_image_folder_names_the_entry(tmp_path: Path, entries: dict, options: dict, message: str) -> None:
    (tmp_path / "set.zip").write_bytes(zip_of(entries))
    out = run_js(f"""
const settings = {{ decode, color: "gray", ...{js(options)} }};
out.error = await failure(() => data.imagesFromZip(bytes({js(str(tmp_path / "set.zip"))}), "set.zip", settings));
""")
    assert out["error"] is not None and out["error"]["message"] == message


def test_images_need_a_decoder_and_an_explicit_color() -> None:
    out = run_js("""
const zip = new Uint8Array(0);
out.color = await failure(() => data.imagesFromZip(zip, "z.zip", { decode }));
out.decode = await failure(() => data.imagesFromZip(zip, "z.zip", { color: "rgb" }));
out.notZip = await failure(() => data.imagesFromZip(new Uint8Array([1, 2, 3]), "z.zip", { decode, color: "rgb" }));
""")
    assert out["color"]["message"] == 'images need color "gray" or "rgb", not null'
    assert out["decode"]["message"] == "images need a decode(bytes, name) function"
    assert out["notZip"]["message"].startswith("z.zip: is not a readable ZIP archive")


# The data set: split, content hash, engine layout


def mulberry32(seed: int):
    """An independent Python mulberry32, to check the JavaScript permutation against."""
    mask = 0xFFFFFFFF
    state = seed
    while True:
        state = (state + 0x6D2B79F5) & mask
        t = ((state ^ (state >> 15)) * (state | 1)) & mask
        t = (((t + (((t ^ (t >> 7)) * (t | 61)) & mask)) & mask) ^ t) & mask
        yield (t ^ (t >> 14)) & mask


def python_permutation(n: int, seed: int) -> list[int]:
    order = list(range(n))
    numbers = mulberry32(seed)
    for i in range(n - 1, 0, -1):
        j = next(numbers) * (i + 1) >> 32
        order[i], order[j] = order[j], order[i]
    return order


def test_the_split_is_a_seeded_permutation_reproduced_independently() -> None:
    out = run_js("""
out.perm = Array.from(data.permutation(1000, 7));
out.again = data.splitIndices(1000, { seed: 7 });
out.same = JSON.stringify(data.splitIndices(1000, { seed: 7 })) === JSON.stringify(out.again);
out.other = data.splitIndices(1000, { seed: 8 });
out.sizes = [[10, 0.2], [10, 0.01], [10, 0.99], [1, 0.5], [10, 0]].map(([n, fraction]) => {
  const s = data.splitIndices(n, { fraction });
  return [s.train.length, s.validation.length];
});
out.bad = [
  await failure(() => data.splitIndices(10, { fraction: 1 })),
  await failure(() => data.splitIndices(10, { seed: -1 })),
];
""")
    assert out["perm"] == python_permutation(1000, 7)
    validation = out["again"]["validation"]
    assert out["same"] and validation == sorted(python_permutation(1000, 7)[:200])
    assert sorted(validation + out["again"]["train"]) == list(range(1000))
    assert out["other"]["validation"] != validation and len(out["other"]["validation"]) == 200
    assert out["sizes"] == [[8, 2], [9, 1], [1, 9], [1, 0], [10, 0]]
    assert [e["name"] for e in out["bad"]] == ["RangeError", "RangeError"]


def canonical(x: np.ndarray, y: np.ndarray, shape: list[int], classes: list[str] | None) -> bytes:
    """The content hash's layout, written from its documentation."""

    def text(value: str) -> bytes:
        raw = value.encode()
        return struct.pack("<I", len(raw)) + raw

    head = text("scellis.dataset/1") + text("float32") + struct.pack(f"<{len(shape) + 1}I", len(shape), *shape)
    head += text("float32" if classes is None else "int32") + struct.pack("<2I", len(y), len(classes or []))
    head += b"".join(text(name) for name in classes or [])
    return head + x.astype("<f4").tobytes() + y.astype("<f4" if classes is None else "<i4").tobytes()


def test_the_content_hash_is_sha256_of_the_documented_bytes_whatever_the_file(tmp_path: Path) -> None:
    x = np.array([[0.1, 2.0], [3.5, -4.25], [1e-3, 7.0]], dtype="<f4")
    y = np.array([1, 0, 2])
    (tmp_path / "same.npz").write_bytes(npz(x=x, y=y))
    (tmp_path / "regression.npz").write_bytes(npz(x=x, y=np.array([0.5, 1, 2], dtype="<f8")))
    csv = "a,b,label\n0.1,2,1\n3.5,-4.25,0\n0.001,7,2\n"
    out = run_js(f"""
const fromCsv = await data.parseCsv({js(csv)}, "same.csv", {{ labels: "classes" }});
out.csv = await data.contentHash(fromCsv);
out.npz = await data.contentHash(data.datasetFromNpz(bytes({js(str(tmp_path / "same.npz"))}), "same.npz"));
out.regression = await data.contentHash(data.datasetFromNpz(bytes({js(str(tmp_path / "regression.npz"))}), "r.npz"));
fromCsv.y[0] = 0;
out.changed = await data.contentHash(fromCsv);
""")
    expected = "sha256:" + hashlib.sha256(canonical(x, y, [2], ["0", "1", "2"])).hexdigest()
    assert out["csv"] == out["npz"] == expected
    regression = canonical(x, np.array([0.5, 1, 2]), [2], None)
    assert out["regression"] == "sha256:" + hashlib.sha256(regression).hexdigest()
    assert out["changed"] != expected


def test_a_split_written_as_the_engines_files_reads_back_with_the_engines_hash(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    x = rng.integers(0, 17, (50, 64)).astype("<f4") / 16  # digits-like: 64 pixels, 10 classes
    y = rng.integers(0, 10, 50)
    (tmp_path / "d.npz").write_bytes(npz(x=x, y=y))
    out = run_js(f"""
const d = data.datasetFromNpz(bytes({js(str(tmp_path / "d.npz"))}), "d.npz");
const {{ train, validation }} = data.splitDataset(d, {{ fraction: 0.2, seed: 42 }});
out.indices = data.splitIndices(d.n, {{ fraction: 0.2, seed: 42 }});
const names = {js(list(DATA_FILES))};
[train, validation].forEach((split, i) => {{
  const files = data.engineFiles(split);
  writeFileSync({js(str(tmp_path))} + "/" + names[2 * i], files.features);
  writeFileSync({js(str(tmp_path))} + "/" + names[2 * i + 1], files.labels);
}});
out.versions = [await data.dataVersion("train", train), await data.dataVersion("test", validation)];
""")
    files = {name: (tmp_path / name).read_bytes() for name in DATA_FILES}
    train, test = from_files(files)  # the engine's own reader accepts the files
    assert [v.__dict__ | {"shape": list(v.shape)} for v in data_versions(train, test)] == out["versions"]
    rows = out["indices"]
    assert train.features == x[rows["train"]].tobytes() and test.labels == y[rows["validation"]].astype("<i4").tobytes()
    assert out["versions"][1]["examples"] == 10


def test_a_table_preview_shows_the_files_values() -> None:
    text = "n,c,y\n1,b,yes\n2,a,no\n3,b,yes\n"
    out = run_js(f"""
const d = await data.parseCsv({js(text)}, "p.csv", {{ missing: "fill" }});
out.p = data.preview(d, {{ rows: 2 }});
""")
    assert out["p"]["table"] == {"header": ["n", "c", "y"], "rows": [[1, "b", "yes"], [2, "a", "no"]]}
    assert out["p"]["classCounts"] == [{"name": "no", "count": 1}, {"name": "yes", "count": 2}]
    assert out["p"]["thumbnails"] is None and out["p"]["n"] == 3
