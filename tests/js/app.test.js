// The app's pure modules under Node (no browser): the probe store kept per adapter across visits
// (app/src/probes.js), the memory plan panel's chart model (app/src/plan.js), the object store's keys
// (app/src/store.js; its IndexedDB part runs in e2e/test_store_in_chromium.py) and the run panel's logic
// (app/src/runmodel.js: the chunked driver, figures, the last run's record, keys and data files) and the
// page-to-worker calls (app/src/rpc.js) over a MessageChannel.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { test } from "node:test";
import * as guide from "../../app/src/guidemodel.js";
import * as plan from "../../app/src/plan.js";
import * as probes from "../../app/src/probes.js";
import * as rpc from "../../app/src/rpc.js";
import * as runs from "../../app/src/runmodel.js";
import * as objects from "../../app/src/store.js";
import { storage } from "./lib.js";

// A probe that counts its calls, and an adapter whose limits live on a prototype, as GPUSupportedLimits' do.
const counting = (fits) => {
  const probe = async (n) => {
    probe.calls.push(n);
    return fits(n);
  };
  probe.calls = [];
  return probe;
};
const limits = Object.create({ maxBufferSize: 1024, maxStorageBufferBindingSize: 512, label: "not a number" });
const adapter = { info: { vendor: "acme", architecture: "x1", device: "", description: "Acme X1" }, limits };
const identity = probes.adapterIdentity(adapter, "TestBrowser/1.0");
const now = () => new Date("2025-03-04T05:06:07.000Z");
const MEASURED = "2025-03-04T05:06:07.000Z";

test("identity names the adapter, its limits and the browser", () => {
  assert.deepEqual(identity, {
    vendor: "acme",
    architecture: "x1",
    device: "",
    description: "Acme X1",
    limits: { maxBufferSize: 1024, maxStorageBufferBindingSize: 512 },
    userAgent: "TestBrowser/1.0",
  });
  const key = probes.storageKey(identity);
  assert.ok(key.startsWith("scellis.probes:") && key.length === "scellis.probes:".length + 8, key);
});

test("answers are reused on a later visit and not by another adapter", async () => {
  const kept = storage();
  const probe = counting((n) => n <= 100);
  const first = await probes.probeStore(kept, identity, probe, now).measure(64);
  const refusing = counting(() => false);
  const later = await probes.probeStore(kept, identity, refusing, now).measure(64);
  const other = probes.adapterIdentity(adapter, "OtherBrowser/2.0");
  const elsewhere = counting(() => true);
  const fromOther = await probes.probeStore(kept, other, elsewhere, now).measure(64);
  const store = probes.probeStore(kept, identity, probe, now);
  store.forget();
  const again = await store.measure(64);
  assert.deepEqual(first, { fits: true, measured: MEASURED, stored: false });
  assert.deepEqual(later, { fits: true, measured: MEASURED, stored: true });
  assert.equal(fromOther.stored, false);
  assert.equal(elsewhere.calls.length, 1);
  assert.equal(again.stored, false);
  assert.deepEqual(probe.calls, [64, 64]); // measured again after forget()
});

test("corrupt, foreign or tampered entries are ignored and replaced", async () => {
  const key = probes.storageKey(identity);
  const good = { bytes: 64, fits: true, measured: "2025-01-01T00:00:00.000Z" };
  const entries = {
    corrupt: "{not json",
    foreign: JSON.stringify({ format: "other/9", identity, answers: [good] }),
    anotherAdapter: JSON.stringify({ format: probes.FORMAT, identity: { ...identity, vendor: "x" }, answers: [good] }),
    badAnswer: JSON.stringify({
      format: probes.FORMAT,
      identity,
      answers: [good, { ...good, bytes: 32, fits: "yes" }],
    }),
    badDate: JSON.stringify({ format: probes.FORMAT, identity, answers: [{ ...good, measured: "yesterday" }] }),
    notAList: JSON.stringify({ format: probes.FORMAT, identity, answers: { 64: true } }),
    nullEntry: "null",
  };
  for (const [name, text] of Object.entries(entries)) {
    const kept = storage();
    kept.setItem(key, text);
    const probe = counting(() => false);
    const answer = await probes.probeStore(kept, identity, probe, now).measure(64);
    const replaced = JSON.parse(kept.getItem(key));
    assert.equal(probe.calls.length, 1, name); // not trusted: the probe runs
    assert.deepEqual(answer, { fits: false, measured: MEASURED, stored: false }, name);
    assert.equal(replaced.format, "scellis-probes/2", name);
    assert.deepEqual(replaced.answers, [{ bytes: 64, fits: false, measured: MEASURED }], name);
  }
  const kept = storage();
  kept.setItem(key, JSON.stringify({ format: probes.FORMAT, identity, answers: [good] }));
  const refusing = counting(() => false);
  const trusted = await probes.probeStore(kept, identity, refusing, now).measure(64);
  assert.deepEqual(trusted, { fits: true, measured: "2025-01-01T00:00:00.000Z", stored: true });
});

