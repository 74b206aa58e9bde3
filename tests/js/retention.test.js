// Checkpoint retention in the Runs history's pure logic under Node (app/src/runsmodel.js): the train card's
// keep field read as a whole number from 1 or "all" (anything else named), a record keeping its keep count,
// the checkpoints the run panel's state names as retired marked gone (and written), `gone` and `keep`
// checked when a record is read (records without them still read), and a resume taking the record's count.
// The card and the run panel showing them run in e2e/test_retention_in_page.py.
import assert from "node:assert/strict";
import { test } from "node:test";
import * as runs from "../../app/src/runsmodel.js";
import { plain } from "./lib.js";
import { fresh, key, settings, state } from "./runrecords.js";

test("the keep field takes a whole number from 1 or all", () => {
  const good = ["3", " 12 ", "1", "all", "ALL", "1000000"].map((text) => runs.parseKeep(text).keep);
  assert.deepEqual(good, [3, 12, 1, "all", "all", 1_000_000]);
  const bad = ["0", "", "-1", "2.5", "two", "1e3", "99999999", "0x10", null];
  const answers = Object.fromEntries(bad.map((text) => [`${text}`, plain(runs.parseKeep(text))]));
  assert.equal(Object.keys(answers).length, 9);
  for (const answer of Object.values(answers)) {
    assert.deepEqual(Object.keys(answer), ["error"]);
    assert.ok(answer.error.startsWith("keep the last checkpoints: a whole number"), answer.error);
  }
  assert.ok(answers.two.error.includes('(found "two")'), answers.two.error);
  assert.ok(answers[""].error.includes("(found nothing)"), answers[""].error);
  assert.equal(runs.keepRule(1), "deleted by the retention rule: the run keeps its last checkpoint and its best");
  assert.equal(runs.keepRule(3), "deleted by the retention rule: the run keeps its last 3 checkpoints and its best");
  assert.equal(runs.keepRule("all"), "deleted by a retention rule: no longer stored");
});

test("retired checkpoints are marked gone and the record is written", () => {
  let r = runs.newRecord({ id: "a", now: 1, device: "d", settings: { ...settings, keep: 2 } });
  const rerun = runs.newRecord({ id: "b", now: 1, device: "d", settings: { ...settings, rerunOf: key("f") } });
  assert.deepEqual([r.keep, fresh().keep, rerun.keep], [2, 3, null]);
  const cps = ["a", "b", "c"].map((c, i) => ({ step: 4 * (i + 1), key: key(c) }));
  r = runs.withState(r, state(12, { checkpoints: cps })).record;
  const later = { checkpoints: [...cps, { step: 16, key: key("d") }], retired: [key("a")] };
  const next = runs.withState(r, state(16, later));
  assert.equal(next.changed, true);
  r = next.record;
  assert.deepEqual(
    r.checkpoints.map((c) => c.gone ?? false),
    [true, false, false, false],
  );
  const again = runs.withState(r, state(17, later));
  assert.equal(again.changed, false); // a chunk that retires nothing new writes nothing
  assert.equal(again.record.checkpoints, r.checkpoints);
  const read = runs.readRecord(r);
  assert.ok(read.record !== undefined, JSON.stringify(read));
  assert.equal(runs.resumeSettings(r).keep, 2);
  assert.ok(!("keep" in plain(runs.resumeSettings({ ...r, keep: undefined }))));
  assert.equal(runs.resumeSettings({ ...r, keep: "all" }).keep, "all");
});

test("gone and keep are checked when a record is read and old records still read", () => {
  const first = { checkpoints: [{ step: 4, key: key("a") }], retired: [key("a")] };
  const good = runs.withState(fresh(), state(4, first)).record;
  const bad = {
    goneText: ["checkpoints[0].gone", (r) => (r.checkpoints[0].gone = "yes")],
    goneNull: ["checkpoints[0].gone", (r) => (r.checkpoints[0].gone = null)],
    keepZero: ["keep", (r) => (r.keep = 0)],
    keepText: ["keep", (r) => (r.keep = "3")],
    keepHalf: ["keep", (r) => (r.keep = 2.5)],
    keepHuge: ["keep", (r) => (r.keep = 1e12)],
  };
  for (const [name, [field, change]] of Object.entries(bad)) {
    const r = structuredClone(good);
    change(r);
    const { problems } = runs.readRecord(r, "a").damaged;
    assert.equal(problems.length, 1, name);
    assert.ok(problems[0].startsWith(`${field}: `), `${name}: ${problems}`);
  }
  const old = structuredClone(good);
  delete old.keep;
  delete old.checkpoints[0].gone;
  const none = { ...good, keep: null, checkpoints: [{ ...good.checkpoints[0], gone: false }] };
  const answers = { old, good, all: { ...good, keep: "all" }, none };
  for (const [name, record] of Object.entries(answers)) {
    const read = runs.readRecord(record, "a");
    assert.ok(read.record !== undefined, `${name}: ${JSON.stringify(read)}`);
  }
  assert.equal(runs.readRecord(good, "a").record.checkpoints[0].gone, true);
});
