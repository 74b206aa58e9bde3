// Import limits under Node (app/src/data/limits.js, zip.js and the importers): each file that would make
// the page allocate more than it may is refused by name before the allocation, with the number found and the
// limit: a CSV of a million columns, text columns whose one-hot would be 200,000 values wide, examples over
// the data budget, a ZIP entry that declares more than it may (or than deflate can produce, or inflates past
// what it declares), an image whose header gives a huge size, a resize to a huge size. And the target column
// chosen by name: the name asked for, or the last column when the file lacks it, saying which. The archives
// are Python's zipfile's (tests/js_data_inputs.py).
import assert from "node:assert/strict";
import { test } from "node:test";
import * as data from "../../app/src/data/index.js";
import { importFiles } from "../../app/src/userdata.js";
import { KeptData } from "../../app/src/userdatamodel.js";
import { failure, pythonInputs } from "./lib.js";

const input = pythonInputs("data_limits");
const bytes = (text) => new Uint8Array(Buffer.from(text, "base64"));
// A fake decoder of a PNG's header and RGBA bytes that lists the names it decoded.
const decoder = () => {
  const decoded = [];
  const decode = async (b, name) => {
    decoded.push(name);
    const view = new DataView(b.buffer, b.byteOffset, b.byteLength);
    const [width, height] = [view.getUint32(16), view.getUint32(20)];
    return { width, height, rgba: new Uint8ClampedArray(b.subarray(33)) };
  };
  return { decode, decoded };
};

// CSV

test("a CSV of a million columns is refused at its first row", async () => {
  const header = Array.from({ length: 1_000_000 }, (_, i) => `c${i}`).join(",");
  const row = Array(1_000_000).fill("1").join(",");
  const text = `${[header, row, row].join("\n")}\n`;
  const whole = await failure(() => data.parseCsv(text, "wide.csv"));
  const streamed = await failure(() => data.parseCsvStream([new TextEncoder().encode(text)], "wide.csv"));
  for (const error of [whole, streamed]) {
    assert.equal(error.name, "DataError");
    assert.equal(error.row, 1);
    const said = "wide.csv: row 1, column CRXQ: the row has more than 65,536 columns";
    assert.ok(error.message.startsWith(said), error.message);
  }
});

test("text columns whose one-hot outgrows an example are refused as they are read", async () => {
  const columns = Array.from({ length: 200 }, (_, c) => c);
  const header = [...columns.map((c) => `t${c}`), "y"].join(",");
  const rows = Array.from({ length: 1000 }, (_, r) => [...columns.map(() => `v${r}`), String(r % 2)].join(","));
  const error = await failure(() => data.parseCsv(`${[header, ...rows].join("\n")}\n`, "cats.csv"));
  assert.equal(error.name, "DataError");
  assert.ok(error.row !== null && error.row !== undefined && error.row < 400, JSON.stringify(error));
  assert.ok(error.message.includes("wider than the 65,536 values it may hold"), error.message);
});

test("a CSV over the data budget is refused naming the budget", async () => {
  const text = `a,b,c\n${Array.from({ length: 100 }, (_, i) => `${i},${i + 1},${i % 2}\n`).join("")}`;
  const budget = { bytes: 1000, how: "a budget set by this test" };
  const { message } = await failure(() => data.parseCsv(text, "t.csv", { budget }));
  assert.ok(message.startsWith("t.csv: row "), message);
  assert.ok(message.includes("more than the budget of 1,000 bytes (a budget set by this test)"), message);
  const fits = await data.parseCsv(text, "t.csv", { budget: { bytes: 1200, how: "more" } });
  assert.equal(fits.n, 100); // 100 rows of 2 features and a label: 1,200 bytes
});

// ZIP entries

const SAID = new Map([
  [3_000_000_000, "declares 3,000,000,000 bytes, more than"],
  [100_000_000, "declares 100,000,000 bytes from"], // within the budget, beyond deflate's 1032:1
  [9_000_000, "inflates to more than the 9,000,000 bytes it declares"],
]);
for (const { declared, images, arrays } of input.bombs) {
  const said = SAID.get(declared);
  test(`a zip entry is checked before and while it is inflated: ${said}`, async () => {
    const { decode, decoded } = decoder();
    const image = await failure(() => data.imagesFromZip(bytes(images), "bomb.zip", { decode, color: "gray" }));
    const array = await failure(() => data.datasetFromNpz(bytes(arrays), "bomb.npz"));
    assert.ok(image.message.startsWith(`bomb.zip: entry "cat/a.png": ${said}`), image.message);
    assert.ok(array.message.startsWith(`bomb.npz: entry "x.npy": ${said}`), array.message);
    assert.deepEqual(decoded, []);
  });
}

test("damaged entries are refused and an honest highly compressed one is read", async () => {
  const honest = bytes(input["honest.npz"]); // a million float32 zeros
  assert.ok(honest.length < 4_000_000 / 500, `${honest.length} bytes`);
  assert.deepEqual((await data.datasetFromNpz(honest, "honest.npz")).exampleShape, [1000]);
  // the central directory's CRC-32 of x.npy is changed
  const damaged = await failure(() => data.datasetFromNpz(bytes(input["damaged.npz"]), "damaged.npz"));
  assert.ok(damaged.message.startsWith('damaged.npz: entry "x.npy": is damaged: its CRC-32 is '), damaged.message);
});

