// Data import under Node (app/src/data/): CSV files (whole or streamed) with header detection, categories and
// missing values; NPY and NPZ arrays written by numpy; image folders zipped by Python with a fake decoder; the
// data set's split, content hash and engine byte layout, checked against Python's own computation (the
// inputs and expected values of tests/js_data_inputs.py; tests/test_js.py reads the engine files back).
import assert from "node:assert/strict";
import { test } from "node:test";
import v8 from "node:v8";
import vm from "node:vm";
import * as data from "../../app/src/data/index.js";
import { assertClose, failure, forPython, plain, pythonInputs } from "./lib.js";

const input = pythonInputs("data_import");
const bytes = (text) => new Uint8Array(Buffer.from(text, "base64"));
// A data set as JSON shows it, its typed arrays as lists.
const seen = (d) => plain({ ...d, x: Array.from(d.x), y: Array.from(d.y) });
// The fake decoder reads what js_data_inputs.fake_image writes: a PNG signature and IHDR chunk (or a JPEG's
// start and frame header), which give the width and height, then the RGBA bytes.
const decode = async (b, name) => {
  if (name.includes("broken")) throw new Error("bad Huffman table");
  const view = new DataView(b.buffer, b.byteOffset, b.byteLength);
  const png = b[0] === 0x89;
  const [width, height] = png ? [view.getUint32(16), view.getUint32(20)] : [view.getUint16(9), view.getUint16(7)];
  return { width, height, rgba: new Uint8ClampedArray(b.subarray(png ? 33 : 21)) };
};
const csvError = async (text, options = {}) => {
  const error = await failure(() => data.parseCsv(text, "t.csv", options));
  assert.notEqual(error, null, "the CSV was accepted");
  return error;
};
const range = (n) => Array.from({ length: n }, (_, i) => i);
const numbers = (list) => [...list].sort((a, b) => a - b);

// CSV: known answers

test("a header is detected and text columns become sorted one-hot blocks", async () => {
  const text = "length,color,species\n5.1,red,setosa\n4.9,blue,virginica\n6.0,red,setosa\n";
  const d = seen(await data.parseCsv(text, "iris.csv"));
  const names = ["length", "color", "species"]; // every column in the file's order, the target's chooser's list
  assert.deepEqual(d.source, {
    format: "csv",
    header: true,
    names,
    target: "species",
    targetChosen: "last",
    asked: null,
    skippedRows: 0,
  });
  assert.deepEqual([d.exampleShape, d.n, d.featureType], [[3], 3, "float32"]);
  assert.deepEqual(d.classes, ["setosa", "virginica"]);
  assert.deepEqual(d.y, [0, 1, 0]);
  assert.deepEqual(
    d.columns.map((c) => [c.name, c.kind, c.categories, c.offset, c.width]),
    [
      ["length", "number", null, 0, 1],
      ["color", "category", ["blue", "red"], 1, 2], // sorted, not first-seen (red came first)
    ],
  );
  assertClose(d.x, [5.1, 0, 1, 4.9, 1, 0, 6.0, 0, 1], { rel: 1e-6 });
});

test("a numeric first row is data and a numeric target is a regression", async () => {
  const text = "1,2.5,0.25\n3,4,1.5\n";
  const auto = seen(await data.parseCsv(text, "r.csv"));
  const classes = seen(await data.parseCsv(text, "r.csv", { labels: "classes" }));
  const forced = seen(await data.parseCsv("a,b\nx,1\ny,2\n", "f.csv", { header: false }));
  const allText = seen(await data.parseCsv("a,b\nx,p\n", "g.csv", { header: true }));
  assert.equal(auto.source.header, false);
  assert.deepEqual(
    auto.columns.map((c) => c.name),
    ["A", "B"],
  );
  assert.equal(auto.classes, null);
  assert.deepEqual(auto.y, [0.25, 1.5]);
  assert.deepEqual(auto.x, [1, 2.5, 3, 4]);
  assert.deepEqual(classes.classes, ["0.25", "1.5"]);
  assert.deepEqual(classes.y, [0, 1]);
  // header off: "a" and "x", "y" are one column's categories, "b" a text target
  assert.equal(forced.n, 3);
  assert.deepEqual(forced.columns[0].categories, ["a", "x", "y"]);
  assert.deepEqual(forced.classes, ["1", "2", "b"]);
  assert.deepEqual(forced.y, [2, 0, 1]);
  assert.equal(allText.n, 1);
  assert.equal(allText.source.target, "b");
});

