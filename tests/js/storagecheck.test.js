// The storage check's logic under Node (app/src/storagecheck.js) over a store's objects as the engine
// writes them: every damaged object found by kind (corrupt, not bytes, misnamed); the objects a kept
// checkpoint names (its history's chain of segments) found as the engine's collector finds them
// (store.fsck.collect, over the store tests/js_inputs.py writes), so the page and the CLI free the same
// objects; the roots are every key a Runs record holds, a record of another shape included; and store.js's
// put compares stored bytes with what it writes.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { test } from "node:test";
import * as check from "../../app/src/storagecheck.js";
import { sameBytes } from "../../app/src/store.js";
import { pythonInputs } from "./lib.js";

const bytes = (hex) => new Uint8Array(Buffer.from(hex, "hex")).buffer;
const storeOf = (pairs) => {
  const objects = new Map(pairs.map(([k, v]) => [k, v === null ? { not: "bytes" } : bytes(v)]));
  return { keys: async () => [...objects.keys()].sort(), raw: async (k) => objects.get(k) };
};
const keyOf = (data) => `sha256:${createHash("sha256").update(data).digest("hex")}`;

test("unused objects are the ones the engine collects", async () => {
  // A run's objects: three rule checkpoints chained by their histories, a final state, an orphan segment
  // and a stray object; a record keeps the last rule checkpoint and the final state.
  const { objects, roots, collected, checkpoints, extra } = pythonInputs("storagecheck");
  const store = storeOf(objects);
  const unused = (await check.unusedObjects(store, new Set(roots))).map((u) => u.key).sort();
  assert.deepEqual(unused, [...collected].sort());
  // their histories are the kept ones' chain
  assert.deepEqual([...collected].sort(), [checkpoints[0], checkpoints[1], ...extra].sort());
  assert.equal((await check.unusedObjects(store, new Set())).length, objects.length);
});

test("damage is found by kind", async () => {
  const text = (s) => Buffer.from(s);
  const corrupt = keyOf(text("was this"));
  const objects = [
    [keyOf(text("whole")), text("whole").toString("hex")],
    [corrupt, text("is now this").toString("hex")],
    ["latest", text("whole").toString("hex")],
    [keyOf(text("x")), null],
  ];
  const seen = [];
  const found = await check.checkObjects(storeOf(objects), (done, total) => seen.push([done, total]));
  assert.equal(found.whole, 1);
  assert.deepEqual(seen.at(-1), [4, 4]);
  const damage = Object.fromEntries(found.damage.map((d) => [d.key, [d.kind, d.detail]]));
  assert.deepEqual(damage[corrupt], ["corrupt", `11 bytes that hash to ${keyOf(text("is now this"))}`]);
  assert.equal(damage.latest[0], "misnamed");
  assert.equal(damage[keyOf(text("x"))][0], "not bytes");
});

test("roots are every key a record holds", () => {
  const [a, b, c, d] = ["a", "b", "c", "d"].map((ch) => `sha256:${ch.repeat(64)}`);
  const record = { id: "1", checkpoints: [{ step: 1, key: a, kind: "rule" }], final: b, resumedFrom: null, rows: [] };
  const other = { id: "2", format: 9, nested: { deep: [[c]] }, final: d }; // another shape
  assert.deepEqual([...check.rootsOf([record, other])].sort(), [a, b, c, d].sort());
  const x = new Uint8Array([1, 2, 3]).buffer;
  const same = [
    check.referencesOf(new Uint8Array(4)).length,
    sameBytes(x, x.slice(0)),
    sameBytes(x, new Uint8Array([1, 2, 4]).buffer),
    sameBytes(undefined, x),
    sameBytes("abc", x),
  ];
  assert.deepEqual(same, [0, true, false, false, false]);
});
