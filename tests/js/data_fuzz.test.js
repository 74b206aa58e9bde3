// Malformed data files through the page's importers (app/src/data/) under Node: valid CSV, NPY, NPZ and
// image ZIP files mutated with a fixed seed (tests/data_fuzz_cases.py: cut short, bytes flipped, inserted or
// dropped, headers that lie about shapes, dtypes and sizes, huge declared sizes, bad UTF-8, another
// delimiter, ragged rows). Every file must be refused by a named DataError or read within its time bound,
// and every file read must give the data set an independent reading gives (tests/data_reference.py, whose
// content hash of each file tests/js_inputs.py writes beside it) where one exists.
import assert from "node:assert/strict";
import { test } from "node:test";
import * as data from "../../app/src/data/index.js";
import { faultLog, pythonInputs } from "./lib.js";

const CASE_MS = 5000; // a case over this is a hang
const bytes = (text) => new Uint8Array(Buffer.from(text, "base64"));
// The fake decoder of a PNG's header and RGBA bytes (data_fuzz_cases.fake_png).
const decode = async (b) => {
  const view = new DataView(b.buffer, b.byteOffset, b.byteLength);
  return { width: view.getUint32(16), height: view.getUint32(20), rgba: new Uint8ClampedArray(b.subarray(33)) };
};
const read = {
  csv: (c) => data.parseCsv(bytes(c.data), "t.csv"),
  npy: (c) => data.datasetFromNpyPair({ bytes: bytes(c.data), name: "x.npy" }, { bytes: bytes(c.y), name: "y.npy" }),
  npz: (c) => data.datasetFromNpz(bytes(c.data), "a.npz"),
  zip: (c) => data.imagesFromZip(bytes(c.data), "set.zip", { decode, color: "gray" }),
};

test("malformed data files are refused by name or read as the reference reads them", async () => {
  // `expected`: the reference's content hash, "refused", or null where there is no reference reading
  const { cases, expected } = pythonInputs("data_fuzz");
  const [crashes, hangs, wrong] = [[], [], []];
  let [compared, accepted, stricter] = [0, 0, 0];
  for (const [i, c] of cases.entries()) {
    const began = performance.now();
    let result;
    try {
      result = { hash: await data.contentHash(await read[c.kind](c)) };
    } catch (error) {
      result = { error: error?.name ?? String(error), message: String(error?.message ?? error) };
    }
    const ms = performance.now() - began;
    if (ms > CASE_MS) hangs.push([c.kind, ms]);
    if ("error" in result && result.error !== "DataError") {
      crashes.push([c.kind, result.error, result.message]);
      continue;
    }
    accepted += "hash" in result;
    if (expected[i] === null) continue;
    compared += 1;
    if ("hash" in result && result.hash !== expected[i]) wrong.push([c.kind, expected[i], result]); // read, but not as the reference reads it
    stricter += !("hash" in result) && expected[i] !== "refused";
  }
  faultLog("data-files", {
    inputs: cases.length,
    accepted,
    compared,
    refused_valid: stricter,
    crashes: crashes.length,
    hangs: hangs.length,
    silent_wrong: wrong.length,
  });
  assert.ok(cases.length >= 1200, `${cases.length} cases`);
  const first = JSON.stringify([crashes.slice(0, 5), hangs.slice(0, 5), wrong.slice(0, 5)]);
  assert.deepEqual([crashes.length, hangs.length, wrong.length], [0, 0, 0], first);
  assert.ok(accepted >= 40 && compared >= 900, `${accepted} accepted, ${compared} compared`); // the seeds and many mutations are read and checked
});
