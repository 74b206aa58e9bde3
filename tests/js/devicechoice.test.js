// The device the page trains on (app/src/devicechoice.js) under Node: without a kept choice it is the one the
// engine's rule selected (scellis.runtime.devices.select, with its reason), a kept choice wins while its
// device is offered, a kept choice of a device that is gone is ignored, and without an adapter the CPU path
// is the only option.
import assert from "node:assert/strict";
import { test } from "node:test";
import { chooseDevice, deviceLine } from "../../app/src/devicechoice.js";

const cpu = { kind: "cpu", name: "CPU path (WebAssembly)", features: [] };
const gpu = (software) => ({
  kind: "webgpu",
  name: software ? "google swiftshader" : "acme x1",
  software,
  features: ["shader-f16"],
});
// reports as the engine makes them: the rule's choice and reason (tests/runtime/test_devices.py checks the rule)
const SOFTWARE_WHY =
  "google swiftshader is a software adapter (a CPU rasteriser), slower here than the CPU path: choose it to use it anyway";
const report = (offered) => {
  const adapter = offered.kind === "webgpu" ? offered : null;
  if (adapter && !adapter.software) {
    return {
      selected: { device: adapter, reason: "the first hardware WebGPU adapter found" },
      devices: [adapter, cpu],
    };
  }
  const reason = adapter ? SOFTWARE_WHY : "no usable GPU found";
  return { selected: { device: cpu, reason }, devices: [...(adapter ? [adapter] : []), cpu] };
};
const pick = (r, stored) => {
  const c = chooseDevice(r, stored);
  return { kind: c.kind, why: c.why, line: deviceLine(c), options: c.options.map((o) => o.label) };
};

test("the device chosen and why", () => {
  assert.deepEqual(pick(report(gpu(false)), null), {
    kind: "webgpu",
    why: "the first hardware WebGPU adapter found",
    line: "Runs on: WebGPU — acme x1",
    options: ["WebGPU — acme x1", "CPU path (WebAssembly)"],
  });
  const hardwareCpu = pick(report(gpu(false)), "cpu");
  assert.equal(hardwareCpu.kind, "cpu");
  assert.ok(hardwareCpu.why.startsWith("your choice"), hardwareCpu.why);
  const software = pick(report(gpu(true)), null);
  assert.equal(software.kind, "cpu");
  assert.equal(software.why, SOFTWARE_WHY);
  assert.deepEqual(software.options, ["WebGPU — google swiftshader (software adapter)", "CPU path (WebAssembly)"]);
  const softwareChosen = pick(report(gpu(true)), "webgpu");
  assert.equal(softwareChosen.line, "Runs on: WebGPU — google swiftshader (software adapter)");
  const none = pick(report(cpu), null);
  assert.deepEqual(none, pick(report(cpu), "webgpu")); // a kept choice of a device that is gone
  assert.deepEqual(none.options, ["CPU path (WebAssembly)"]);
  assert.equal(none.why, "no usable GPU found");
  assert.equal(pick(report(gpu(false)), "tpu").kind, "webgpu");
});