test("storage that refuses keeps nothing and fails nothing", async () => {
  const refuse = () => {
    throw new Error("quota exceeded");
  };
  const refusing = { getItem: () => null, setItem: refuse, removeItem: refuse };
  const fits = counting(() => true);
  const store = probes.probeStore(refusing, identity, fits, now);
  assert.deepEqual(await store.measure(8), { fits: true, measured: MEASURED, stored: false });
  store.forget();
});

const PLAN = {
  program: "p",
  batch: 64,
  total: 1000,
  green_share: 0.8,
  budget: { bytes: 2000, how: "test", cap: null },
  breakdown: [
    { category: "parameters", bytes: 300 },
    { category: "gradients", bytes: 0 },
  ],
  functions: [
    { name: "training step", bytes: 300, held: true },
    { name: "evaluation", bytes: 700, held: true },
    { name: "init", bytes: 50, held: false },
  ],
  remedies: [],
};

test("the chart puts parts and budget on one scale", () => {
  const near = plan.chartModel(PLAN);
  const far = plan.chartModel({ ...PLAN, budget: { bytes: 1e9, how: "far", cap: null } });
  const unmeasured = plan.chartModel({ ...PLAN, budget: { bytes: null, how: "no probe", cap: null } });
  assert.deepEqual(
    near.segments.map((s) => [s.label, s.start, s.width]),
    [
      ["parameters", 0, 15],
      ["evaluation (compiled alongside)", 15, 35],
    ],
  ); // gradients (0 bytes) has no segment; init is not held
  assert.deepEqual(
    near.parts.map((p) => p.label),
    ["parameters", "gradients", "evaluation (compiled alongside)"],
  );
  assert.equal(near.total, 1000);
  assert.equal(near.scale, 2000);
  const [budget, green] = near.markers;
  assert.deepEqual([budget.kind, budget.at, budget.beyond, budget.title], ["budget", 100, false, "2,000 bytes"]);
  assert.deepEqual([green.kind, green.at, green.label], ["green", 80, "green up to 80 %"]);
  assert.equal(far.scale, 1250);
  assert.ok(far.markers[0].beyond);
  assert.equal(far.markers[0].at, 100);
  assert.deepEqual(unmeasured.markers, []);
  assert.equal(unmeasured.scale, 1250);
});

test("words for remedies, functions and the memory limit", () => {
  const remedy = plan.remedyLabel({ name: "batch 32", total: 1258291, verdict: { color: "green", reasons: [] } });
  assert.equal(remedy, "Apply: batch 32 — 1.2 MiB, green");
  assert.equal(
    plan.functionLine({ name: "init", bytes: 2048, held: false }),
    "2 KiB (runs once before training; not in the total)",
  );
  assert.equal(
    plan.programLine({ program: "digits-mlp", batch: 32 }, ["batch 32"]),
    "digits-mlp, batch 32 (changed: batch 32)",
  );
  const caps = ["", " 1.5 ", "0", "-2", "lots"].map(plan.capFromText);
  assert.deepEqual(caps.slice(0, 2), [{ cap: null }, { cap: 1572864 }]);
  for (const c of caps.slice(2)) assert.ok(c.error.startsWith("the memory limit must be a positive number of MiB"));
});

test("object keys in the page are the engine's", async () => {
  // scellis.store.key_of: "sha256:" and the SHA-256 of the bytes, in lowercase hexadecimal
  const keyOf = (text) => `sha256:${createHash("sha256").update(text).digest("hex")}`;
  assert.equal(await objects.keyOf(new Uint8Array(0)), keyOf(""));
  assert.equal(await objects.keyOf(new TextEncoder().encode("abc")), keyOf("abc"));
  assert.equal(await objects.keyOf(new TextEncoder().encode("xabcx").subarray(1, 4)), keyOf("abc"));
  const refused = [`sha256:${"A".repeat(64)}`, `sha256:${"0".repeat(63)}`, "abc", 7].map((key) => {
    try {
      objects.checkKey(key);
      return null;
    } catch (error) {
      return [error.name, error.detail.key];
    }
  });
  assert.deepEqual(refused, [
    ["BadKey", `sha256:${"A".repeat(64)}`],
    ["BadKey", `sha256:${"0".repeat(63)}`],
    ["BadKey", "abc"],
    ["BadKey", "7"],
  ]);
});

