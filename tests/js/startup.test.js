// What a run's start takes in the engine's modules, under Node with a stand-in GPU whose pipelines are made
// when the test says: pipelines begun ahead (app/src/executor.js, `warm`) are made once, and the compile
// that needs them waits for them; none is begun for a run to come on a device a run has claimed; a shader
// that fails while made ahead fails the compile that needs it, named, never silently; and the spans of the page's timeline (app/src/timeline.js) cross from the worker's
// clock to the page's.
import assert from "node:assert/strict";
import { test } from "node:test";
import { openDevice } from "../../app/src/executor.js";
import { measureSpan, PREFIX, timeline } from "../../app/src/timeline.js";
import { storage } from "./lib.js";

globalThis.GPUBufferUsage = { STORAGE: 128, COPY_SRC: 4, COPY_DST: 8, MAP_READ: 1 };

// An adapter whose device makes a pipeline when `finish(code)` says, and fails the shaders named `bad`.
function slowAdapter() {
  const limits = { maxBufferSize: 1 << 30, maxStorageBufferBindingSize: 1 << 30, maxStorageBuffersPerShaderStage: 8 };
  const begun = []; // the code of each pipeline begun, in order
  const waiting = new Map(); // code -> [resolve, reject] of the pipeline being made
  const scopes = [];
  const device = {
    limits,
    lost: new Promise(() => {}),
    addEventListener() {},
    pushErrorScope() {
      scopes.push(null);
    },
    popErrorScope: async () => scopes.pop() ?? null,
    createBuffer: ({ size }) => ({ size, destroy() {} }),
    createShaderModule({ code }) {
      if (code === "bad" && scopes.length) scopes[scopes.length - 1] ??= { message: "bad is not WGSL" };
      return { code };
    },
    createComputePipelineAsync({ compute }) {
      begun.push(compute.module.code);
      return new Promise((resolve, reject) => waiting.set(compute.module.code, [resolve, reject]));
    },
    createBindGroup: () => ({}),
  };
  const finish = (code) => {
    const [resolve, reject] = waiting.get(code);
    waiting.delete(code);
    if (code === "bad") reject(new Error("Invalid ShaderModule (bad)"));
    else resolve({ getBindGroupLayout: () => ({}) });
  };
  const adapter = {
    info: { vendor: "acme", architecture: "x1", device: "", description: "Acme X1" },
    limits,
    features: new Set(),
    requestDevice: async () => device,
  };
  return { adapter, begun, finish, waiting };
}

const plan = (name, sources) => ({
  name,
  buffers: [16],
  names: { x: 0 },
  carry: [],
  kernels: sources.map((source) => ({ source, label: source, bindings: [0], workgroups: [1, 1, 1] })),
});

const settled = (promise) => {
  const seen = { done: false };
  promise.then(
    () => {
      seen.done = true;
    },
    () => {
      seen.done = true;
    },
  );
  return seen;
};

const turn = () => new Promise((resolve) => setImmediate(resolve));

test("pipelines begun ahead are made once, and the compile that needs them waits for them", async () => {
  const gpu = slowAdapter();
  const spans = [];
  const line = timeline((span) => spans.push(span));
  const device = await openDevice(gpu.adapter, storage(), line);
  device.warm(plan("step", ["a", "b"]).kernels);
  assert.deepEqual(gpu.begun, ["a", "b"]); // begun at once, nothing awaited
  const compiling = device.compile(plan("step", ["a", "b", "c"]));
  const seen = settled(compiling);
  await turn();
  assert.deepEqual(gpu.begun, ["a", "b", "c"]); // only the one not begun ahead
  gpu.finish("a");
  gpu.finish("c");
  await turn();
  assert.equal(seen.done, false); // "b" is still being made
  gpu.finish("b");
  const step = await compiling;
  assert.equal(step.steps.length, 3);
  await turn();
  const names = spans.map((s) => s.name);
  assert.deepEqual(names.sort(), ["buffers: step", "pipelines made ahead", "pipelines: step"]);
  const compiled = spans.find((s) => s.name === "pipelines: step").detail;
  assert.deepEqual([compiled.made.map((m) => m.label), compiled.waited, compiled.cached], [["c"], 2, 0]);
  device.warm(plan("step", ["a", "b", "c"]).kernels); // all made: nothing begun again
  assert.equal(gpu.begun.length, 3);
});

test("a device a run has claimed makes nothing ahead for a run to come, only for its own", async () => {
  const gpu = slowAdapter();
  const device = await openDevice(gpu.adapter, storage());
  device.warm(plan("step", ["a"]).kernels, true);
  device.claim();
  device.warm(plan("step", ["b"]).kernels, true); // the next run takes a fresh device
  device.warm(plan("evaluation", ["c"]).kernels); // the claimed run's own
  assert.deepEqual([gpu.begun, device.claimed], [["a", "c"], true]);
});

test("a shader that fails while made ahead fails the compile that needs it, named", async () => {
  const gpu = slowAdapter();
  const device = await openDevice(gpu.adapter, storage());
  device.warm(plan("step", ["bad"]).kernels); // nothing thrown here
  gpu.finish("bad");
  await turn();
  assert.equal(device.healthy, true); // its validation error was caught in the warm's own scope
  const compiling = device.compile(plan("step", ["bad"]));
  await turn();
  assert.deepEqual(gpu.begun, ["bad", "bad"]); // forgotten once failed: begun again, under the compile's scope
  gpu.finish("bad");
  await assert.rejects(compiling, /compiling step for WebGPU failed: bad is not WGSL/);
});

test("spans cross from the worker's clock to the page's as measures", () => {
  const worker = { timeOrigin: 1000, now: () => 50 };
  const sent = [];
  timeline((span) => sent.push(span), worker).record("call: plan", 10, 30, { n: 1 });
  assert.deepEqual(sent, [{ name: "call: plan", start: 1010, end: 1030, detail: { n: 1 } }]);
  const measured = [];
  const page = { timeOrigin: 400, measure: (name, options) => measured.push([name, options]) };
  measureSpan(sent[0], page);
  assert.deepEqual(measured, [[`${PREFIX}call: plan`, { start: 610, end: 630, detail: { n: 1 } }]]);
});
