// WebGPU device loss in the engine's modules, under Node with a stand-in GPU (no browser): the probe store
// keeps no answer a lost device gave and trusts no stored answer it cannot vouch for (app/src/probes.js); the
// executor (app/src/executor.js) hears `device.lost`, answers every later call with a named GpuLostError (the
// reason and message of GPUDeviceLostInfo, the device named), never a raw AbortError, and its allocation probe
// on a lost device answers nothing and stores nothing.
import assert from "node:assert/strict";
import { test } from "node:test";
import { openDevice } from "../../app/src/executor.js";
import * as loss from "../../app/src/gpuloss.js";
import { GpuLostError, isGpuLost } from "../../app/src/gpulost.js";
import * as probes from "../../app/src/probes.js";
import { storage, thrownBy } from "./lib.js";

globalThis.GPUBufferUsage = { STORAGE: 128, COPY_SRC: 4, COPY_DST: 8, MAP_READ: 1 };
globalThis.GPUMapMode = { READ: 1 };

const MEMORY = 1 << 20; // the stand-in device's memory: a megabyte
const GIB64 = 64 * 1024 ** 3;

// An adapter whose device behaves as Chromium's does when it is lost: after destroy() it creates buffers
// without complaint, pops empty error scopes (so a probe "fits" anything), rejects mapAsync with an
// AbortError at once, and resolves `lost` only on a later task.
function standInAdapter() {
  const limits = { maxBufferSize: 1 << 30, maxStorageBufferBindingSize: 1 << 30, maxStorageBuffersPerShaderStage: 8 };
  let destroyed = false;
  let used = 0;
  let markLost;
  const scopes = [];
  const lost = new Promise((resolve) => {
    markLost = resolve;
  });
  const buffer = (size) => {
    const full = !destroyed && used + size > MEMORY && scopes.length;
    if (full) scopes[scopes.length - 1] ??= { message: "out of memory" };
    used += size;
    return {
      size,
      destroy() {
        used -= size;
      },
      async mapAsync() {
        await new Promise((resolve) => setImmediate(resolve)); // the GPU answers on a later task
        if (destroyed) throw new DOMException("The Device was lost before mapping was resolved.", "AbortError");
      },
      getMappedRange: () => new ArrayBuffer(size),
    };
  };
  const pass = { setPipeline() {}, setBindGroup() {}, dispatchWorkgroups() {}, end() {} };
  const device = {
    limits,
    lost,
    addEventListener() {},
    pushErrorScope() {
      scopes.push(null);
    },
    popErrorScope: async () => scopes.pop() ?? null,
    createBuffer: ({ size }) => buffer(size),
    createShaderModule: () => ({}),
    createComputePipelineAsync: async () => ({ getBindGroupLayout: () => ({}) }),
    createBindGroup: () => ({}),
    createCommandEncoder: () => ({ beginComputePass: () => pass, copyBufferToBuffer() {}, finish: () => ({}) }),
    queue: { submit() {}, writeBuffer() {}, onSubmittedWorkDone: async () => {} },
    destroy() {
      destroyed = true;
      setImmediate(() => markLost({ reason: "destroyed", message: "Device was destroyed." }));
    },
  };
  return {
    info: { vendor: "acme", architecture: "x1", device: "", description: "Acme X1" },
    limits,
    features: new Set(),
    requestDevice: async () => device,
  };
}

const identity = probes.adapterIdentity(standInAdapter(), "TestBrowser/1.0");
const now = () => new Date("2025-03-04T05:06:07.000Z");
const lostInfo = { reason: "destroyed", message: "Device was destroyed." };

test("an answer measured on a lost device is not kept", async () => {
  const kept = storage();
  let lost = null;
  const probe = async () => {
    lost = lostInfo;
    return true;
  };
  const store = probes.probeStore(kept, identity, probe, now, async () => lost);
  const e = await thrownBy(() => store.measure(2 ** 36)); // a lost device's answer is not handed on
  assert.equal(e.name, "GpuLostError");
  assert.equal(isGpuLost(e), true);
  assert.ok(e.message.includes("the GPU was lost (destroyed: Device was destroyed.)"), e.message);
  assert.deepEqual([...kept.items.keys()], []); // nothing stored from the lost device
  const [fits, notLost] = [async () => true, async () => null];
  const alive = probes.probeStore(kept, identity, fits, now, notLost);
  assert.deepEqual(await alive.measure(64), { fits: true, measured: "2025-03-04T05:06:07.000Z", stored: false });
  const entry = JSON.parse(kept.getItem(probes.storageKey(identity)));
  assert.equal(entry.format, "scellis-probes/2");
  assert.deepEqual(entry.answers, [{ bytes: 64, fits: true, measured: "2025-03-04T05:06:07.000Z" }]);
});