// Images

test("an image whose header gives a huge size is refused before it is decoded", async () => {
  const { decode, decoded } = decoder();
  const error = await failure(() => data.imagesFromZip(bytes(input["huge.zip"]), "huge.zip", { decode, color: "rgb" }));
  const said = 'huge.zip: entry "cat/b.png": is 100000x100000 pixels by its header, larger than an image may be';
  assert.ok(error.message.startsWith(said), error.message);
  assert.deepEqual(decoded, ["cat/a.png"]);
});

test("a resize to a huge size is refused before anything is decoded", async () => {
  const { decode, decoded } = decoder();
  const files = [{ path: "set/cat/a.png", bytes: bytes(input["small.png"]) }];
  const size = { height: 100000, width: 100000 };
  const error = await failure(() => data.imagesFromFiles(files, "set", { decode, color: "rgb", size }));
  assert.equal(error.name, "DataError");
  assert.deepEqual(decoded, []);
  const said = "set: 1 examples of 30,000,000,000 values (images of 100000x100000 pixels, RGB)";
  assert.ok(error.message.startsWith(said), error.message);
  assert.ok(error.message.includes("more than the budget of 512 MiB"), error.message);
});

test("arrays over the data budget are refused before they are converted", async () => {
  const budget = { bytes: 2000, how: "a budget set by this test" };
  const error = await failure(() => data.datasetFromNpz(bytes(input["budget.npz"]), "a.npz", { budget }));
  assert.equal(
    error.message,
    'a.npz: entry "x.npy": 50 examples of 10 values (arrays of shape (10)) take 2,200 bytes as float32, more ' +
      "than the budget of 2,000 bytes (a budget set by this test): use fewer rows, columns or pixels",
  );
});

// The target column, by name

test("a target named is taken by name, or the last column when the file lacks it", async () => {
  const diabetes = "age,bmi,progression\n50,30,151\n40,25,75\n";
  const other = "x,y,label\n1,2,a\n3,4,b\n";
  const read = (text, target) => data.parseCsv(text, "t.csv", { target, ifTargetAbsent: "last" });
  const named = (await read(diabetes, "progression")).source;
  assert.deepEqual([named.target, named.targetChosen], ["progression", "named"]);
  const absent = (await read(other, "progression")).source;
  assert.deepEqual([absent.target, absent.targetChosen, absent.asked], ["label", "fallback", "progression"]);
  const refused = await failure(() => data.parseCsv(other, "t.csv", { target: "progression" }));
  assert.ok(refused.message.startsWith('t.csv: has no column named "progression"'), refused.message);
});

test("a field longer than a cell may be is refused as it is read", async () => {
  const long = Array.from({ length: 40 }, () => new Uint8Array(65536).fill(120));
  const chunks = [new TextEncoder().encode('a,b\n1,"'), ...long];
  const error = await failure(() => data.parseCsvStream(chunks, "long.csv"));
  assert.equal(
    error.message,
    'long.csv: row 2, column B ("b"): a field holds more than 1,048,576 characters, more than a table\'s cell may',
  );
});

test("a file read whole that outgrows the budget is refused before it is read", async () => {
  const read = [];
  const huge = (name) => ({
    name,
    size: 3e9,
    arrayBuffer: async () => {
      read.push(name);
      return new ArrayBuffer(8);
    },
  });
  const settings = { csv: {}, npy: {}, images: { color: "gray", size: null }, split: { fraction: 0.2, seed: 0 } };
  const errors = {};
  for (const name of ["big.npz", "big.zip"]) {
    errors[name] = await failure(() => importFiles(new KeptData(), [huge(name)], settings, () => {}));
  }
  assert.deepEqual(read, []);
  for (const name of ["big.npz", "big.zip"]) {
    assert.equal(errors[name].name, "DataError");
    const said = `${name}: takes 2.8 GiB, more than the 1 GiB a file read whole may`;
    assert.ok(errors[name].message.startsWith(said), errors[name].message);
  }
});

test("an image file of a folder larger than the budget is refused before it is read", async () => {
  const { decode } = decoder();
  const read = [];
  const file = (path, size) => ({
    path,
    size,
    arrayBuffer: async () => {
      read.push(path);
      return new ArrayBuffer(8);
    },
  });
  const files = [file("set/cat/a.png", 2000), file("set/dog/b.png", 10)];
  const budget = { bytes: 1000, how: "a budget set by this test" };
  const error = await failure(() => data.imagesFromFiles(files, "set", { decode, color: "gray", budget }));
  assert.deepEqual(read, []);
  assert.equal(
    error.message,
    'set: entry "set/cat/a.png": takes 2,000 bytes, more than an image file may (the 1,000 bytes of the data set: ' +
      "a budget set by this test)",
  );
});
