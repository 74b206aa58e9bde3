"""WebGPU device loss in the engine's modules, under Node with a stand-in GPU (no browser): the probe store
keeps no answer a lost device gave and trusts no stored answer it cannot vouch for (app/src/probes.js); the
executor (app/src/executor.js) hears `device.lost`, answers every later call with a named GpuLostError (the
reason and message of GPUDeviceLostInfo, the device named), never a raw AbortError, and its allocation probe
on a lost device answers nothing and stores nothing."""

from __future__ import annotations

from pathlib import Path

from nodejs import run_node

ROOT = Path(__file__).resolve().parents[1]
SRC = (ROOT / "app" / "src").as_uri()

# A storage like localStorage; an adapter whose device behaves as Chromium's does when it is lost: after
# destroy() it creates buffers without complaint, pops empty error scopes (so a probe "fits" anything),
# rejects mapAsync with an AbortError at once, and resolves `lost` only on a later task.
PRELUDE = f"""
import assert from "node:assert/strict";
import * as probes from "{SRC}/probes.js";
import {{ openDevice }} from "{SRC}/executor.js";
import {{ GpuLostError, isGpuLost }} from "{SRC}/gpulost.js";
globalThis.GPUBufferUsage = {{ STORAGE: 128, COPY_SRC: 4, COPY_DST: 8, MAP_READ: 1 }};
globalThis.GPUMapMode = {{ READ: 1 }};
const storage = () => {{
  const items = new Map();
  return {{ items, getItem: (k) => (items.has(k) ? items.get(k) : null), setItem: (k, v) => items.set(k, String(v)),
    removeItem: (k) => items.delete(k) }};
}};
const MEMORY = 1 << 20;  // the stand-in device's memory: a megabyte
function standInAdapter() {{
  const limits = {{ maxBufferSize: 1 << 30, maxStorageBufferBindingSize: 1 << 30, maxStorageBuffersPerShaderStage: 8 }};
  let destroyed = false, used = 0, markLost;
  const scopes = [];
  const lost = new Promise((resolve) => {{ markLost = resolve; }});
  const buffer = (size) => {{
    const full = !destroyed && used + size > MEMORY && scopes.length;
    if (full) scopes[scopes.length - 1] ??= {{ message: "out of memory" }};
    used += size;
    return {{ size, destroy() {{ used -= size; }},
      async mapAsync() {{
        await new Promise((resolve) => setTimeout(resolve, 0));  // the GPU answers on a later task
        if (destroyed) throw new DOMException("The Device was lost before mapping was resolved.", "AbortError");
      }},
      getMappedRange: () => new ArrayBuffer(size) }};
  }};
  const device = {{
    limits, lost, addEventListener() {{}},
    pushErrorScope() {{ scopes.push(null); }},
    popErrorScope: async () => scopes.pop() ?? null,
    createBuffer: ({{ size }}) => buffer(size),
    createShaderModule: () => ({{}}),
    createComputePipeline: () => ({{ getBindGroupLayout: () => ({{}}) }}),
    createBindGroup: () => ({{}}),
    createCommandEncoder: () => ({{
      beginComputePass: () => ({{ setPipeline() {{}}, setBindGroup() {{}}, dispatchWorkgroups() {{}}, end() {{}} }}),
      copyBufferToBuffer() {{}}, finish: () => ({{}}),
    }}),
    queue: {{ submit() {{}}, writeBuffer() {{}}, onSubmittedWorkDone: async () => {{}} }},
    destroy() {{
      destroyed = true;
      setTimeout(() => markLost({{ reason: "destroyed", message: "Device was destroyed." }}), 0);
    }},
  }};
  return {{
    info: {{ vendor: "acme", architecture: "x1", device: "", description: "Acme X1" }},
    limits, features: new Set(), requestDevice: async () => device,
  }};
}}
const identity = probes.adapterIdentity(standInAdapter(), "TestBrowser/1.0");
const now = () => new Date("2025-03-04T05:06:07.000Z");
const lostInfo = {{ reason: "destroyed", message: "Device was destroyed." }};
const out = {{}};
"""

GIB64 = 64 * 1024**3


def run_js(body: str) -> dict:
    return run_node(PRELUDE, body)


def test_an_answer_measured_on_a_lost_device_is_not_kept() -> None:
    out = run_js("""
const kept = storage();
let lost = null;
const store = probes.probeStore(kept, identity, async () => { lost = lostInfo; return true; }, now, async () => lost);
try {
  await store.measure(2 ** 36);
  out.answer = "answered";
} catch (e) {
  out.error = { name: e.name, message: e.message, lost: isGpuLost(e) };
}
out.kept = [...kept.items.keys()];
const alive = probes.probeStore(kept, identity, async () => true, now, async () => null);
out.alive = await alive.measure(64);
out.entry = JSON.parse(kept.getItem(probes.storageKey(identity)));
""")
    assert "answer" not in out, "a lost device's answer was handed on"
    assert out["error"]["name"] == "GpuLostError" and out["error"]["lost"] is True
    assert "the GPU was lost (destroyed: Device was destroyed.)" in out["error"]["message"]
    assert out["kept"] == []  # nothing stored from the lost device
    assert out["alive"] == {"fits": True, "measured": "2025-03-04T05:06:07.000Z", "stored": False}
    assert out["entry"]["format"] == "scellis-probes/2"
    assert out["entry"]["answers"] == [{"bytes": 64, "fits": True, "measured": "2025-03-04T05:06:07.000Z"}]


