// The WebGPU executor: replays a step plan built in Python (buffers, WGSL kernels,
// bindings, workgroup counts, carry copies). One call per step records every dispatch into one
// command encoder; each output read comes back through a mappable staging buffer of its own, copied
// in that same encoder and destroyed once read, so the next step can be submitted before the previous
// step's outputs are read (the caller need not wait for them). Compiling a plan makes its pipelines all
// at once, in parallel (createComputePipelineAsync), each distinct WGSL source once per device. A lost
// device (`device.lost`) is named: every call after the loss, and every read the loss cut short, fails
// with a GpuLostError saying what GPUDeviceLostInfo said, never with the raw AbortError of the mapping it
// interrupted.

import { GpuLostError, lossOf } from "./gpulost.js";
import { adapterIdentity, pageStorage, probeStore } from "./probes.js";

const STORAGE = () => GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;

// Whether `device` (named `name`) is lost: `lost` is its GPUDeviceLostInfo as data once it is, `check`
// throws the loss, `explain(error)` is the error a failed call becomes. A mapping the loss cut short
// rejects with an AbortError, and `device.lost` may settle a task later: that error waits for it.
export function watchLoss(device, name) {
  const watch = {
    lost: null,
    check(during) {
      if (watch.lost) throw new GpuLostError(watch.lost, name, during);
    },
    async explain(error, during) {
      if (watch.lost) return new GpuLostError(watch.lost, name, during);
      if (error?.name === "AbortError") return new GpuLostError(lossOf(await device.lost), name, during);
      return error;
    },
  };
  device.lost.then((info) => {
    watch.lost = lossOf(info);
  });
  return watch;
}

export class CompiledStep {
  // `watch`: watchLoss's, for the device the step runs on. `host`: the step this one is compiled alongside
  // (never run at the same time), whose buffers it borrows where `plan.borrows` names one (-1: its own).
  // `pipelines`: a PipelineCache that has made the plan's pipelines already (PipelineCache.make).
  constructor(device, plan, pipelines, watch, host = null) {
    this.device = device;
    this.watch = watch;
    this.names = plan.names;
    const borrows = plan.borrows ?? plan.buffers.map(() => -1);
    this.owned = plan.buffers.flatMap((size, i) => (borrows[i] < 0 ? [i] : []));
    this.buffers = plan.buffers.map((size, i) =>
      borrows[i] < 0 ? device.createBuffer({ size, usage: STORAGE() }) : host.buffers[borrows[i]],
    );
    this.allocated = this.owned.reduce((sum, i) => sum + this.buffers[i].size, 0);
    this.steps = plan.kernels.map((kernel) => {
      const pipeline = pipelines.get(kernel.source);
      const entries = kernel.bindings.map((b, binding) => ({ binding, resource: { buffer: this.buffers[b] } }));
      const bind = device.createBindGroup({ layout: pipeline.getBindGroupLayout(0), entries });
      return { pipeline, bind, workgroups: kernel.workgroups };
    });
    this.carry = plan.carry;
    this.host = { steps: 0, ms: 0 }; // what recording and submitting the steps took here (hostCost)
  }

  // The host's cost of the steps run so far: ms per step spent writing the inputs, recording every dispatch
  // and submitting, and µs per dispatch (that over the step's kernels); null before a step.
  hostCost() {
    if (!this.host.steps) return null;
    const perStep = this.host.ms / this.host.steps;
    return { steps: this.host.steps, ms_per_step: perStep, us_per_dispatch: (1000 * perStep) / this.steps.length };
  }

  write(name, bytes) {
    this.device.queue.writeBuffer(this.buffers[this.names[name]], 0, bytes);
  }

