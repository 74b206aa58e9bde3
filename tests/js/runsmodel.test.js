// The Runs history's pure logic under Node (app/src/runsmodel.js): a run's record shaped from its settings
// and the run panel's states (written per epoch or checkpoint, not per chunk), its manifest's final key and
// data versions, the newest-first order, the summary cells and headline metric, which checkpoint objects a
// deletion frees and which it keeps for other runs, and the data a resume needs. The IndexedDB and the card
// run in e2e/test_runs_history.py.
import assert from "node:assert/strict";
import { test } from "node:test";
import * as runs from "../../app/src/runsmodel.js";
import { faultLog, plain } from "./lib.js";
import { fresh, key, row, settings, state } from "./runrecords.js";

test("a new record names the program and the site data unless the settings name data", () => {
  const plainRecord = fresh();
  assert.equal(plainRecord.name, "digits-mlp");
  assert.deepEqual(plainRecord.data, { name: "digits (this site)", versions: null });
  assert.deepEqual(
    [plainRecord.status, plainRecord.seed, plainRecord.device, plainRecord.resumedFrom],
    ["running", "5", "the page's device", null],
  );
  const data = { name: "iris.csv", versions: [{ split: "train" }] };
  const named = runs.newRecord({ id: "b", now: 1, device: "d", settings: { ...settings, resume: key("a"), data } });
  assert.deepEqual(named.data, { name: "iris.csv", versions: [{ split: "train" }] });
  assert.equal(named.resumedFrom, `sha256:${"a".repeat(64)}`);
  assert.equal(runs.programName("{not json"), "unnamed program");
});

test("states change the record at epochs and checkpoints, not at every chunk", () => {
  let r = fresh();
  const changes = [];
  const feed = (s) => {
    const next = runs.withState(r, s);
    r = next.record;
    changes.push(next.changed);
  };
  feed(state(0)); // the first: total known
  feed(state(7)); // a chunk: nothing to write
  feed(state(22, { epochs_done: [row(1, 0.8, 0.6)] })); // an epoch
  feed(state(25, { checkpoints: [{ step: 20, key: key("b") }] })); // a rule's checkpoint
  feed(state(26, { checkpoints: [{ step: 20, key: key("b") }] })); // the same again: nothing new
  feed(state(27, { checkpoints: [{ step: 20, key: key("b") }], saved: [{ step: 27, key: key("c") }] }));
  assert.deepEqual(changes, [true, false, true, true, false, true]);
  assert.equal(r.device, "CPU path (WebAssembly) via pyodide");
  assert.equal(r.step, 27);
  assert.deepEqual(plain(r.rows), [
    { epoch: 1, steps: 22, train_loss: 0.5, test: { loss: 0.6, "metric/accuracy": 0.8 } },
  ]);
  assert.deepEqual(
    r.checkpoints.map((c) => [c.step, c.kind]),
    [
      [20, "rule"],
      [27, "saved"],
    ],
  );
});

test("status and manifest end the record", () => {
  let r = runs.withState(fresh(), state(10, { saved: [{ step: 10, key: key("c") }] })).record;
  const paused = runs.withStatus(r, "paused", { now: 2000 });
  assert.deepEqual([paused.status, paused.ended], ["paused", null]);
  const data = [{ split: "train", sha256: key("d"), examples: 1438, shape: [64] }];
  const manifest = JSON.stringify({ steps: 44, data });
  r = runs.withManifest(runs.withStatus(r, "done", { now: 3000 }), { manifest, final: key("e"), link: "x" });
  assert.deepEqual([r.status, r.ended, r.final, r.step], ["done", 3000, `sha256:${"e".repeat(64)}`, 44]);
  assert.equal(r.data.versions[0].examples, 1438);
  assert.equal(JSON.parse(r.manifest).steps, 44);
  assert.deepEqual(
    r.checkpoints.map((c) => [c.step, c.kind]),
    [
      [10, "saved"],
      [44, "pinned"],
    ],
  );
  // a key already listed keeps its first entry
  assert.equal(runs.withManifest(r, { manifest, final: key("c"), link: "x" }).checkpoints.length, 2);
  assert.throws(() => runs.withStatus(r, "finished", { now: 1 }), { message: "not a run status: finished" });
});