test("quotes, CRLF, a BOM, blank lines and spaces are read as a spreadsheet reads them", async () => {
  const text = '\ufeffname,"note, quoted",y\r\n"Smith, J.", "say ""hi""\r\nthen go",1\r\n\r\n  Doe  ,plain,2\r\n';
  const read = await data.parseCsv(new TextEncoder().encode(text), "q.csv");
  const d = seen(read);
  assert.deepEqual(d, seen(await data.parseCsv(text, "q.csv")));
  assert.deepEqual(
    d.columns.map((c) => c.name),
    ["name", "note, quoted"],
  ); // the BOM is not in the name
  assert.deepEqual(d.columns[0].categories, ["Doe", "Smith, J."]); // unquoted fields are trimmed
  assert.deepEqual(d.columns[1].categories, ["plain", 'say "hi"\r\nthen go']);
  assert.deepEqual(plain(data.preview(read).table), {
    header: ["name", "note, quoted", "y"],
    rows: [
      ["Smith, J.", 'say "hi"\r\nthen go', 1],
      ["Doe", "plain", 2],
    ],
  });
});

test("the target is chosen by name or index and defaults to the last column", async () => {
  const text = "a,kind,b\n1,x,2\n3,y,4\n";
  const out = {};
  for (const target of [null, "kind", 1, -2, 0]) {
    const d = await data.parseCsv(text, "t.csv", { target });
    out[String(target)] = plain([d.source.target, d.classes, d.columns.map((c) => c.name)]);
  }
  assert.deepEqual(out.null, ["b", null, ["a", "kind"]]);
  for (const target of ["kind", "1", "-2"]) assert.deepEqual(out[target], ["kind", ["x", "y"], ["a", "b"]], target);
  assert.deepEqual(out["0"], ["a", null, ["kind", "b"]]);
});

test("missing values are refused, dropped or filled as asked", async () => {
  const text = "a,c,y\n1,p,0\nNA,q,1\n5,,0\n3,p,1\n";
  const drop = seen(await data.parseCsv(text, "m.csv", { missing: "drop" }));
  const fill = seen(await data.parseCsv(text, "m.csv", { missing: "fill" }));
  const tokens = seen(await data.parseCsv("a,y\n-,0\nNA,1\n", "m.csv", { missingTokens: ["-"], missing: "drop" }));
  assert.deepEqual([drop.n, drop.source.skippedRows, drop.y], [2, 2, [0, 1]]);
  assertClose(fill.columns[0].fill, 3.0); // the mean of 1, 5 and 3
  assert.deepEqual(fill.x, [1, 1, 0, 3, 0, 1, 5, 0, 0, 3, 1, 0]); // the missing category: all zeros
  assert.equal(tokens.n, 1);
  assert.deepEqual(tokens.columns[0].categories, ["NA"]);
});

// CSV: streaming