def test_stored_answers_that_cannot_be_vouched_for_are_not_trusted() -> None:
    out = run_js("""
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
out.results = {};
for (const [name, text] of Object.entries(entries)) {
  const kept = storage();
  kept.setItem(key, text);
  const calls = [];
  const probe = async (n) => { calls.push(n); return false; };
  const answered = await probes.probeStore(kept, identity, probe, now).measure(64);
  out.results[name] = { answered, calls };
}
const kept = storage();
kept.setItem(key, entry([answer(32, true), answer(64, true), answer(2 ** 30, false)]));
out.trusted = await probes.probeStore(kept, identity, async () => false, now).measure(64);
""")
    for name, result in out["results"].items():
        assert result["calls"] == [64], name  # not trusted: measured again
        assert result["answered"]["stored"] is False, name
    assert out["trusted"] == {"fits": True, "measured": "2025-01-01T00:00:00.000Z", "stored": True}


def test_a_lost_device_is_named_and_its_probe_stores_nothing() -> None:
    out = run_js(f"""
const kept = storage();
const gpu = await openDevice(standInAdapter(), kept);
out.before = await gpu.measure(4096);
out.lostBefore = gpu.lost ?? null;
gpu.device.destroy();
try {{
  await gpu.measure({GIB64});
  out.fits = "answered";
}} catch (e) {{
  out.probe = {{ name: e.name, message: e.message }};
}}
const [entry] = [...kept.items.values()].map((text) => JSON.parse(text));
out.stored = entry.answers.map((a) => a.bytes);
out.lost = gpu.lost;
try {{ await gpu.measure(8192); }} catch (e) {{ out.later = e.name; }}
""")
    assert out["before"]["fits"] is True and out["lostBefore"] is None
    assert out.get("fits") is None, "the probe on a lost device answered"
    assert out["probe"]["name"] == "GpuLostError"
    assert "Acme X1" in out["probe"]["message"] and "destroyed" in out["probe"]["message"]
    assert out["stored"] == [4096]  # the 64 GiB "fits" of the lost device was not kept
    assert out["lost"] == {"reason": "destroyed", "message": "Device was destroyed."}
    assert out["later"] == "GpuLostError"


def test_a_step_on_a_device_lost_mid_run_fails_with_the_loss_not_an_abort() -> None:
    out = run_js("""
const gpu = await openDevice(standInAdapter(), storage());
const plan = { name: "step", names: { w: 0 }, buffers: [16], kernels: [], carry: [] };
const step = await gpu.compile(plan);
out.first = Object.keys(await step.step({}, ["w"]));
const pending = step.step({}, ["w"]);
gpu.device.destroy();  // while the step's read is under way
try { await pending; } catch (e) { out.during = { name: e.name, message: e.message, reason: e.reason }; }
try { await step.step({}, ["w"]); } catch (e) { out.after = e.name; }
try { await step.fetch(["w"]); } catch (e) { out.fetch = e.name; }
try { await gpu.compile(plan); } catch (e) { out.compile = e.name; }
""")
    assert out["first"] == ["w"]
    assert out["during"]["name"] == "GpuLostError", out["during"]
    assert out["during"]["reason"] == "destroyed"
    assert out["during"]["message"].startswith("the GPU was lost (destroyed: Device was destroyed.)")
    assert "Acme X1" in out["during"]["message"]
    assert (out["after"], out["fetch"], out["compile"]) == ("GpuLostError",) * 3


def test_the_run_panel_says_where_the_run_stopped_and_what_it_resumes_from() -> None:
    out = run_node(
        PRELUDE.replace("import * as probes", f'import * as loss from "{SRC}/gpuloss.js";\nimport * as probes'),
        """
const error = new GpuLostError(lostInfo, "google swiftshader", "a step");
const state = { step: 13, checkpoints: [{ step: 4, key: "sha256:a" }, { step: 12, key: "sha256:c" }],
  saved: [{ step: 8, key: "sha256:b" }] };
const unsaved = "its state at step 13 could not be saved: it was on the GPU that was lost (destroyed)";
out.from = loss.newestCheckpoint(state);
out.savedFrom = loss.newestCheckpoint(state, "sha256:d");
out.none = loss.newestCheckpoint({ step: 2, checkpoints: [], saved: [] });
out.words = loss.lossWords(error, { state, saved: null, unsaved }, out.from);
out.fresh = loss.lossWords(error, { state, saved: null, unsaved }, null);
out.overRpc = isGpuLost({ name: error.name, message: error.message });
""",
    )
    assert out["from"] == {"step": 12, "key": "sha256:c"}
    assert out["savedFrom"] == {"step": 13, "key": "sha256:d"}  # the state saved at the loss comes first
    assert out["none"] is None
    assert out["words"] == (
        "The GPU was lost (destroyed: Device was destroyed.) during a step: google swiftshader does nothing more "
        "until it is reopened. The run stopped at step 13. Its state at step 13 could not be saved: it was on the "
        "GPU that was lost (destroyed). It can go on from the checkpoint of step 12 (sha256:c) on a fresh GPU device."
    )
    assert out["fresh"].endswith(
        "It wrote no checkpoint before the loss: on a fresh GPU device it starts again from its beginning."
    )
    assert out["overRpc"] is True
