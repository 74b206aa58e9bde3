// app/src/format.js under Node: what the page says about the engine, its self-checks included.
import assert from "node:assert/strict";
import { test } from "node:test";
import * as format from "../../app/src/format.js";

const check = (ok) => ({
  device: "d",
  level: "debug",
  kernels: ["matmul [dot]", "reduce"],
  ok,
  outputs_sha256: "67edfee7e3f2cf20a17b7849274baeb75820eb3739fd8c25a8fa1327e907e780",
});
const build = { engine_version: "0.1.0+abc", tools: { pyodide: "0.27.0" } };
const report = {
  engine_version: "0.1.0+abc",
  python: "CPython 3.12",
  environment: "browser (Pyodide)",
  cpu_check: check(true),
  webgpu_check: null,
};

test("the engine facts say what the self-check ran and found", () => {
  const cpu = Object.fromEntries(format.engineFacts(report, build, 1500));
  const both = Object.fromEntries(format.engineFacts({ ...report, webgpu_check: check(false) }, build, 1500));
  assert.equal(
    cpu["CPU path self-check"],
    "matmul [dot] + reduce at debug: agrees with float64; output 67edfee7e3f2cf20…",
  );
  assert.ok(!("WebGPU self-check" in cpu));
  assert.equal(cpu["Ready in"], "1.50 s");
  assert.ok(both["WebGPU self-check"].startsWith("matmul [dot] + reduce at debug: DISAGREES with float64"));
});