  // writes: {name: Uint8Array}; reads: names of outputs to bring back. Returns a Promise of
  // {name: ArrayBuffer} that settles after the GPU finishes; the caller need not wait for it.
  step(writes, reads) {
    this.watch.check("a step");
    const began = performance.now();
    for (const [name, bytes] of Object.entries(writes)) this.write(name, bytes);
    const encoder = this.device.createCommandEncoder();
    const pass = encoder.beginComputePass();
    for (const { pipeline, bind, workgroups } of this.steps) {
      pass.setPipeline(pipeline);
      pass.setBindGroup(0, bind);
      pass.dispatchWorkgroups(...workgroups);
    }
    pass.end();
    for (const [src, dst, size] of this.carry) {
      encoder.copyBufferToBuffer(this.buffers[src], 0, this.buffers[dst], 0, size);
    }
    const copies = this.stage(encoder, reads);
    this.device.queue.submit([encoder.finish()]);
    this.host.ms += performance.now() - began;
    this.host.steps += 1;
    return this.collect(copies, "a step");
  }

  // Bring outputs back without running anything.
  fetch(reads) {
    this.watch.check("reading the state back");
    const encoder = this.device.createCommandEncoder();
    const copies = this.stage(encoder, reads);
    this.device.queue.submit([encoder.finish()]);
    return this.collect(copies, "reading the state back");
  }

  // Copy the named buffers into `other`'s buffers of the same names (another step on this device), with
  // no round trip through the page: queued after every step submitted before.
  copyInto(other, names) {
    this.watch.check("a copy between steps");
    const encoder = this.device.createCommandEncoder();
    for (const name of names) {
      const source = this.buffers[this.names[name]];
      const target = other.buffers[other.names[name]];
      if (!source || !target) throw new Error(`the ${source ? "target" : "source"} step has no buffer ${name} to copy`);
      if (source.size !== target.size) {
        throw new Error(`${name} holds ${source.size} bytes in the source step and ${target.size} in the target`);
      }
      if (source !== target) encoder.copyBufferToBuffer(source, 0, target, 0, source.size); // shared: the same
    }
    this.device.queue.submit([encoder.finish()]);
  }

  stage(encoder, reads) {
    return reads.map((name) => {
      const source = this.buffers[this.names[name]];
      const usage = GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST;
      const staging = this.device.createBuffer({ size: source.size, usage });
      encoder.copyBufferToBuffer(source, 0, staging, 0, source.size);
      return [name, staging];
    });
  }

  collect(copies, during) {
    return Promise.all(
      copies.map(async ([name, staging]) => {
        try {
          await staging.mapAsync(GPUMapMode.READ);
        } catch (error) {
          staging.destroy();
          throw await this.watch.explain(error, during);
        }
        const data = new Uint8Array(staging.getMappedRange().slice(0));
        staging.destroy();
        return [name, data];
      }),
    ).then(Object.fromEntries);
  }

  destroy() {
    for (const i of this.owned) this.buffers[i].destroy(); // the borrowed ones are the host's to destroy
  }
}

// A device's compute pipelines by WGSL source: each source is compiled once, however many kernels and
// plans use it. A plan's pipelines may be begun ahead of its compile (`warm`): the compile then waits for
// those under way instead of beginning them.
class PipelineCache {
  constructor(device) {
    this.device = device;
    this.made = new Map(); // source -> GPUComputePipeline
    this.making = new Map(); // source -> Promise of it, while it is being made
  }

  // The pipelines of `kernels` ({source, label}) not made yet, all begun at once (the browser compiles them
  // in parallel) unless under way already. Resolves when each has settled, to what it took and the first
  // failure: {made: [{label, ms}] for those begun here, waited: how many were under way, cached: how many
  // were made already, failed: the first failure's reason or null}. A failed source is forgotten, so the
  // next call begins it again.
  async settle(kernels) {
    const waits = [];
    const took = { made: [], waited: 0, cached: 0, failed: null };
    for (const { source, label } of kernels) {
      if (this.made.has(source)) {
        took.cached += 1;
        continue;
      }
      if (this.making.has(source)) took.waited += 1;
      else {
        const began = performance.now();
        const module = this.device.createShaderModule({ code: source, label });
        const pending = this.device
          .createComputePipelineAsync({ layout: "auto", compute: { module, entryPoint: "main" }, label })
          .then((pipeline) => {
            this.made.set(source, pipeline);
            took.made.push({ label, ms: performance.now() - began });
          })
          .finally(() => this.making.delete(source));
        this.making.set(source, pending);
      }
      waits.push(this.making.get(source));
    }
    const settled = await Promise.allSettled(waits);
    took.failed = settled.find((s) => s.status === "rejected")?.reason ?? null;
    return took;
  }