test("a row split anywhere across chunks parses as the whole file", async () => {
  const text = 'city,"quote ""x""",n\r\n"Zürich, CH","a\r\nb",1.5\r\nLyon,é,2\n';
  const all = new TextEncoder().encode(text);
  const whole = JSON.stringify(seen(await data.parseCsv(all, "s.csv")));
  let splits = 0;
  const mismatches = [];
  async function* pieces(cuts) {
    let from = 0;
    for (const cut of [...cuts, all.length]) {
      yield all.slice(from, cut);
      from = cut;
    }
  }
  const check = async (cuts) => {
    splits += 1;
    const got = JSON.stringify(seen(await data.parseCsvStream(pieces(cuts), "s.csv")));
    if (got !== whole) mismatches.push(cuts);
  };
  for (let i = 1; i < all.length; i++) {
    await check([i]);
    for (let j = i + 1; j < all.length; j += 3) await check([i, j]);
  }
  await check(Array.from({ length: all.length - 1 }, (_, i) => i + 1));
  const stream = new ReadableStream({
    start(c) {
      c.enqueue(all.slice(0, 9));
      c.enqueue(all.slice(9));
      c.close();
    },
  });
  const parsed = JSON.parse(whole);
  assert.deepEqual(parsed.columns[0].categories, ["Lyon", "Zürich, CH"]);
  assert.deepEqual(parsed.columns[1].categories, ["a\r\nb", "é"]);
  assert.deepEqual(parsed.y, [1.5, 2]);
  assert.ok(splits > 400, `${splits} splits`);
  assert.deepEqual(mismatches, []);
  assert.equal(JSON.stringify(seen(await data.parseCsvStream(stream, "s.csv"))), whole);
});

test("a large stream is parsed chunk by chunk and never held whole", async () => {
  v8.setFlagsFromString("--expose-gc");
  const gc = vm.runInNewContext("gc"); // a collection on demand, as node --expose-gc gives it
  const ROWS = 200_000;
  const CHUNK = 64 * 1024;
  const line = (i) => `${i},${(i % 97) / 4},${"abc"[i % 3]},${i % 5 ? "no" : "yes"}\n`;
  const encoder = new TextEncoder();
  let progress = { bytes: 0, rows: 0 };
  const pulls = []; // whenever a chunk is asked for: [bytes sent, lines sent, bytes taken, rows read]
  const refs = [];
  let sent = 0;
  // Chunks of exactly CHUNK bytes (rows and UTF-8 split anywhere), made as they are asked for.
  async function* generate() {
    let pending = encoder.encode("i,half,letter,label\n");
    let lines = 0;
    for (let i = 0; i <= ROWS; ) {
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
      gc();
      pulls.push([sent, lines, progress.bytes, progress.rows]);
      refs.push(new WeakRef(chunk));
      sent += chunk.length;
      lines += chunk.filter((b) => b === 10).length;
      yield chunk;
    }
  }
  const d = await data.parseCsvStream(generate(), "big.csv", { onProgress: (p) => (progress = p) });
  const alive = refs.slice(0, -2).filter((ref) => ref.deref() !== undefined).length;
  assert.equal(d.n, ROWS);
  assert.deepEqual(d.classes, ["no", "yes"]);
  assert.equal(
    d.y.reduce((a, b) => a + b, 0),
    Math.floor(ROWS / 5),
  );
  assert.equal(d.exampleShape[0], 5); // i, half, and a one-hot of a, b, c
  let [sumI, sumHalf, bs, expectedHalf] = [0, 0, 0, 0];
  for (let r = 0; r < d.n; r++) {
    sumI += d.x[r * 5];
    sumHalf += d.x[r * 5 + 1];
    bs += d.x[r * 5 + 3];
    expectedHalf += (r % 97) / 4;
  }
  assert.equal(sumI, (ROWS * (ROWS - 1)) / 2);
  assert.equal(bs, Math.ceil((ROWS - 1) / 3)); // the rows 1, 4, 7, ... hold "b"
  assertClose(sumHalf, expectedHalf, { rel: 1e-9 });
  assert.deepEqual(Array.from(d.x.subarray(-5)), [ROWS - 1, ((ROWS - 1) % 97) / 4, 0, 1, 0]);
  assert.deepEqual(progress, { bytes: sent, rows: ROWS + 1 });
  assert.ok(sent > 3_000_000, `${sent} bytes`);
  // Streamed, not read whole first: when each chunk is asked for, the parser has taken every chunk
  // before it and read each row those chunks completed.
  assert.ok(pulls.length > 40, `${pulls.length} pulls`);
  for (const [chunkSent, lines, taken, read] of pulls) assert.deepEqual([taken, read], [chunkSent, lines]);
  assert.equal(alive, 0); // no earlier chunk is kept (a list of chunks to join later would keep them all)
});