test("deletion frees only objects no other run refers to", () => {
  const first = {
    ...fresh("a", 1),
    checkpoints: [
      { step: 5, key: key("1"), kind: "saved" },
      { step: 44, key: key("2"), kind: "pinned" },
      { step: 9, key: key("4"), kind: "rule" },
    ],
    final: key("2"),
  };
  const resumed = {
    ...fresh("b", 2),
    resumedFrom: key("1"),
    checkpoints: [{ step: 44, key: key("2"), kind: "pinned" }],
    final: key("2"),
  };
  const other = { ...fresh("c", 3), checkpoints: [{ step: 3, key: key("3"), kind: "saved" }] };
  const all = [first, resumed, other];
  const stored = new Set([key("1"), key("2"), key("3")]); // key("4") is gone already
  const ofFirst = runs.deletionPlan(first, all, stored);
  const ofResumed = runs.deletionPlan(resumed, all, stored);
  const alone = runs.deletionPlan(first, [first, other], stored);
  assert.deepEqual(ofFirst.free, []);
  assert.deepEqual(ofFirst.gone, [key("4")]);
  assert.deepEqual(
    ofFirst.kept.map((kept) => kept.key),
    [key("1"), key("2")],
  );
  assert.ok(ofFirst.kept[0].runs[0].startsWith("digits-mlp of "), ofFirst.kept[0].runs[0]);
  assert.deepEqual(plain(ofResumed), { free: [], kept: plain(ofResumed.kept), gone: [] });
  assert.deepEqual(
    ofResumed.kept.map((kept) => kept.key),
    [key("2"), key("1")],
  );
  assert.deepEqual(alone.free, [key("1"), key("2")]);
  assert.deepEqual(runs.referencedKeys(resumed), [key("2"), key("1")]);
  const text = runs.deletionText(first, ofFirst);
  assert.ok(text.lines.includes("No checkpoint object will be deleted."), JSON.stringify(text.lines));
  assert.equal(text.kept, "2 checkpoint objects are kept: other runs refer to them.");
  assert.equal(
    runs.deletionText(first, alone).lines[1],
    "2 checkpoint objects no other run refers to will be deleted:",
  );
});

test("runs sort newest first and summarise", () => {
  const a = fresh("a", 1000);
  const b = {
    ...fresh("b", 5000),
    status: "done",
    kind: "webgpu",
    device: "SwiftShader",
    rows: [row(1, 0.9, 0.3), row(2, 0.85, 0.4)],
  };
  const c = { ...fresh("c", 3000), status: "running" };
  assert.deepEqual(
    runs.sortedRuns([a, b, c]).map((r) => r.id),
    ["b", "c", "a"],
  );
  assert.deepEqual(runs.summaryCells(b, { now: 5000 + 90_000, live: "c" }), {
    program: "digits-mlp",
    data: "digits (this site)",
    level: "debug",
    device: "WebGPU: SwiftShader",
    status: "done",
    metric: "accuracy 85.0 % (best 90.0 %, epoch 1)",
    when: "1 min ago",
  });
  assert.deepEqual(
    [runs.summaryCells(c, { now: 3000, live: "c" }).status, runs.summaryCells(c, { now: 3000, live: null }).status],
    ["running", "interrupted"],
  );
  const cellsOfA = runs.summaryCells(a, { now: 1000 + 3 * 86_400_000, live: null });
  assert.equal(cellsOfA.metric, "—");
  assert.equal(cellsOfA.device, "the page's device");
  assert.match(cellsOfA.when, /^\d{4}-\d\d-\d\d \d\d:\d\d$/);
  const rows = [
    { epoch: 1, test: { loss: 0.5 } },
    { epoch: 2, test: { loss: "nan" } },
  ];
  assert.equal(runs.headline({ rows }).text, "loss nan (best 0.5000, epoch 1)");
  assert.equal(runs.formatWhen(0, 7_200_000), "2 h ago");
});

test("a resume needs the data the run read", () => {
  const v = (train, test) => [
    { split: "train", sha256: key(train) },
    { split: "test", sha256: key(test) },
  ];
  const site = (name, versions) => ({ name, versions });
  const same = runs.sameData(site("digits (this site)", v("1", "2")), site("this site's digits", v("1", "2")));
  const other = runs.sameData({ name: "x", versions: v("1", "2") }, { name: "x", versions: v("1", "3") });
  const byName = runs.sameData(site("digits (this site)", null), site("digits (this site)", null));
  const names = runs.sameData({ name: "a.csv", versions: null }, { name: "b.csv", versions: v("1", "2") });
  assert.deepEqual([same, other, byName, names], [true, false, true, false]);
  assert.deepEqual(plain(runs.resumeSettings(fresh())), {
    program: '{"name":"digits-mlp"}',
    level: "debug",
    seed: "5",
    epochs: 2,
    keep: 3,
  });
  const read = (value) => runs.readRecord(value);
  const keys = plain([read(fresh()).record?.id, read({ id: 3 }).damaged.key, read(null).damaged.key]);
  assert.deepEqual(keys, ["a", 3, null]);
});

