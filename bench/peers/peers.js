// The peer libraries' side of bench/peers.py: the same MLP training step as Scellis's (forward, softmax
// cross-entropy averaged over the batch, backward, plain SGD; float32) in TensorFlow.js and jax-js, timed
// as bench/timing.py times Scellis's. bench/peers.py bundles this page with esbuild and serves it with the
// workloads' data; the app's bundle never imports it.

import { defaultDevice, init, jit, nn, numpy as np, tree, valueAndGrad } from "@jax-js/jax";
import * as tf from "@tensorflow/tfjs-core";
import "@tensorflow/tfjs-core/dist/register_all_gradients";
import "@tensorflow/tfjs-backend-webgl";
import "@tensorflow/tfjs-backend-webgpu";

const CLASSES = 10;

// A workload as bench/peers.py serves it: `<key>.json` ({sizes, batch, lr}) and `<key>.bin`, which holds
// the batch's features (float32, batch x sizes[0], row-major), its labels (int32), then each layer's weight
// ([in, out], row-major) and bias (float32): Scellis's initial parameters, so every library starts from
// the same point and its first loss is Scellis's.
async function loadWorkload(key) {
  const spec = await (await fetch(`${key}.json`)).json();
  const bytes = await (await fetch(`${key}.bin`)).arrayBuffer();
  let at = 0;
  const take = (Type, n) => {
    const view = new Type(bytes, at, n);
    at += n * Type.BYTES_PER_ELEMENT;
    return view;
  };
  const { sizes, batch } = spec;
  const x = take(Float32Array, batch * sizes[0]);
  const y = take(Int32Array, batch);
  const layers = sizes.slice(1).map((out, i) => ({
    shape: [sizes[i], out],
    weight: take(Float32Array, sizes[i] * out),
    bias: take(Float32Array, out),
  }));
  if (at !== bytes.byteLength) throw new Error(`${key}.bin holds ${bytes.byteLength} bytes, expected ${at}`);
  return { ...spec, x, y, layers };
}

// A trainer holds one model's parameters: `step(read)` runs one training step on the batch, written from
// the host each step as Scellis's step writes it, and returns a handle on the loss when `read` (else
// null); `read(handle)` resolves to the loss once the device has it; `dispose()` frees the parameters.

function tfjsTrainer(w) {
  const vars = w.layers.flatMap((l) => [tf.variable(tf.tensor2d(l.weight, l.shape)), tf.variable(tf.tensor1d(l.bias))]);
  const optimizer = tf.train.sgd(w.lr);
  const logits = (x) => {
    let h = x;
    for (let i = 0; i < vars.length; i += 2) {
      h = tf.add(tf.matMul(h, vars[i]), vars[i + 1]);
      if (i + 2 < vars.length) h = tf.relu(h);
    }
    return h;
  };
  return {
    step(read) {
      const x = tf.tensor2d(w.x, [w.batch, w.sizes[0]]);
      const labels = tf.tidy(() => tf.cast(tf.oneHot(tf.tensor1d(w.y, "int32"), CLASSES), "float32"));
      const loss = optimizer.minimize(() => tf.losses.softmaxCrossEntropy(labels, logits(x)), read, vars);
      tf.dispose([x, labels]);
      return loss;
    },
    async read(loss) {
      const [value] = await loss.data();
      loss.dispose();
      return value;
    },
    dispose() {
      tf.dispose(vars);
      optimizer.dispose();
    },
  };
}

// Takes its arguments, as every jax-js function does (each array's reference is used up once).
function jaxLoss(params, x, y) {
  let h = x;
  for (let i = 0; i < params.length; i += 2) {
    h = np.dot(h, params[i]).add(params[i + 1]);
    if (i + 2 < params.length) h = nn.relu(h);
  }
  return nn
    .logSoftmax(h)
    .mul(nn.oneHot(y, CLASSES))
    .sum()
    .mul(-1 / y.shape[0]);
}

// One compiled step per workload and device, kept from round to round (as TF.js keeps its shaders).
const jaxSteps = new Map();