test("a stream refused midway is cancelled and read no further", async () => {
  let pulls = 0;
  let cancelled;
  const rows = ["a,b\n", "1,2\n", "3,NA\n", "5,6\n", "7,8\n", "9,10\n"];
  const stream = new ReadableStream(
    {
      pull(controller) {
        controller.enqueue(new TextEncoder().encode(rows[pulls++]));
      },
      cancel(reason) {
        cancelled = reason ?? "no reason";
      },
    },
    { highWaterMark: 0 },
  );
  const error = await failure(() => data.parseCsvStream(stream, "s.csv"));
  assert.ok(error.message.startsWith('s.csv: row 3, column B ("b"): the value is missing ("NA")'), error.message);
  assert.equal(cancelled, "no reason");
  assert.equal(pulls, 3);
});

// CSV: every error names the file, the row and the column

const BAD_CELLS = [
  ["a,b\n1,2\n3,NA\n", {}, 3, 'B ("b")', 'the value is missing ("NA")'],
  ["a,b\n1,2\n3\n", {}, 3, 'B ("b")', "the row has 1 fields where the first row has 2: it is missing"],
  ["a,b\n1,2\n3,4,5\n", {}, 3, "C", "the row has 3 fields where the first row has 2: it is one too many"],
  ['a,b\n1,2\n3,"4\n5,6\n', {}, 3, 'B ("b")', "a quoted field is never closed"],
  ['a,b\n1,"2"x\n', {}, 2, 'B ("b")', "text follows a quoted field's closing quote"],
  ["a,b\n1,2\n1e39,0\n", {}, 3, 'A ("a")', '"1e39" is beyond float32\'s range'],
  ["a,y\n1,cat\n2,dog\n", { labels: "numbers" }, 2, 'B ("y")', 'the target holds text ("cat"), not a number'],
  ["a,y\n1,0\n2,?\n", { missing: "fill" }, 3, 'B ("y")', 'the target is missing ("?"), and a target cannot'],
  ["a,b,y\n1,x,0\n2,y,1\n3,z,0\n", { maxCategories: 2 }, 4, 'B ("b")', "holds more than 2 distinct values"],
];
for (const [text, options, row, column, said] of BAD_CELLS) {
  test(`a bad cell is named by file, row and column: ${said}`, async () => {
    const error = await csvError(text, options);
    assert.equal(error.name, "DataError");
    assert.equal(error.file, "t.csv");
    assert.deepEqual([error.row, error.column], [row, column]);
    assert.ok(error.message.startsWith(`t.csv: row ${row}, column ${column}: ${said}`), error.message);
  });
}

const BAD_FILES = [
  ["", {}, "t.csv: is empty: it holds no rows"],
  ["\n\n", {}, "t.csv: is empty: it holds no rows"],
  ["a,b\n", { header: true }, "t.csv: holds no data rows"],
  ["a,b\n1,2\n", { target: "c" }, 't.csv: has no column named "c" (the first row holds "a", "b")'],
  ["a,b\n1,2\n", { target: "a", header: false }, 't.csv: has no column named "a"'],
  ["a,b\n1,2\n", { target: 2 }, "t.csv: has 2 columns, so column index 2 names none of them"],
  ["y\n1\n", {}, "t.csv: has no feature columns besides the target"],
  ["a,y\nNA,0\n?,1\n", { missing: "fill" }, 't.csv: column A ("a"): the column has no value in any row'],
];
for (const [text, options, message] of BAD_FILES) {
  test(`a bad file is named with the reason: ${message}`, async () => {
    const error = await csvError(text, options);
    assert.ok(error.message.startsWith(message), error.message);
  });
}

test("text that is not UTF-8 is refused with its row", async () => {
  const b = new Uint8Array([...new TextEncoder().encode("a,b\n1,2\n3,"), 0xff, 0x0a]);
  const error = await failure(() => data.parseCsv(b, "latin.csv"));
  assert.equal(
    error.message,
    'latin.csv: row 3, column B ("b"): is not UTF-8 text (a byte here is no UTF-8 character): ' +
      "save the file as CSV UTF-8",
  );
});