  // Every pipeline `kernels` need, made: resolves to what it took (`settle`'s), or rejects with the first
  // failure (the others still settle).
  async make(kernels) {
    const took = await this.settle(kernels);
    if (took.failed) throw took.failed;
    return took;
  }

  // Begins the pipelines `kernels` need and returns at once, with a promise of what it took (`settle`'s):
  // a compile to come waits for them. Nothing fails here: a shader's validation error is caught in a scope
  // of its own and dropped, for its pipeline fails too, and the compile that needs it reports that failure
  // (or, once it is forgotten, begins the pipeline again under its own scope).
  warm(kernels) {
    this.device.pushErrorScope("validation");
    const took = this.settle(kernels);
    this.device.popErrorScope().catch(() => null);
    return took;
  }

  get(source) {
    const pipeline = this.made.get(source);
    if (!pipeline) throw new Error("a kernel's pipeline was not made before its step was compiled");
    return pipeline;
  }
}

// Whether `nbytes` can be allocated on `device` now, in buffers no larger than the largest; every
// buffer is destroyed before this resolves, whatever happens.
async function probe(device, nbytes) {
  const chunk = Math.floor(device.limits.maxBufferSize / 4) * 4;
  const buffers = [];
  device.pushErrorScope("out-of-memory");
  let thrown = false;
  try {
    for (let start = 0; start < nbytes; start += chunk) {
      const size = Math.ceil(Math.min(chunk, nbytes - start) / 4) * 4;
      buffers.push(device.createBuffer({ size, usage: GPUBufferUsage.STORAGE }));
    }
  } catch {
    thrown = true;
  }
  const error = await device.popErrorScope();
  for (const buffer of buffers) buffer.destroy();
  return !thrown && error === null;
}

