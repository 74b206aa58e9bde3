// What the JS tests share: stand-ins for the browser's storage, a call's refusal as plain fields, a
// tolerance check like pytest.approx, the inputs Python writes for them (tests/js_inputs.py, into
// build/js-inputs/) and the answers they leave for Python to check (build/js-outputs/), and the fault
// suites' figures (build/faults/, as conftest.py's fault_log writes them).
import assert from "node:assert/strict";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";

const ROOT = new URL("../../", import.meta.url);
const BUILD = new URL("build/", ROOT);

// A value as JSON reads it back: Maps dropped to {}, undefined fields gone, typed arrays as objects.
export const plain = (value) => JSON.parse(JSON.stringify(value));

// The lines of `text` as Python's str.splitlines() cuts them: at any line boundary, none after the last.
export const splitlines = (text) => {
  const lines = text.split(/\r\n|[\n\r\v\f\x1c-\x1e\x85\u2028\u2029]/);
  return lines.at(-1) === "" ? lines.slice(0, -1) : lines;
};

// A storage like localStorage, its items in `items`.
export const storage = () => {
  const items = new Map();
  return {
    items,
    getItem: (k) => (items.has(k) ? items.get(k) : null),
    setItem: (k, v) => items.set(k, String(v)),
    removeItem: (k) => items.delete(k),
  };
};

// The error `run` throws, as the fields the importers set on a DataError; null when it throws nothing.
export const failure = async (run) => {
  try {
    await run();
  } catch (error) {
    const { name, message, file, entry, row, column } = error;
    return { name, message, file, entry, row, column };
  }
  return null;
};

// What `run` throws or rejects with, whether it throws at once or its promise rejects; it must do one.
export const thrownBy = async (run) => {
  try {
    await run();
  } catch (error) {
    return error;
  }
  assert.fail("nothing was thrown");
};

// Each number of `actual` within the tolerance pytest.approx gives `expected`: `abs` alone when only it
// is given, else the larger of rel * |expected| (rel 1e-6 unless given) and abs (1e-12 unless given).
export const assertClose = (actual, expected, { rel, abs } = {}) => {
  const [got, want] = [[actual].flat(), [expected].flat()];
  assert.equal(got.length, want.length, "lengths differ");
  want.forEach((e, i) => {
    const tolerance =
      rel === undefined && abs !== undefined ? abs : Math.max((rel ?? 1e-6) * Math.abs(e), abs ?? 1e-12);
    assert.ok(Math.abs(got[i] - e) <= tolerance, `item ${i}: ${got[i]} is not ${e} within ${tolerance}`);
  });
};

// The inputs tests/js_inputs.py wrote for the test file `name`.
export const pythonInputs = (name) => {
  const path = new URL(`js-inputs/${name}.json`, BUILD);
  try {
    return JSON.parse(readFileSync(path, "utf8"));
  } catch (error) {
    throw new Error(
      `${path.pathname} cannot be read (${error.message}): Python writes it, with the engine; run ` +
        "`.venv/bin/python -m pytest tests/test_js.py` (or `.venv/bin/python tests/js_inputs.py`, then node --test)",
    );
  }
};

// An answer of the test file `name` that Python checks with the engine after the run (tests/test_js.py).
export const forPython = (name, key, value) => {
  const folder = new URL(`js-outputs/${name}/`, BUILD);
  mkdirSync(folder, { recursive: true });
  writeFileSync(new URL(`${key}.json`, folder), JSON.stringify(value));
};

// A fault or fuzz suite's counts in build/faults/<suite>.json, the text Python's fault_log writes
// (json.dumps with sorted keys), which `python bench/faults.py` tabulates.
export const faultLog = (suite, figures) => {
  for (const [name, value] of Object.entries(figures)) assert.ok(Number.isInteger(value), `${name} is ${value}`);
  const fields = { suite, ...figures };
  const text = Object.keys(fields)
    .sort()
    .map((k) => `${JSON.stringify(k)}: ${JSON.stringify(fields[k])}`);
  mkdirSync(new URL("faults/", BUILD), { recursive: true });
  writeFileSync(new URL(`faults/${suite}.json`, BUILD), `{${text.join(", ")}}\n`);
};