test("options that are none of their choices are refused", async () => {
  const error = await csvError("a,b\n1,2\n", { missing: "ignore" });
  assert.equal(error.name, "TypeError");
  assert.ok(error.message.includes('missing must be one of "refuse", "drop", "fill"'), error.message);
});

// NPY and NPZ

test("npy of each dtype and version reads as numpy wrote it", () => {
  assert.equal(input.npy_dtypes.length, 18);
  for (const c of input.npy_dtypes) {
    const name = `${c.dtype} v${c.version}`;
    const x = { bytes: bytes(c.x), name: "x.npy" };
    const d = seen(data.datasetFromNpyPair(x, { bytes: bytes(c.y), name: "y.npy" }));
    assert.deepEqual(d.exampleShape, [2, 3], name);
    assert.equal(d.n, 4, name);
    assert.deepEqual(d.x, c.expected_x, name);
    assert.deepEqual(d.y, c.expected_y, name); // float labels: a regression target, without classes
    assert.deepEqual(d.classes, c.classes, name);
  }
});

test("fortran order is reordered and int32 features are kept as integers", () => {
  const archive = bytes(input.fortran.npz);
  const f = seen(data.datasetFromNpz(archive, "f.npz", { featureType: "int32" }));
  const float = seen(data.datasetFromNpz(archive, "f.npz"));
  assert.equal(f.featureType, "int32");
  assert.deepEqual(f.x, input.fortran.x);
  assert.equal(float.featureType, "float32");
  assert.deepEqual(float.x, f.x);
});

test("npz arrays are x and y, or the first two, or as named", async () => {
  const at = (name) => bytes(input.npz_arrays[name]);
  const summary = (d) => plain([d.source, d.x.length, Array.from(d.y), d.classes]);
  assert.deepEqual(summary(data.datasetFromNpz(at("xy.npz"), "xy.npz")), [
    { format: "npz", x: "x.npy", y: "y.npy" },
    6,
    [1, 0, 1],
    ["0", "1"],
  ]);
  assert.deepEqual(plain(data.preview(data.datasetFromNpz(at("xy.npz"), "xy.npz"), { rows: 2 }).table), {
    header: ["x[0]", "x[1]", "label"],
    rows: [
      [0, 1, "1"],
      [2, 3, "0"],
    ],
  });
  assert.deepEqual(summary(data.datasetFromNpz(at("positional.npz"), "positional.npz")), [
    { format: "npz", x: "arr_0.npy", y: "arr_1.npy" },
    6,
    [0.5, 1.5, 2.5],
    null,
  ]);
  assert.deepEqual(summary(data.datasetFromNpz(at("named.npz"), "named.npz", { x: "images", y: "targets.npy" })), [
    { format: "npz", x: "images.npy", y: "targets.npy" },
    6,
    [2, 0, 1],
    ["0", "1", "2"],
  ]);
  const missing = await failure(() => data.datasetFromNpz(at("positional.npz"), "p.npz", { x: "arr_0", y: "x" }));
  assert.equal(missing.message, 'p.npz: has no array "x" for the labels (its arrays: "arr_0", "arr_1")');
});

for (const { archive, options, entry, said } of input.bad_arrays) {
  test(`bad arrays are named by file and entry: ${entry} ${said}`, async () => {
    const error = await failure(() => data.datasetFromNpz(bytes(archive), "bad.npz", options));
    assert.notEqual(error, null, "the arrays were accepted");
    assert.deepEqual([error.file, error.entry], ["bad.npz", entry]);
    assert.ok(error.message.startsWith(`bad.npz: entry "${entry}": ${said}`), error.message);
  });
}

test("an archive that is no zip or lacks arrays is refused", async () => {
  const one = bytes(input["one.npz"]);
  const text = new TextEncoder().encode("not a zip at all");
  const onlyOne = await failure(() => data.datasetFromNpz(one, "one.npz"));
  assert.equal(onlyOne.message, 'one.npz: holds 1 array(s) ("x"); a data set needs two, features and labels');
  const notZip = await failure(() => data.datasetFromNpz(text, "text.npz"));
  assert.ok(notZip.message.startsWith("text.npz: is not a readable ZIP archive"), notZip.message);
  const same = await failure(() => data.datasetFromNpz(one, "one.npz", { x: "x", y: "x" }));
  assert.equal(same.message, 'one.npz: entry "x.npy": is named for both the features and the labels');
});