// A run that takes `total` steps, answering as scellis.app.Driven does (JSON text); each advance is logged.
const fakeRun = (total) => {
  const run = { step: 0, calls: [] };
  run.advance = async (n) => {
    run.calls.push(n);
    run.step = Math.min(run.step + n, total);
    const done = run.step === total;
    const state = { step: run.step, total, epoch: 1, epochs: 1, steps_per_s: 100, eta_s: done ? 0 : 1, done };
    return JSON.stringify({ ...state, stopped: false });
  };
  return run;
};

test("the driver runs in chunks, pauses, steps and goes on", async () => {
  let clock = 0;
  const run = fakeRun(100);
  const seen = [];
  let turns = 0;
  // each chunk takes 10 ms per step of simulated time; the page's turn between chunks pauses after the third
  const advance = async (n) => {
    clock += 10 * n;
    return run.advance(n);
  };
  const wait = async () => {
    turns += 1;
    if (turns === 3) driver.paused = true;
  };
  const driver = new runs.Driver({ advance }, { onState: (s) => seen.push(s.step), now: () => clock, wait });
  const paused = (await driver.go()).step;
  const stepped = (await driver.step()).step;
  const tooSoon = await driver.go().then(async () => {
    try {
      await driver.step();
      return "no error";
    } catch {
      return "after the end";
    }
  });
  const { calls } = run;
  const [first, second, third] = calls;
  assert.equal(paused, first + second + third);
  assert.equal(calls[0], 1); // the first step's loss as soon as it is back
  assert.equal(stepped, paused + 1);
  assert.equal(calls[3], 1);
  assert.equal(driver.last.step, 100);
  assert.ok(driver.last.done);
  assert.equal(tooSoon, "no error");
  assert.equal(seen.at(-1), 100);
  assert.deepEqual(
    seen,
    [...seen].sort((a, b) => a - b),
  );
  assert.ok(Math.max(...calls) <= 60); // 150 ms at 10 ms a step, changing at most fourfold per chunk
  let refused = "none";
  const slow = () =>
    new Promise((resolve) => setImmediate(() => resolve(JSON.stringify({ step: 1, total: 5, done: false })))); // on a later task
  const busy = new runs.Driver({ advance: slow }, { onState: () => {}, wait: async () => {} });
  const going = busy.go();
  try {
    await busy.step();
  } catch (e) {
    refused = e.message;
  }
  busy.paused = true;
  await going;
  assert.equal(refused, "pause the run before taking a single step");
});

test("chunks aim at the target and change at most fourfold", () => {
  assert.equal(runs.nextChunk(4, 4, 1), 16); // 4,000 steps/s: 600 wanted, at most 16
  assert.equal(runs.nextChunk(100, 100, 150), 100); // on target
  assert.equal(runs.nextChunk(100, 100, 60000), 25); // far too slow: a quarter
  assert.equal(runs.nextChunk(8, 0, 0), 16); // unknown
  assert.equal(runs.nextChunk(1900, 1900, 1), 2000); // the cap
  assert.equal(runs.nextChunk(1, 1, 10000), 1);
});