test("stored answers that cannot be vouched for are not trusted", async () => {
  const key = probes.storageKey(identity);
  const at = "2025-01-01T00:00:00.000Z";
  const answer = (bytes, fits) => ({ bytes, fits, measured: at });
  const entry = (answers, format = probes.FORMAT) => JSON.stringify({ format, identity, answers });
  const entries = {
    // the format before liveness was confirmed: its answers may be a lost device's
    unconfirmed: entry([answer(64, true)], "scellis-probes/1"),
    // more than any device WebGPU reaches has
    absurd: entry([answer(64, true), answer(2 ** 41, true)]),
    // a size said to fit above one said not to: no device answers so
    inconsistent: entry([answer(32, false), answer(64, true)]),
  };
  for (const [name, text] of Object.entries(entries)) {
    const kept = storage();
    kept.setItem(key, text);
    const calls = [];
    const probe = async (n) => {
      calls.push(n);
      return false;
    };
    const answered = await probes.probeStore(kept, identity, probe, now).measure(64);
    assert.deepEqual(calls, [64], name); // not trusted: measured again
    assert.equal(answered.stored, false, name);
  }
  const kept = storage();
  kept.setItem(key, entry([answer(32, true), answer(64, true), answer(2 ** 30, false)]));
  const trusted = await probes.probeStore(kept, identity, async () => false, now).measure(64);
  assert.deepEqual(trusted, { fits: true, measured: "2025-01-01T00:00:00.000Z", stored: true });
});

test("a lost device is named and its probe stores nothing", async () => {
  const kept = storage();
  const gpu = await openDevice(standInAdapter(), kept);
  assert.equal((await gpu.measure(4096)).fits, true);
  assert.equal(gpu.lost ?? null, null);
  gpu.device.destroy();
  const probe = await thrownBy(() => gpu.measure(GIB64)); // the probe on a lost device answers nothing
  assert.equal(probe.name, "GpuLostError");
  assert.ok(probe.message.includes("Acme X1") && probe.message.includes("destroyed"), probe.message);
  const [entry] = [...kept.items.values()].map((text) => JSON.parse(text));
  assert.deepEqual(
    entry.answers.map((a) => a.bytes),
    [4096],
  ); // the 64 GiB "fits" of the lost device was not kept
  assert.deepEqual(gpu.lost, { reason: "destroyed", message: "Device was destroyed." });
  assert.equal((await thrownBy(() => gpu.measure(8192))).name, "GpuLostError");
});

test("a step on a device lost mid-run fails with the loss, not an abort", async () => {
  const gpu = await openDevice(standInAdapter(), storage());
  const plan = { name: "step", names: { w: 0 }, buffers: [16], kernels: [], carry: [] };
  const step = await gpu.compile(plan);
  assert.deepEqual(Object.keys(await step.step({}, ["w"])), ["w"]);
  const pending = step.step({}, ["w"]);
  gpu.device.destroy(); // while the step's read is under way
  const during = await thrownBy(() => pending);
  assert.equal(during.name, "GpuLostError", `${during.name}: ${during.message}`);
  assert.equal(during.reason, "destroyed");
  assert.ok(during.message.startsWith("the GPU was lost (destroyed: Device was destroyed.)"), during.message);
  assert.ok(during.message.includes("Acme X1"), during.message);
  assert.equal((await thrownBy(() => step.step({}, ["w"]))).name, "GpuLostError");
  assert.equal((await thrownBy(() => step.fetch(["w"]))).name, "GpuLostError");
  assert.equal((await thrownBy(() => gpu.compile(plan))).name, "GpuLostError");
});

test("the run panel says where the run stopped and what it resumes from", () => {
  const error = new GpuLostError(lostInfo, "google swiftshader", "a step");
  const state = {
    step: 13,
    checkpoints: [
      { step: 4, key: "sha256:a" },
      { step: 12, key: "sha256:c" },
    ],
    saved: [{ step: 8, key: "sha256:b" }],
  };
  const unsaved = "its state at step 13 could not be saved: it was on the GPU that was lost (destroyed)";
  const from = loss.newestCheckpoint(state);
  assert.deepEqual(from, { step: 12, key: "sha256:c" });
  // the state saved at the loss comes first
  assert.deepEqual(loss.newestCheckpoint(state, "sha256:d"), { step: 13, key: "sha256:d" });
  assert.equal(loss.newestCheckpoint({ step: 2, checkpoints: [], saved: [] }), null);
  assert.equal(
    loss.lossWords(error, { state, saved: null, unsaved }, from),
    "The GPU was lost (destroyed: Device was destroyed.) during a step: google swiftshader does nothing more " +
      "until it is reopened. The run stopped at step 13. Its state at step 13 could not be saved: it was on the " +
      "GPU that was lost (destroyed). It can go on from the checkpoint of step 12 (sha256:c) on a fresh GPU device.",
  );
  const fresh = loss.lossWords(error, { state, saved: null, unsaved }, null);
  const said = "It wrote no checkpoint before the loss: on a fresh GPU device it starts again from its beginning.";
  assert.ok(fresh.endsWith(said), fresh);
  assert.equal(isGpuLost({ name: error.name, message: error.message }), true);
});
