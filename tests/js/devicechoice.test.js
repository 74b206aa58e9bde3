// The device the page trains on (app/src/devicechoice.js) under Node: a hardware adapter is chosen, a
// software one only when the user chose it (else the CPU path, saying why), a kept choice of a device that
// is gone is ignored, and without an adapter the CPU path is named as the only choice.
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
const report = (selected) => ({
  selected: { device: selected },
  devices: [...(selected.kind === "webgpu" ? [selected] : []), cpu],
});
const pick = (r, stored) => {
  const c = chooseDevice(r, stored);
  return { kind: c.kind, why: c.why, line: deviceLine(c), options: c.options.map((o) => o.label) };
};

test("the device chosen and why", () => {
  assert.deepEqual(pick(report(gpu(false)), null), {
    kind: "webgpu",
    why: "the WebGPU adapter this browser offers",
    line: "Runs on: WebGPU — acme x1",
    options: ["WebGPU — acme x1", "CPU path (WebAssembly)"],
  });
  const hardwareCpu = pick(report(gpu(false)), "cpu");
  assert.equal(hardwareCpu.kind, "cpu");
  assert.ok(hardwareCpu.why.startsWith("your choice"), hardwareCpu.why);
  const software = pick(report(gpu(true)), null);
  assert.equal(software.kind, "cpu");
  assert.ok(software.why.startsWith("google swiftshader is a software adapter (a CPU rasteriser)"), software.why);
  assert.deepEqual(software.options, ["WebGPU — google swiftshader (software adapter)", "CPU path (WebAssembly)"]);
  const softwareChosen = pick(report(gpu(true)), "webgpu");
  assert.equal(softwareChosen.line, "Runs on: WebGPU — google swiftshader (software adapter)");
  const none = pick(report(cpu), null);
  assert.deepEqual(none, pick(report(cpu), "webgpu")); // a kept choice of a device that is gone
  assert.deepEqual(none.options, ["CPU path (WebAssembly)"]);
  assert.ok(none.why.startsWith("no usable GPU"), none.why);
  assert.equal(pick(report(gpu(false)), "tpu").kind, "webgpu");
});