// Records as stored, each with the problem its check must name (a path and words from it).
const MALFORMED = {
  "rows missing": [(r) => delete r.rows, "rows: expected a list, found nothing"],
  "rows[0] not an object": [(r) => (r.rows = [7]), "rows[0]: expected an object, found the number 7"],
  "rows[0].test not an object": [
    (r) => (r.rows = [{ ...row(1, 0.9, 0.3), test: null }]),
    "rows[0].test: expected an object",
  ],
  "a metric that is an object": [
    (r) => (r.rows = [{ ...row(1, 0.9, 0.3), test: { loss: {} } }]),
    'rows[0].test["loss"]',
  ],
  "started as text": [(r) => (r.started = "yesterday"), "started: expected a time"],
  "unknown status": [(r) => (r.status = "exploded"), "status: text of 8 characters is not one of running"],
  "a checkpoint's key": [(r) => (r.checkpoints = [{ step: 1, key: "sha256:zz", kind: "rule" }]), "checkpoints[0].key"],
  "a huge name": [(r) => (r.name = "x".repeat(2_000_000)), "name: text of 2,000,000 characters, more than the 1,000"],
  "a huge program": [(r) => (r.program = "x".repeat(17 * 1024 * 1024)), "program: text of 17,825,792 characters"],
  "data not an object": [(r) => (r.data = "digits"), "data: expected an object, found text of 6 characters"],
  "a newer format": [(r) => (r.format = 2), "format: the number 2, written by a newer version of this site"],
  "rerunOf missing in format 1": [(r) => delete r.rerunOf, "rerunOf: not a checkpoint key (nothing"],
  "id not its key": [(r) => (r.id = "other"), "id: differs from the key it is stored under"],
  "seed as a number": [(r) => (r.seed = 5), "seed: expected a whole number as text"],
  "epochs negative": [(r) => (r.epochs = -1), "epochs: expected a whole number from 0, found the number -1"],
};
const NOT_OBJECTS = [
  [null, "null"],
  [42, "the number 42"],
  ["text", "text of 4 characters"],
  [[1, 2], "a list"],
];

test("what a page writes stays within what a read accepts", () => {
  const long = "é".repeat(10_000);
  let r = runs.newRecord({ id: "a", now: 1, device: long, settings: { ...settings, data: { name: long } } });
  r = runs.withState(r, state(3, { device: long, epochs_done: [row(1, 0.9, 0.3)] })).record;
  r = runs.withStatus(r, "failed", { now: 2, error: long });
  assert.equal(runs.readRecord(r).record.status, "failed");
  assert.deepEqual([r.device.length, r.error.length, r.data.name.length], [4000, 4000, 1000]);
});

test("a stored record is checked field by field and damage is named", () => {
  const good = {
    ...fresh(),
    status: "done",
    rows: [row(1, 0.9, 0.3)],
    checkpoints: [{ step: 22, key: key("1"), kind: "rule" }],
    final: key("1"),
    manifest: "{}",
  };
  const read = runs.readRecord(structuredClone(good)).record;
  assert.deepEqual([read.id, read.format], ["a", 1]);
  const old = structuredClone(good);
  delete old.format;
  delete old.rerunOf;
  delete old.verdict;
  const upgraded = runs.readRecord(old).record;
  assert.deepEqual([upgraded.format, upgraded.rerunOf], [1, null]); // upgraded, kept
  for (const [name, [change, problem]] of Object.entries(MALFORMED)) {
    const r = structuredClone(good);
    change(r);
    const { damaged } = runs.readRecord(r, "a");
    assert.equal(damaged.key, "a", name);
    assert.ok(
      damaged.problems.some((p) => p.includes(problem)),
      `${name}: ${JSON.stringify(damaged)}`,
    );
    for (const p of damaged.problems) assert.ok(p.length < 400, name); // a huge value is described, not copied
  }
  for (const [value, found] of NOT_OBJECTS) {
    const { damaged } = runs.readRecord(value, "k");
    assert.deepEqual(damaged.problems, [`the record: expected an object, found ${found}`]);
  }
});

// A fixed set of random mutations of a valid record (mulberry32 from a fixed seed).
const MUTATIONS = 2000;

const seeded = (seed) => {
  let s = seed >>> 0;
  const next = () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const below = (n) => Math.floor(next() * n);
  return { random: next, below, choice: (list) => list[below(list.length)] };
};

// Every [container, key or index] in `node`, depth first.
const places = (node) => {
  if (node === null || typeof node !== "object") return [];
  const keys = Array.isArray(node) ? node.map((_, i) => i) : Object.keys(node);
  return keys.flatMap((k) => [[node, k], ...places(node[k])]);
};

