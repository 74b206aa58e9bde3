// How the engine's Python starts (app/src/pythonstart.js), with a stand-in loadPyodide: from the build's
// snapshot, reseeding `random`; from scratch where the build has none; from scratch, said in the stage and
// the answer, where the snapshot does not start; never where the snapshot is not the build's (the
// BuildMismatch rejects the start).
import assert from "node:assert/strict";
import { test } from "node:test";
import { BuildMismatch } from "../../app/src/integrity.js";
import { startPython } from "../../app/src/pythonstart.js";

// A loadPyodide that records each start's options and the Python each interpreter runs; `fails` says
// whether a start from a snapshot throws.
function standIn(fails = false) {
  const starts = [];
  const loadPyodide = async (options) => {
    const ran = [];
    starts.push({ options, ran });
    if (options._loadSnapshot !== undefined) {
      await options._loadSnapshot;
      if (fails) throw new Error("Snapshot build id mismatch");
    }
    return { runPython: (code) => ran.push(code) };
  };
  return { starts, loadPyodide };
}

const given = (loadPyodide, snapshot, stages) => ({
  loadPyodide,
  indexURL: "http://app/pyodide/",
  version: "Pyodide 314.0.7",
  snapshot,
  stage: (label) => stages.push(label),
});

test("the build's snapshot starts Python, and random is seeded again", async () => {
  const { starts, loadPyodide } = standIn();
  const stages = [];
  const memory = Promise.resolve(new Uint8Array([0, 115, 110, 112]));
  const { started } = await startPython(given(loadPyodide, memory, stages));
  assert.equal(started, "started from the build's snapshot");
  assert.equal(starts.length, 1);
  assert.equal(starts[0].options._loadSnapshot, memory);
  assert.match(starts[0].ran.join("\n"), /sys\.modules\['random'\]\.seed\(\)/);
  assert.deepEqual(stages, ["Starting Python (Pyodide 314.0.7) from the build's snapshot…"]);
});

test("a build without a snapshot starts Python from scratch, and says so", async () => {
  const { starts, loadPyodide } = standIn();
  const stages = [];
  const { started } = await startPython(given(loadPyodide, null, stages));
  assert.equal(started, "started from scratch: this build has no snapshot");
  assert.deepEqual(
    starts.map((s) => s.options),
    [{ indexURL: "http://app/pyodide/" }],
  );
  assert.deepEqual(stages, ["Loading Python (Pyodide 314.0.7)…"]);
});

test("a snapshot that does not start is named, and Python starts from scratch", async () => {
  const { starts, loadPyodide } = standIn(true);
  const stages = [];
  const { started } = await startPython(given(loadPyodide, Promise.resolve(new Uint8Array(4)), stages));
  assert.equal(started, "started from scratch: the build's snapshot did not start (Snapshot build id mismatch)");
  assert.equal(starts.length, 2);
  assert.equal(starts[1].options._loadSnapshot, undefined);
  assert.equal(stages[1], "Loading Python (Pyodide 314.0.7): the build's snapshot did not start…");
});

test("a snapshot that is not the build's refuses the start", async () => {
  const { starts, loadPyodide } = standIn();
  const mixed = new BuildMismatch([{ name: "python-snapshot.gz", why: "its SHA-256 is not the one build.json lists" }]);
  await assert.rejects(startPython(given(loadPyodide, Promise.reject(mixed), [])), (e) => e === mixed);
  assert.equal(starts.length, 1);
});