test("figures and durations", () => {
  const at = (state) => runs.figures({ total: 440, epochs: 20, ...state });
  const start = at({ step: 0, epoch: 1, steps_per_s: null, eta_s: null, done: false });
  const going = at({ step: 120, epoch: 6, steps_per_s: 85.24, eta_s: 3.75, done: false });
  const soon = at({ step: 439, epoch: 20, steps_per_s: 361, eta_s: 0.003, done: false });
  const done = at({ step: 440, epoch: 20, steps_per_s: 90, eta_s: 0, done: true });
  const stopped = at({ step: 300, epoch: 14, steps_per_s: 90, eta_s: 0, done: true, stopped: true });
  assert.equal(start, "step 0 of 440 · epoch 1 of 20");
  assert.equal(going, "step 120 of 440 · epoch 6 of 20 · 85.2 steps/s · about 4 s left");
  assert.equal(done, "step 440 of 440 · epoch 20 of 20 · 90.0 steps/s · done");
  assert.ok(stopped.endsWith("· stopped by a rule"), stopped);
  assert.ok(soon.endsWith("· 361 steps/s · under a second left"), soon);
  const gpu = at({ step: 120, epoch: 6, steps_per_s: 85.24, eta_s: 3.75, done: false, host_us_per_dispatch: 7.26 });
  assert.equal(gpu, "step 120 of 440 · epoch 6 of 20 · 85.2 steps/s · host 7.3 µs a dispatch · about 4 s left");
  assert.ok(at({ step: 1, epoch: 1, steps_per_s: 9, eta_s: 50, host_us_per_dispatch: 31.7 }).includes("host 32 µs"));
  assert.deepEqual([0.2, 59.4, 61, 3600 * 2 + 65].map(runs.formatDuration), [
    "under a second",
    "59 s",
    "1 min 01 s",
    "2 h 01 min",
  ]);
  const phases = Object.fromEntries(["running", "paused", "done", "failed", "idle"].map((p) => [p, runs.controls(p)]));
  assert.deepEqual(phases.running, {
    pause: true,
    step: false,
    continue: false,
    save: false,
    pinned: false,
    resume: false,
  });
  assert.deepEqual(phases.paused, { pause: false, step: true, continue: true, save: true, pinned: true, resume: true });
  assert.ok(phases.done.pinned && phases.done.save && !phases.done.step);
  assert.ok(phases.idle.resume && !phases.idle.pinned);
});

test("figures read the same at any speed", () => {
  // The rate and the time left as a slow machine, a fast one and the boundaries between wordings give
  // them: no exponent notation, no "0.00 steps/s", a minute never shown as "60 s".
  const at = (rate, eta) =>
    runs.figures({ step: 4, total: 88, epoch: 1, epochs: 4, steps_per_s: rate, eta_s: eta, done: false });
  assert.equal(at(0.0004, 210000), "step 4 of 88 · epoch 1 of 4 · under 0.01 steps/s · about 58 h 20 min left");
  assert.equal(at(0.0371, 2264.2), "step 4 of 88 · epoch 1 of 4 · 0.0371 steps/s · about 37 min 44 s left");
  assert.equal(at(126.4, 0.66), "step 4 of 88 · epoch 1 of 4 · 126 steps/s · under a second left");
  assert.equal(at(48213.7, 0.0017), "step 4 of 88 · epoch 1 of 4 · 48,214 steps/s · under a second left");
  assert.equal(at(null, null), "step 4 of 88 · epoch 1 of 4");
  const rates = [0.001, 0.01, 0.0999, 1, 9.996, 99.94, 99.96, 100, 999.5, 1234567.8].map(runs.formatRate);
  assert.deepEqual(rates, [
    "under 0.01",
    "0.0100",
    "0.0999",
    "1.00",
    "10.0",
    "99.9",
    "100",
    "100",
    "1,000",
    "1,234,568",
  ]);
  const durations = [0, 0.999, 1, 1.49, 59.49, 59.5, 3599.4, 3599.5, 86400 * 3 + 7].map(runs.formatDuration);
  assert.deepEqual(durations, [
    "under a second",
    "under a second",
    "1 s",
    "1 s",
    "59 s",
    "1 min 00 s",
    "59 min 59 s",
    "1 h 00 min",
    "72 h 00 min",
  ]);
});

test("the last run is kept, checked and dropped when unreadable", () => {
  const key = `sha256:${"ab".repeat(32)}`;
  const kept = storage();
  assert.equal(runs.lastRun(kept), null);
  const record = { program: "{}", level: "debug", seed: "7", epochs: 2, kind: "cpu", key, step: 25 };
  runs.rememberRun(kept, record);
  const back = runs.lastRun(kept);
  assert.equal(back.key, key);
  assert.equal(back.step, 25);
  kept.setItem(runs.LAST_RUN, "{not json");
  assert.equal(runs.lastRun(kept), null);
  assert.equal(kept.items.has(runs.LAST_RUN), false);
  kept.setItem(runs.LAST_RUN, JSON.stringify({ ...record, level: "turbo" }));
  assert.equal(runs.lastRun(kept), null);
  assert.throws(() => runs.rememberRun(kept, { ...record, key: "sha256:12" }), {
    message: "not a checkpoint key: sha256:12",
  });
});