// Images

test("an image zip gives sorted classes from its folders", async () => {
  const zip = bytes(input["pets.zip"]);
  const gray = seen(await data.imagesFromZip(zip, "pets.zip", { decode, color: "gray" }));
  const rgb = seen(await data.imagesFromZip(zip, "pets.zip", { decode, color: "rgb" }));
  const preview = plain(data.preview(await data.imagesFromZip(zip, "pets.zip", { decode, color: "gray" })));
  assert.deepEqual(gray.classes, ["cat", "dog"]);
  assert.deepEqual(gray.y, [0, 1, 1]);
  assert.deepEqual(gray.source.paths, ["cat/deeper/c.PNG", "dog/a.jpg", "dog/b.png"]);
  assert.deepEqual(gray.exampleShape, [1, 2, 1]);
  const expected = [1, 0.4, 0, 0.2, 0.299, 0.587]; // BT.601 luma of red and of green; alpha is dropped
  assertClose(gray.x, expected, { abs: 1e-6 });
  assert.deepEqual(rgb.exampleShape, [1, 2, 3]);
  assert.deepEqual(rgb.x.slice(-6), [1, 0, 0, 0, 1, 0]);
  assert.deepEqual(preview.classCounts, [
    { name: "cat", count: 1 },
    { name: "dog", count: 2 },
  ]);
  assert.deepEqual(preview.thumbnails, [0, 1, 2]);
  assert.equal(preview.table, null);
});

test("a folder's files are read by their relative paths and resized when asked", async () => {
  const file = (path, b) => ({
    webkitRelativePath: path,
    name: path.split("/").pop(),
    arrayBuffer: async () => new Uint8Array(b).buffer,
  });
  const files = [file("picked/b/one.png", bytes(input.folder.one)), file("picked/a/two.png", bytes(input.folder.two))];
  const sized = (width) => ({ decode, color: "gray", size: { height: 1, width } });
  const down = seen(await data.imagesFromFiles(files, "picked", sized(1)));
  const up = seen(await data.imagesFromFiles(files, "picked", sized(4)));
  const progress = [];
  const size = { height: 2, width: 2 };
  await data.imagesFromFiles(files, "picked", { decode, color: "rgb", size, onProgress: (p) => progress.push(p) });
  assert.deepEqual(down.classes, ["a", "b"]);
  assert.deepEqual(down.exampleShape, [1, 1, 1]);
  assertClose(down.x, [120 / 255, 100 / 255], { rel: 1e-6 }); // 1x1: the mean of the pixels
  // 2 -> 4 wide: centres at -0.25 (clamped), 0.25, 0.75 and 1.25 (clamped) of the source's.
  assertClose(up.x.slice(0, 4), [40 / 255, 80 / 255, 160 / 255, 200 / 255], { rel: 1e-6 });
  assert.deepEqual(plain(progress), [
    { done: 1, total: 2 },
    { done: 2, total: 2 },
  ]);
});

for (const { archive, message } of input.bad_folders) {
  test(`a bad image folder names the entry: ${message}`, async () => {
    const settings = { decode, color: "gray" };
    const error = await failure(() => data.imagesFromZip(bytes(archive), "set.zip", settings));
    assert.notEqual(error, null);
    assert.equal(error.message, message);
  });
}

test("images need a decoder and an explicit color", async () => {
  const zip = new Uint8Array(0);
  const color = await failure(() => data.imagesFromZip(zip, "z.zip", { decode }));
  assert.equal(color.message, 'images need color "gray" or "rgb", not null');
  const decoder = await failure(() => data.imagesFromZip(zip, "z.zip", { color: "rgb" }));
  assert.equal(decoder.message, "images need a decode(bytes, name) function");
  const notZip = await failure(() => data.imagesFromZip(new Uint8Array([1, 2, 3]), "z.zip", { decode, color: "rgb" }));
  assert.ok(notZip.message.startsWith("z.zip: is not a readable ZIP archive"), notZip.message);
});