// `record` with one to three random changes anywhere in it (a field dropped, retyped, grown).
const mutate = (record, rnd) => {
  const odd = [
    () => null,
    () => rnd.choice([-1, 0.5, 2 ** 60, 1e308]),
    () => "x".repeat(rnd.choice([0, 3, 5000, 20_000])),
    () => [],
    () => ({}),
    () => [null],
    () => true,
  ];
  let value = structuredClone(record);
  for (let changes = 1 + rnd.below(3); changes > 0; changes -= 1) {
    const paths = places(value);
    if (!paths.length || rnd.random() < 0.02) {
      value = odd[rnd.below(odd.length)]();
      continue;
    }
    const [parent, where] = paths[rnd.below(paths.length)];
    if (!Array.isArray(parent) && rnd.random() < 0.3) delete parent[where];
    else parent[where] = odd[rnd.below(odd.length)]();
  }
  return value;
};

test("mutated records are read or named damaged and never break the card", () => {
  // Each is read (and then every function the card calls on it answers) or named damaged; none throws.
  const good = plain({
    ...fresh(),
    status: "done",
    rows: [row(1, 0.9, 0.3), row(2, 0.95, 0.2)],
    checkpoints: [
      { step: 22, key: key("1"), kind: "rule" },
      { step: 44, key: key("2"), kind: "pinned" },
    ],
    final: key("2"),
    manifest: "{}",
    data: { name: "d", versions: [{ split: "train", sha256: "s", examples: 3 }] },
  });
  const rnd = seeded(19);
  const inputs = Array.from({ length: MUTATIONS }, () => mutate(good, rnd));
  const began = performance.now();
  const found = { read: 0, damaged: 0, crashes: [], unnamed: 0 };
  for (const value of inputs) {
    try {
      const read = runs.readRecord(value, value?.id ?? "k");
      if (read.record) {
        const r = read.record;
        runs.summaryCells(r, { now: 5000, live: null });
        runs.headline(r);
        runs.referencedKeys(r);
        runs.deletionPlan(r, [r], new Set());
        runs.deviceText(r);
        runs.resumeSettings(r);
        for (const row of r.rows) row.test.loss;
        found.read += 1;
      } else {
        found.damaged += 1;
        if (!read.damaged.problems.length) found.unnamed += 1;
        runs.damagedText(read.damaged);
      }
    } catch (error) {
      found.crashes.push(String(error));
    }
  }
  const elapsed = (performance.now() - began) / 1000;
  faultLog("runs-records", {
    inputs: MUTATIONS,
    read: found.read,
    damaged_named: found.damaged - found.unnamed,
    crashes: found.crashes.length,
    hangs: Number(elapsed > 60),
    silent_wrong: found.unnamed,
  });
  assert.deepEqual(found.crashes, []);
  assert.equal(found.unnamed, 0);
  assert.equal(found.read + found.damaged, MUTATIONS);
  assert.ok(found.damaged > Math.floor(MUTATIONS / 2), `${found.damaged} damaged`);
});

test("a rerun starts only within the cap and the room the browser gives", () => {
  const MiB = 1024 * 1024;
  const storage = { steps: 300, checkpoints: 301, per_checkpoint: 2 * MiB, bytes: 301 * 2 * MiB };
  const within = runs.rerunStorageCheck(storage, 1024 * MiB, 10 * 1024 * MiB);
  const unknownRoom = runs.rerunStorageCheck(storage, 1024 * MiB, null);
  const overCap = runs.rerunStorageCheck(storage, 100 * MiB, null);
  const overRoom = runs.rerunStorageCheck(storage, 1024 * MiB, 50 * MiB);
  const badCap = runs.rerunStorageCheck(storage, Number.NaN, null);
  const huge = { steps: 2 ** 53, checkpoints: 2 ** 53 + 1, per_checkpoint: 1000, bytes: (2 ** 53 + 1) * 1000 };
  const tooLong = runs.rerunStorageCheck(huge, 1024 * MiB, null);
  assert.ok(within.ok && unknownRoom.ok);
  assert.equal(
    within.text,
    "The re-run takes 300 steps; its checkpoints take at most 602 MiB (301 of 2 MiB each): within the storage " +
      "cap of 1 GiB and the 10 GiB this browser still lets this site store.",
  );
  assert.ok(!overCap.ok && overCap.text.includes("602 MiB (301 of 2 MiB each), more than the storage cap of 100 MiB"));
  assert.ok(!overRoom.ok && overRoom.text.includes("more than the 50 MiB this browser still lets this site store"));
  assert.ok(!badCap.ok && badCap.text.includes("a number of MiB above 0"));
  assert.ok(!tooLong.ok && tooLong.text.startsWith("Not started: the re-run takes 9,007,199,254,740,992 steps"));
});

test("a run trained and a rerun open side by side are both live", () => {
  const a = fresh("a");
  const b = { ...fresh("b"), rerunOf: key("9") };
  const c = fresh("c");
  const live = new Set(["a", "b"]);
  assert.deepEqual(
    [a, b, c].map((r) => runs.shownStatus(r, live)),
    ["running", "running", "interrupted"],
  );
});