function jaxStep(device, w) {
  const key = `${device} ${w.sizes.join("-")} ${w.batch} ${w.lr}`;
  if (!jaxSteps.has(key)) {
    const step = (params, x, y) => {
      const [loss, grads] = valueAndGrad(jaxLoss)(tree.ref(params), x, y);
      return [params.map((p, i) => p.sub(grads[i].mul(w.lr))), loss];
    };
    jaxSteps.set(key, jit(step));
  }
  return jaxSteps.get(key);
}

function jaxTrainer(device, w) {
  const step = jaxStep(device, w);
  let params = w.layers.flatMap((l) => [
    np.array(l.weight, { shape: l.shape, device }),
    np.array(l.bias, { shape: [l.bias.length], device }),
  ]);
  return {
    step(read) {
      const x = np.array(w.x, { shape: [w.batch, w.sizes[0]], device });
      const y = np.array(w.y, { shape: [w.batch], dtype: np.int32, device });
      const [next, loss] = step(params, x, y);
      params = next;
      if (read) return loss;
      loss.dispose();
      return null;
    },
    async read(loss) {
      const [value] = await loss.data(); // data() uses up the array's reference
      return value;
    },
    dispose() {
      for (const p of params) p.dispose();
    },
  };
}

// One warm-up step from the initial parameters (its loss is the first loss; shaders and kernels get
// compiled there), then `steps` steps, the loss read back after each (`everyStep`) or after the last only.
async function timed(trainer, steps, everyStep) {
  const first = await trainer.read(trainer.step(true));
  const start = performance.now();
  let last = Number.NaN;
  for (let i = 0; i < steps; i++) {
    const read = everyStep || i === steps - 1;
    const loss = trainer.step(read);
    if (read) last = await trainer.read(loss);
  }
  return { ms_per_step: (performance.now() - start) / steps, first, last };
}

async function tfjsBackend(name) {
  try {
    if (await tf.setBackend(name)) return null;
    return `tf.setBackend("${name}") failed`;
  } catch (err) {
    return String(err);
  }
}

// Each contender: its name, why it cannot run here (null: it can), how to make it the current one, and
// its trainer.
async function contenders() {
  const jaxDevices = await init("webgpu", "wasm");
  const jax = (device, label) => ({
    name: `jax-js ${label}`,
    why: jaxDevices.includes(device) ? null : `jax-js init() offers no ${device} device`,
    select: async () => defaultDevice(device),
    trainer: (w) => jaxTrainer(device, w),
  });
  const tfjs = async (backend, label) => ({
    name: `TF.js ${label}`,
    why: await tfjsBackend(backend),
    select: () => tf.setBackend(backend),
    trainer: tfjsTrainer,
  });
  return [await tfjs("webgl", "WebGL"), await tfjs("webgpu", "WebGPU"), jax("webgpu", "WebGPU"), jax("wasm", "Wasm")];
}

// What the page's WebGL and WebGPU run on (SwiftShader, on these machines), for the report.
async function adapters() {
  const gl = document.createElement("canvas").getContext("webgl2");
  const info = gl?.getExtension("WEBGL_debug_renderer_info");
  const adapter = await navigator.gpu?.requestAdapter();
  return {
    webgl: gl ? gl.getParameter(info ? info.UNMASKED_RENDERER_WEBGL : gl.RENDERER) : "no WebGL2 context",
    webgpu: adapter
      ? [adapter.info.vendor, adapter.info.architecture, adapter.info.description].join(" ").trim()
      : "no adapter",
  };
}

async function start() {
  const all = await contenders();
  const workloads = new Map();
  const run = async (name, key, steps) => {
    const contender = all.find((c) => c.name === name);
    if (!workloads.has(key)) workloads.set(key, await loadWorkload(key));
    const w = workloads.get(key);
    await contender.select();
    const result = {};
    for (const [mode, everyStep] of [
      ["synced", true],
      ["batched", false],
    ]) {
      const trainer = contender.trainer(w);
      try {
        result[mode] = await timed(trainer, steps, everyStep);
      } finally {
        trainer.dispose();
      }
    }
    return result;
  };
  const listed = all.map(({ name, why }) => ({ name, why }));
  window.peers = { contenders: listed, adapters: await adapters(), run };
  document.getElementById("status").textContent = "ready";
  document.body.dataset.state = "ready";
}

start().catch((err) => {
  document.getElementById("status").textContent = String(err);
  document.body.dataset.state = "error";
});