test("keys, data files and file names are checked", () => {
  const key = `sha256:${"0f".repeat(32)}`;
  assert.deepEqual(runs.keyFromText(`  sha256:${"0F".repeat(32)}  `), { key });
  assert.equal(
    runs.keyFromText("sha256:12").error,
    'a checkpoint key is "sha256:" and 64 hexadecimal digits; got "sha256:12"',
  );
  assert.deepEqual(runs.checkDataFiles([...runs.DATA_FILES].reverse()), {});
  const missing = runs.checkDataFiles(runs.DATA_FILES.slice(1)).error;
  assert.ok(missing.startsWith("missing digits-train-x.f32: choose all four data files"), missing);
  const extra = runs.checkDataFiles([...runs.DATA_FILES, "notes.txt"]).error;
  assert.ok(extra.startsWith("notes.txt: not one of the data files"), extra);
  assert.equal(runs.manifestName("digits mlp/v2", key), "digits-mlp-v2-0f0f0f0f0f0f.manifest.json");
  assert.equal(runs.manifestName("///", key), "run-0f0f0f0f0f0f.manifest.json");
  assert.deepEqual(
    [runs.weightsName("digits mlp/v2", 88), runs.weightsName(undefined, 0)],
    ["digits-mlp-v2-step88.safetensors", "run-step0.safetensors"],
  );
  assert.deepEqual(
    ["adapter", "model", "torch"].map((what) => runs.exportName("digits cnn", what, 12)),
    ["digits-cnn-peft-adapter-step12.zip", "digits-cnn-model-step12.zip", "digits-cnn-pytorch-step12.zip"],
  );
});

test("calls, events and errors cross a message port", async () => {
  const { port1, port2 } = new MessageChannel();
  const served = rpc.serve(port2, {
    add: (a, b) => a + b,
    later: async (x) => {
      await new Promise((r) => setImmediate(r)); // answers on a later task
      return { x, list: [1, 2] };
    },
    fails: () => {
      const e = new Error("Traceback ...\nValueError: the seed must be a whole number");
      e.type = "ValueError";
      throw e;
    },
    shout: (word) => {
      served.emit("heard", word.toUpperCase());
      return "ok";
    },
  });
  const caller = rpc.connect(port1);
  const heard = [];
  caller.on("heard", (word) => heard.push(word));
  const sums = await Promise.all([caller.call("add", 2, 3), caller.call("later", "y"), caller.call("add", "a", "b")]);
  assert.deepEqual(sums, [5, { x: "y", list: [1, 2] }, "ab"]);
  await assert.rejects(caller.call("fails"), (e) => {
    assert.deepEqual(
      { message: e.message, type: e.type },
      { message: "Traceback ...\nValueError: the seed must be a whole number", type: "ValueError" },
    );
    return true;
  });
  await assert.rejects(caller.call("missing", 1), { message: 'the engine has no call named "missing"' });
  assert.equal(await caller.call("shout", "hi"), "ok");
  assert.deepEqual(heard, ["HI"]);
  const lonely = new MessageChannel();
  const stuck = rpc.connect(lonely.port1); // nobody answers
  const pending = stuck.call("anything").catch((e) => e.message);
  stuck.close("the worker went away");
  assert.equal(await pending, "the worker went away");
  lonely.port1.close();
  lonely.port2.close();
  const changes = [];
  const kept = rpc.mirroredStorage({ a: "1" }, (key, value) => changes.push([key, value]));
  kept.setItem("b", 2);
  kept.removeItem("a");
  assert.deepEqual(
    { a: kept.getItem("a"), b: kept.getItem("b"), changes },
    {
      a: null,
      b: "2",
      changes: [
        ["b", "2"],
        ["a", null],
      ],
    },
  );
  port1.close();
  port2.close();
});