// The data set: split, content hash, engine layout

test("the split is a seeded permutation reproduced independently", async () => {
  const perm = input.permutation; // js_data_inputs.python_permutation: mulberry32 written in Python
  assert.deepEqual(Array.from(data.permutation(1000, 7)), perm);
  const again = plain(data.splitIndices(1000, { seed: 7 }));
  assert.equal(JSON.stringify(data.splitIndices(1000, { seed: 7 })), JSON.stringify(again));
  assert.deepEqual(again.validation, numbers(perm.slice(0, 200)));
  assert.deepEqual(numbers([...again.validation, ...again.train]), range(1000));
  const other = plain(data.splitIndices(1000, { seed: 8 }));
  assert.notDeepEqual(other.validation, again.validation);
  assert.equal(other.validation.length, 200);
  const sizes = [
    [10, 0.2],
    [10, 0.01],
    [10, 0.99],
    [1, 0.5],
    [10, 0],
  ].map(([n, fraction]) => {
    const s = data.splitIndices(n, { fraction });
    return [s.train.length, s.validation.length];
  });
  assert.deepEqual(sizes, [
    [8, 2],
    [9, 1],
    [1, 9],
    [1, 0],
    [10, 0],
  ]);
  const bad = [
    await failure(() => data.splitIndices(10, { fraction: 1 })),
    await failure(() => data.splitIndices(10, { seed: -1 })),
  ];
  assert.deepEqual(
    bad.map((e) => e.name),
    ["RangeError", "RangeError"],
  );
});

test("the content hash is SHA-256 of the documented bytes whatever the file", async () => {
  const given = input.content_hash; // js_data_inputs.canonical: the bytes written from their documentation
  const csv = "a,b,label\n0.1,2,1\n3.5,-4.25,0\n0.001,7,2\n";
  const fromCsv = await data.parseCsv(csv, "same.csv", { labels: "classes" });
  assert.equal(await data.contentHash(fromCsv), given.expected);
  assert.equal(await data.contentHash(data.datasetFromNpz(bytes(given["same.npz"]), "same.npz")), given.expected);
  const regression = data.datasetFromNpz(bytes(given["regression.npz"]), "r.npz");
  assert.equal(await data.contentHash(regression), given.regression_expected);
  fromCsv.y[0] = 0;
  assert.notEqual(await data.contentHash(fromCsv), given.expected);
});

test("a split written as the engine's files reads back with the engine's hash", async () => {
  const d = data.datasetFromNpz(bytes(input["split.npz"]), "d.npz");
  const { train, validation } = data.splitDataset(d, { fraction: 0.2, seed: 42 });
  const hex = (b) => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString("hex");
  const files = [train, validation].map((split) => {
    const { features, labels } = data.engineFiles(split);
    return { features: hex(features), labels: hex(labels) };
  });
  const versions = plain([await data.dataVersion("train", train), await data.dataVersion("test", validation)]);
  const indices = plain(data.splitIndices(d.n, { fraction: 0.2, seed: 42 }));
  // tests/test_js.py reads the files with the engine's reader, and compares its versions with these
  forPython("data_import", "engine_files", { files, versions, indices });
  assert.equal(versions[1].examples, 10);
});

test("a table preview shows the file's values", async () => {
  const text = "n,c,y\n1,b,yes\n2,a,no\n3,b,yes\n";
  const d = await data.parseCsv(text, "p.csv", { missing: "fill" });
  const p = plain(data.preview(d, { rows: 2 }));
  assert.deepEqual(p.table, {
    header: ["n", "c", "y"],
    rows: [
      [1, "b", "yes"],
      [2, "a", "no"],
    ],
  });
  assert.deepEqual(p.classCounts, [
    { name: "no", count: 1 },
    { name: "yes", count: 2 },
  ]);
  assert.equal(p.thumbnails, null);
  assert.equal(p.n, 3);
});