// GPUDeviceLostInfo as data when `device` is lost by the time a round trip through it ends, else null.
// A lost device reports no error for anything, so a probe's answer means something only if this is null.
async function lostAfterRoundTrip(device, watch) {
  if (watch.lost) return watch.lost;
  const buffer = device.createBuffer({ size: 4, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
  try {
    await buffer.mapAsync(GPUMapMode.READ);
  } catch (error) {
    const explained = await watch.explain(error, "the allocation probe");
    if (explained instanceof GpuLostError)
      return watch.lost ?? { reason: explained.reason, message: explained.lostMessage };
    throw new Error(`the allocation probe's answer could not be confirmed: ${explained.message}`);
  } finally {
    buffer.destroy();
  }
  return watch.lost;
}

// The page's WebGPU device, opened once. Nothing fails silently: compiling a plan checks every
// pipeline and bind group under a validation error scope, and any later uncaptured error is kept
// and thrown by the next call; once the device is lost (`lost`: GPUDeviceLostInfo as data, else null)
// every call throws a GpuLostError. The probe's answers are kept per adapter in `storage` (probes.js),
// and only those measured on a device still alive after the probe. `line` (timeline.js's, or null) is
// told what each compile's pipelines and buffers took.
export async function openDevice(adapter, storage = pageStorage(), line = null) {
  // the optional features the fast level can use, enabled when the adapter has them
  const features = ["shader-f16"].filter((f) => adapter.features.has(f));
  // the adapter's largest buffers, not WebGPU's defaults (256 MiB buffers, 128 MiB bindings)
  const requiredLimits = {};
  for (const key of ["maxBufferSize", "maxStorageBufferBindingSize", "maxStorageBuffersPerShaderStage"]) {
    requiredLimits[key] = adapter.limits[key];
  }
  const device = await adapter.requestDevice({ requiredFeatures: features, requiredLimits });
  const pipelines = new PipelineCache(device);
  let failure = null;
  let claimed = false;
  device.addEventListener("uncapturederror", (event) => {
    failure = failure ?? event.error;
  });
  const info = adapter.info ?? {};
  const name = info.description || [info.vendor, info.architecture].filter(Boolean).join(" ") || "WebGPU adapter";
  const watch = watchLoss(device, name);
  const check = (during) => {
    watch.check(during);
    if (failure) throw new Error(`WebGPU error: ${failure.message}`);
  };
  const identity = adapterIdentity(adapter, globalThis.navigator?.userAgent);
  const measured = (nbytes) => {
    watch.check("the allocation probe");
    return probe(device, nbytes);
  };
  const probes = probeStore(storage, identity, measured, undefined, () => lostAfterRoundTrip(device, watch));
  return {
    device,
    name,
    get lost() {
      return watch.lost;
    },
    features,
    // an adapter that emulates a GPU on the CPU (SwiftShader, a fallback adapter): its matmuls take the
    // blocks made for it (the lowering's "software" feature)
    software: Boolean(info.isFallbackAdapter) || info.architecture === "swiftshader",
    limits: {
      max_buffer_size: device.limits.maxBufferSize,
      max_storage_binding: device.limits.maxStorageBufferBindingSize,
      max_storage_buffers: device.limits.maxStorageBuffersPerShaderStage,
    },
    probe: measured,
    // the probe's answer for `nbytes` as {fits, measured, stored}: from an earlier visit when kept
    measure: (nbytes) => probes.measure(nbytes),
    // "measure again": the next plan probes instead of reusing kept answers
    forgetProbes: () => probes.forget(),
    // Whether nothing has gone wrong on the device: not lost, no uncaptured error kept.
    get healthy() {
      return !watch.lost && !failure;
    },
    // Whether a run has been opened on the device (`claim`): a later run takes a fresh one.
    get claimed() {
      return claimed;
    },
    claim() {
      claimed = true;
    },
    // Begins making the pipelines `kernels` ({source, label}) need, for a compile to come, and returns at
    // once (PipelineCache.warm). Nothing on a lost device (the next call names the loss), nor, for a run to
    // come (`nextRun`), on a device a run has claimed: that run will not be on it.
    warm(kernels, nextRun = false) {
      if (watch.lost || (nextRun && claimed)) return;
      const began = performance.now();
      pipelines.warm(kernels).then((took) => {
        const failed = took.failed && String(took.failed.message ?? took.failed); // the compile reports it
        line?.record("pipelines made ahead", began, performance.now(), { ...took, failed });
      });
    },
    async compile(plan, host = null) {
      check(`compiling ${plan.name}`);
      device.pushErrorScope("validation");
      let made = null;
      const began = performance.now();
      try {
        const took = await pipelines.make(plan.kernels);
        line?.record(`pipelines: ${plan.name}`, began, performance.now(), took);
      } catch (error) {
        made = error;
      }
      const built = performance.now();
      const step = made ? null : new CompiledStep(device, plan, pipelines, watch, host);
      if (step) line?.record(`buffers: ${plan.name}`, built, performance.now(), { bytes: step.allocated });
      const error = (await device.popErrorScope()) ?? made;
      watch.check(`compiling ${plan.name}`); // a lost device reports no validation error
      if (error) throw new Error(`compiling ${plan.name} for WebGPU failed: ${error.message}`);
      const run = step.step.bind(step);
      step.step = (writes, reads) => {
        check("a step");
        return run(writes, reads);
      };
      return step;
    },
  };
}