const LINKS = {
  kernel_stages: [4, 5],
  texts: {
    forward: { first_op_line: 8, stage: 1 },
    backward: { first_op_line: 8, stage: 2 },
    optimizer: { first_op_line: 17, stage: 3 },
    step: { first_op_line: 17, stage: 3 },
  },
  nodes: [
    { id: "hidden", op: "linear", ir: { forward: [0, 1], backward: [5], optimizer: [9, 2] }, kernels: [0, 2] },
    { id: "relu", op: "relu", ir: { forward: [2], backward: [], optimizer: [] }, kernels: [2] },
  ],
  kernels: [
    {
      index: 0,
      label: "matmul",
      kind: "matmul",
      dispatch: [2, 1, 1],
      bindings: [0, 3],
      cpu: ["sc_matmul"],
      nodes: ["hidden"],
      ops: [0, 1],
      wgsl_lines: [1, 3],
    },
    {
      index: 1,
      label: "copy",
      kind: "copy",
      dispatch: [1, 1, 1],
      bindings: [4],
      cpu: [],
      nodes: ["loop"],
      ops: [7],
      wgsl_lines: [5, 6],
    },
    {
      index: 2,
      label: "elementwise",
      kind: "elementwise",
      dispatch: [32, 1, 1],
      bindings: [3, 5],
      cpu: ["sc_cpu_tape"],
      nodes: ["hidden", "relu"],
      ops: [2, 3],
      wgsl_lines: [8, 11],
    },
  ],
};

// The Guide's stages as [title, text]; the WGSL stage (5) holds each kernel after its header line.
const WGSL = [
  "// k0: matmul, bindings [0, 3], dispatch (2, 1, 1)",
  "@compute fn k0() {",
  "}",
  "",
  "// k1: copy, bindings [4], dispatch (1, 1, 1)",
  "@compute fn k1() {}",
  "",
  "// k2: elementwise, bindings [3, 5], dispatch (32, 1, 1)",
  "@compute fn k2() {",
  "  let x = 1.0;",
  "}",
].join("\n");
const STAGES = [0, 1, 2, 3, 4].map((i) => [`stage ${i}`, "text"]).concat([["WGSL (training step)", WGSL]]);

test("a kernel's code is its lines of the WGSL stage, the links holding no copy", () => {
  assert.equal(guide.kernelCode(LINKS, STAGES, 0), "@compute fn k0() {\n}");
  assert.equal(guide.kernelCode(LINKS, STAGES, 1), "@compute fn k1() {}");
  assert.equal(guide.kernelCode(LINKS, STAGES, 2), "@compute fn k2() {\n  let x = 1.0;\n}");
});

test("the guide links nodes to lines, kernels and bars", () => {
  assert.deepEqual(guide.nodeLines(LINKS, "hidden"), { 1: [8, 9], 2: [13], 3: [19, 26] });
  assert.deepEqual(guide.nodeLines(LINKS, "absent"), {});
  assert.deepEqual(guide.kernelsOf(LINKS, "hidden"), [
    { index: 0, label: "matmul", others: [] },
    { index: 2, label: "elementwise", others: ["relu"] },
  ]);
  assert.deepEqual(guide.kernelLines(LINKS, 2), { 3: [19, 20] });
  assert.deepEqual(
    [guide.kernelSummary(LINKS.kernels[0]), guide.kernelSummary(LINKS.kernels[1])],
    [
      "k0: matmul (matmul), workgroups (2, 1, 1), bindings [0, 3]; CPU path: sc_matmul",
      "k1: copy (copy), workgroups (1, 1, 1), bindings [4]; CPU path: nothing (a copy on the host)",
    ],
  );
  const buffers = [
    { id: 0, name: "x", bytes: 64, slot: 0, category: "batch inputs", first: null, last: null },
    { id: 5, name: null, bytes: 32, slot: 1, category: "activations", first: 3, last: 3 },
    { id: 6, name: null, bytes: 32, slot: 1, category: "gradients", first: 4, last: 9 },
  ];
  const bars = guide.timelineBars({ kernels: 10, slots: [64, 32], buffers }).map((b) => [b.row, b.x, b.width, b.whole]);
  assert.deepEqual(bars, [
    [0, 0, 10, true],
    [1, 3, 1, false],
    [1, 4, 6, false],
  ]);
});

test("a name without a handler goes to the served fallback, and an inherited name is no handler", async () => {
  const { port1, port2 } = new MessageChannel();
  rpc.serve(port2, { add: (a, b) => a + b }, (name, args) => {
    if (name === "missing") throw new Error(`the engine has no call named ${JSON.stringify(name)}`);
    return { name, args };
  });
  const caller = rpc.connect(port1);
  assert.equal(await caller.call("add", 2, 3), 5);
  assert.deepEqual(await caller.call("plan", { data: "site", level: "prod" }), {
    name: "plan",
    args: { data: "site", level: "prod" },
  });
  assert.deepEqual(await caller.call("toString"), { name: "toString", args: undefined }); // not the inherited one
  await assert.rejects(caller.call("missing", {}), { message: 'the engine has no call named "missing"' });
  port1.close();
  port2.close();
});
