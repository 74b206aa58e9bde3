"""The app's pure modules under Node (no browser): the probe store kept per adapter across visits
(app/src/probes.js), the memory plan panel's chart model (app/src/plan.js), the object store's keys
(app/src/store.js; its IndexedDB part runs in e2e/test_store_in_chromium.py) and the run panel's logic
(app/src/runmodel.js: the chunked driver, figures, the last run's record, keys and data files) and the
page-to-worker calls (app/src/rpc.js) over a MessageChannel."""

from __future__ import annotations

import json
from pathlib import Path

from nodejs import run_node

from scellis.store import key_of

ROOT = Path(__file__).resolve().parents[1]
SRC = (ROOT / "app" / "src").as_uri()

# A storage like localStorage, a probe that counts its calls, and an adapter whose limits live on a
# prototype, as GPUSupportedLimits' do.
PRELUDE = f"""
import assert from "node:assert/strict";
import * as probes from "{SRC}/probes.js";
import * as plan from "{SRC}/plan.js";
import * as objects from "{SRC}/store.js";
import * as runs from "{SRC}/runmodel.js";
import * as rpc from "{SRC}/rpc.js";
import * as guide from "{SRC}/guidemodel.js";
const storage = () => {{
  const items = new Map();
  return {{ items, getItem: (k) => (items.has(k) ? items.get(k) : null), setItem: (k, v) => items.set(k, String(v)),
    removeItem: (k) => items.delete(k) }};
}};
const counting = (fits) => {{
  const probe = async (n) => {{ probe.calls.push(n); return fits(n); }};
  probe.calls = [];
  return probe;
}};
const limits = Object.create({{ maxBufferSize: 1024, maxStorageBufferBindingSize: 512, label: "not a number" }});
const adapter = {{ info: {{ vendor: "acme", architecture: "x1", device: "", description: "Acme X1" }}, limits }};
const identity = probes.adapterIdentity(adapter, "TestBrowser/1.0");
const now = () => new Date("2025-03-04T05:06:07.000Z");
const out = {{}};
"""


def run_js(body: str) -> dict:
    return run_node(PRELUDE, body)


def test_identity_names_the_adapter_its_limits_and_the_browser() -> None:
    out = run_js("out.identity = identity; out.key = probes.storageKey(identity);")
    assert out["identity"] == {
        "vendor": "acme",
        "architecture": "x1",
        "device": "",
        "description": "Acme X1",
        "limits": {"maxBufferSize": 1024, "maxStorageBufferBindingSize": 512},
        "userAgent": "TestBrowser/1.0",
    }
    assert out["key"].startswith("scellis.probes:") and len(out["key"]) == len("scellis.probes:") + 8


def test_answers_are_reused_on_a_later_visit_and_not_by_another_adapter() -> None:
    out = run_js("""
const kept = storage();
const probe = counting((n) => n <= 100);
out.first = await probes.probeStore(kept, identity, probe, now).measure(64);
out.later = await probes.probeStore(kept, identity, counting(() => false), now).measure(64);
out.calls = probe.calls;
const other = probes.adapterIdentity(adapter, "OtherBrowser/2.0");
const elsewhere = counting(() => true);
out.other = await probes.probeStore(kept, other, elsewhere, now).measure(64);
out.otherCalls = elsewhere.calls.length;
const store = probes.probeStore(kept, identity, probe, now);
store.forget();
out.again = await store.measure(64);
out.calls = probe.calls;
""")
    assert out["first"] == {"fits": True, "measured": "2025-03-04T05:06:07.000Z", "stored": False}
    assert out["later"] == {"fits": True, "measured": "2025-03-04T05:06:07.000Z", "stored": True}
    assert out["other"]["stored"] is False and out["otherCalls"] == 1
    assert out["again"]["stored"] is False and out["calls"] == [64, 64]  # measured again after forget()


def test_corrupt_foreign_or_tampered_entries_are_ignored_and_replaced() -> None:
    out = run_js("""
const key = probes.storageKey(identity);
const good = { bytes: 64, fits: true, measured: "2025-01-01T00:00:00.000Z" };
const entries = {
  corrupt: "{not json",
  foreign: JSON.stringify({ format: "other/9", identity, answers: [good] }),
  anotherAdapter: JSON.stringify({ format: probes.FORMAT, identity: { ...identity, vendor: "x" }, answers: [good] }),
  badAnswer: JSON.stringify({ format: probes.FORMAT, identity, answers: [good, { ...good, bytes: 32, fits: "yes" }] }),
  badDate: JSON.stringify({ format: probes.FORMAT, identity, answers: [{ ...good, measured: "yesterday" }] }),
  notAList: JSON.stringify({ format: probes.FORMAT, identity, answers: { 64: true } }),
  nullEntry: "null",
};
out.results = {};
for (const [name, text] of Object.entries(entries)) {
  const kept = storage();
  kept.setItem(key, text);
  const probe = counting(() => false);
  const answer = await probes.probeStore(kept, identity, probe, now).measure(64);
  const replaced = JSON.parse(kept.getItem(key));
  out.results[name] = { answer, calls: probe.calls.length, replaced };
}
const kept = storage();
kept.setItem(key, JSON.stringify({ format: probes.FORMAT, identity, answers: [good] }));
out.trusted = await probes.probeStore(kept, identity, counting(() => false), now).measure(64);
""")
    for name, result in out["results"].items():
        assert result["calls"] == 1, name  # not trusted: the probe runs
        assert result["answer"] == {"fits": False, "measured": "2025-03-04T05:06:07.000Z", "stored": False}, name
        assert result["replaced"]["format"] == "scellis-probes/2", name
        assert result["replaced"]["answers"] == [{"bytes": 64, "fits": False, "measured": "2025-03-04T05:06:07.000Z"}]
    assert out["trusted"] == {"fits": True, "measured": "2025-01-01T00:00:00.000Z", "stored": True}


def test_storage_that_refuses_keeps_nothing_and_fails_nothing() -> None:
    out = run_js("""
const refuse = () => { throw new Error("quota exceeded"); };
const refusing = { getItem: () => null, setItem: refuse, removeItem: refuse };
const store = probes.probeStore(refusing, identity, counting(() => true), now);
out.answer = await store.measure(8);
store.forget();
out.forgot = true;
""")
    assert out == {"answer": {"fits": True, "measured": "2025-03-04T05:06:07.000Z", "stored": False}, "forgot": True}


PLAN = {
    "program": "p",
    "batch": 64,
    "total": 1000,
    "green_share": 0.8,
    "budget": {"bytes": 2000, "how": "test", "cap": None},
    "breakdown": [{"category": "parameters", "bytes": 300}, {"category": "gradients", "bytes": 0}],
    "functions": [
        {"name": "training step", "bytes": 300, "held": True},
        {"name": "evaluation", "bytes": 700, "held": True},
        {"name": "init", "bytes": 50, "held": False},
    ],
    "remedies": [],
}


def test_the_chart_puts_parts_and_budget_on_one_scale() -> None:
    out = run_js(f"""
const shown = {json.dumps(PLAN)};
out.near = plan.chartModel(shown);
out.far = plan.chartModel({{ ...shown, budget: {{ bytes: 1e9, how: "far", cap: null }} }});
out.unmeasured = plan.chartModel({{ ...shown, budget: {{ bytes: null, how: "no probe", cap: null }} }});
""")
    near = out["near"]
    assert [(s["label"], s["start"], s["width"]) for s in near["segments"]] == [
        ("parameters", 0, 15),
        ("evaluation (compiled alongside)", 15, 35),
    ]  # gradients (0 bytes) has no segment; init is not held
    assert [p["label"] for p in near["parts"]] == ["parameters", "gradients", "evaluation (compiled alongside)"]
    assert near["total"] == 1000 and near["scale"] == 2000
    budget, green = near["markers"]
    assert (budget["kind"], budget["at"], budget["beyond"], budget["title"]) == ("budget", 100, False, "2,000 bytes")
    assert (green["kind"], green["at"], green["label"]) == ("green", 80, "green up to 80 %")
    far = out["far"]
    assert far["scale"] == 1250 and far["markers"][0]["beyond"] and far["markers"][0]["at"] == 100
    assert out["unmeasured"]["markers"] == [] and out["unmeasured"]["scale"] == 1250


def test_words_for_remedies_functions_and_the_memory_limit() -> None:
    out = run_js("""
out.remedy = plan.remedyLabel({ name: "batch 32", total: 1258291, verdict: { color: "green", reasons: [] } });
out.init = plan.functionLine({ name: "init", bytes: 2048, held: false });
out.program = plan.programLine({ program: "digits-mlp", batch: 32 }, ["batch 32"]);
out.caps = ["", " 1.5 ", "0", "-2", "lots"].map(plan.capFromText);
""")
    assert out["remedy"] == "Apply: batch 32 — 1.2 MiB, green"
    assert out["init"] == "2 KiB (runs once before training; not in the total)"
    assert out["program"] == "digits-mlp, batch 32 (changed: batch 32)"
    assert out["caps"][:2] == [{"cap": None}, {"cap": 1572864}]
    assert all(c["error"].startswith("the memory limit must be a positive number of MiB") for c in out["caps"][2:])


def test_object_keys_in_the_page_are_the_engines() -> None:
    out = run_js("""
out.empty = await objects.keyOf(new Uint8Array(0));
out.abc = await objects.keyOf(new TextEncoder().encode("abc"));
out.view = await objects.keyOf(new TextEncoder().encode("xabcx").subarray(1, 4));
out.refused = ["sha256:" + "A".repeat(64), "sha256:" + "0".repeat(63), "abc", 7].map((key) => {
  try { objects.checkKey(key); return null; } catch (error) { return [error.name, error.detail.key]; }
});
""")
    assert out["empty"] == key_of(b"")
    assert out["abc"] == out["view"] == key_of(b"abc")
    assert out["refused"] == [
        ["BadKey", "sha256:" + "A" * 64],
        ["BadKey", "sha256:" + "0" * 63],
        ["BadKey", "abc"],
        ["BadKey", "7"],
    ]


# A run that takes `total` steps, answering as scellis.app.Driven does (JSON text); each advance is logged.
FAKE_RUN = """
const fakeRun = (total) => {
  const run = { step: 0, calls: [] };
  run.advance = async (n) => {
    run.calls.push(n);
    run.step = Math.min(run.step + n, total);
    const done = run.step === total;
    return JSON.stringify({ step: run.step, total, epoch: 1, epochs: 1, steps_per_s: 100, eta_s: done ? 0 : 1, done,
      stopped: false });
  };
  return run;
};
let clock = 0;
const fakeNow = () => clock;
"""


def test_the_driver_runs_in_chunks_pauses_steps_and_goes_on() -> None:
    out = run_js(
        FAKE_RUN
        + """
const run = fakeRun(100);
const seen = [];
let turns = 0;
// each chunk takes 10 ms per step of simulated time; the page's turn between chunks pauses after the third
const driver = new runs.Driver({ advance: async (n) => { clock += 10 * n; return run.advance(n); } },
  { onState: (s) => seen.push(s.step), now: fakeNow,
    wait: async () => { turns += 1; if (turns === 3) driver.paused = true; } });
out.paused = (await driver.go()).step;
out.stepped = (await driver.step()).step;
out.tooSoon = await driver.go().then(async () => {
  try { await driver.step(); return "no error"; } catch (e) { return "after the end"; }
});
out.last = driver.last.step;
out.done = driver.last.done;
out.calls = run.calls;
out.seen = seen;
let refused = "none";
const busy = new runs.Driver({ advance: () => new Promise((resolve) => setTimeout(() => resolve(JSON.stringify(
  { step: 1, total: 5, done: false })), 5)) }, { onState: () => {}, wait: async () => {} });
const going = busy.go();
try { await busy.step(); } catch (e) { refused = e.message; }
busy.paused = true;
await going;
out.refused = refused;
"""
    )
    assert out["paused"] == sum(out["calls"][:3]) and out["calls"][0] == 4
    assert out["stepped"] == out["paused"] + 1 and out["calls"][3] == 1
    assert out["last"] == 100 and out["done"] and out["tooSoon"] == "no error"
    assert out["seen"][-1] == 100 and out["seen"] == sorted(out["seen"])
    assert max(out["calls"]) <= 60  # 150 ms at 10 ms a step, changing at most fourfold per chunk
    assert out["refused"] == "pause the run before taking a single step"


def test_chunks_aim_at_the_target_and_change_at_most_fourfold() -> None:
    out = run_js(
        """
out.fast = runs.nextChunk(4, 4, 1);          // 4,000 steps/s: 600 wanted, at most 16
out.steady = runs.nextChunk(100, 100, 150);  // on target
out.slow = runs.nextChunk(100, 100, 60000);  // far too slow: a quarter
out.unknown = runs.nextChunk(8, 0, 0);
out.cap = runs.nextChunk(1900, 1900, 1);
out.one = runs.nextChunk(1, 1, 10000);
"""
    )
    assert out == {"fast": 16, "steady": 100, "slow": 25, "unknown": 16, "cap": 2000, "one": 1}


def test_figures_and_durations() -> None:
    out = run_js(
        """
out.start = runs.figures({ step: 0, total: 440, epoch: 1, epochs: 20, steps_per_s: null, eta_s: null, done: false });
out.going = runs.figures({ step: 120, total: 440, epoch: 6, epochs: 20, steps_per_s: 85.24, eta_s: 3.75, done: false });
out.soon = runs.figures({ step: 439, total: 440, epoch: 20, epochs: 20, steps_per_s: 361, eta_s: 0.003, done: false });
out.done = runs.figures({ step: 440, total: 440, epoch: 20, epochs: 20, steps_per_s: 90, eta_s: 0, done: true });
out.stopped = runs.figures({ step: 300, total: 440, epoch: 14, epochs: 20, steps_per_s: 90, eta_s: 0, done: true,
  stopped: true });
out.durations = [0.2, 59.4, 61, 3600 * 2 + 65].map(runs.formatDuration);
out.phases = Object.fromEntries(["running", "paused", "done", "failed", "idle"].map((p) => [p, runs.controls(p)]));
"""
    )
    assert out["start"] == "step 0 of 440 · epoch 1 of 20"
    assert out["going"] == "step 120 of 440 · epoch 6 of 20 · 85.2 steps/s · about 4 s left"
    assert out["done"] == "step 440 of 440 · epoch 20 of 20 · 90.0 steps/s · done"
    assert out["stopped"].endswith("· stopped by a rule")
    assert out["soon"].endswith("· 361 steps/s · under a second left")
    assert out["durations"] == ["under a second", "59 s", "1 min 01 s", "2 h 01 min"]
    phases = out["phases"]
    assert phases["running"] == {
        "pause": True,
        "step": False,
        "continue": False,
        "save": False,
        "pinned": False,
        "resume": False,
    }
    assert phases["paused"] == {
        "pause": False,
        "step": True,
        "continue": True,
        "save": True,
        "pinned": True,
        "resume": True,
    }
    assert phases["done"]["pinned"] and phases["done"]["save"] and not phases["done"]["step"]
    assert phases["idle"]["resume"] and not phases["idle"]["pinned"]


def test_figures_read_the_same_at_any_speed() -> None:
    """The rate and the time left as a slow machine, a fast one and the boundaries between wordings give
    them: no exponent notation, no "0.00 steps/s", a minute never shown as "60 s"."""
    out = run_js(
        """
const at = (rate, eta) => runs.figures({ step: 4, total: 88, epoch: 1, epochs: 4, steps_per_s: rate, eta_s: eta,
  done: false });
out.figures = {
  crawling: at(0.0004, 210000), slow: at(0.0371, 2264.2), steady: at(126.4, 0.66), fast: at(48213.7, 0.0017),
  unmeasured: at(null, null),
};
out.rates = [0.001, 0.01, 0.0999, 1, 9.996, 99.94, 99.96, 100, 999.5, 1234567.8].map(runs.formatRate);
out.durations = [0, 0.999, 1, 1.49, 59.49, 59.5, 3599.4, 3599.5, 86400 * 3 + 7].map(runs.formatDuration);
"""
    )
    assert out["figures"] == {
        "crawling": "step 4 of 88 · epoch 1 of 4 · under 0.01 steps/s · about 58 h 20 min left",
        "slow": "step 4 of 88 · epoch 1 of 4 · 0.0371 steps/s · about 37 min 44 s left",
        "steady": "step 4 of 88 · epoch 1 of 4 · 126 steps/s · under a second left",
        "fast": "step 4 of 88 · epoch 1 of 4 · 48,214 steps/s · under a second left",
        "unmeasured": "step 4 of 88 · epoch 1 of 4",
    }
    assert out["rates"] == [
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
    ]
    assert out["durations"] == [
        "under a second",
        "under a second",
        "1 s",
        "1 s",
        "59 s",
        "1 min 00 s",
        "59 min 59 s",
        "1 h 00 min",
        "72 h 00 min",
    ]


def test_the_last_run_is_kept_checked_and_dropped_when_unreadable() -> None:
    key = "sha256:" + "ab" * 32
    out = run_js(
        f"""
const kept = storage();
out.none = runs.lastRun(kept);
const record = {{ program: "{{}}", level: "debug", seed: "7", epochs: 2, kind: "cpu", key: "{key}", step: 25 }};
runs.rememberRun(kept, record);
out.back = runs.lastRun(kept);
kept.setItem(runs.LAST_RUN, "{{not json");
out.corrupt = runs.lastRun(kept);
out.dropped = kept.items.has(runs.LAST_RUN);
kept.setItem(runs.LAST_RUN, JSON.stringify({{ ...record, level: "turbo" }}));
out.tampered = runs.lastRun(kept);
try {{ runs.rememberRun(kept, {{ ...record, key: "sha256:12" }}); out.badKey = "kept"; }}
catch (e) {{ out.badKey = e.message; }}
"""
    )
    assert out["none"] is None and out["back"]["key"] == key and out["back"]["step"] == 25
    assert out["corrupt"] is None and out["dropped"] is False and out["tampered"] is None
    assert out["badKey"] == "not a checkpoint key: sha256:12"


def test_keys_data_files_and_file_names_are_checked() -> None:
    key = "sha256:" + "0f" * 32
    out = run_js(
        f"""
out.key = runs.keyFromText("  {key.upper().replace("SHA256", "sha256")}  ");
out.short = runs.keyFromText("sha256:12");
out.ok = runs.checkDataFiles([...runs.DATA_FILES].reverse());
out.missing = runs.checkDataFiles(runs.DATA_FILES.slice(1));
out.extra = runs.checkDataFiles([...runs.DATA_FILES, "notes.txt"]);
out.name = runs.manifestName("digits mlp/v2", "{key}");
out.unnamed = runs.manifestName("///", "{key}");
out.weights = [runs.weightsName("digits mlp/v2", 88), runs.weightsName(undefined, 0)];
"""
    )
    assert out["key"] == {"key": key}
    assert out["short"]["error"] == 'a checkpoint key is "sha256:" and 64 hexadecimal digits; got "sha256:12"'
    assert out["ok"] == {}
    assert out["missing"]["error"].startswith("missing digits-train-x.f32: choose all four data files")
    assert out["extra"]["error"].startswith("notes.txt: not one of the data files")
    assert out["name"] == "digits-mlp-v2-0f0f0f0f0f0f.manifest.json"
    assert out["unnamed"] == "run-0f0f0f0f0f0f.manifest.json"
    assert out["weights"] == ["digits-mlp-v2-step88.safetensors", "run-step0.safetensors"]


def test_calls_events_and_errors_cross_a_message_port() -> None:
    out = run_js(
        """
const { port1, port2 } = new MessageChannel();
const served = rpc.serve(port2, {
  add: (a, b) => a + b,
  later: async (x) => { await new Promise((r) => setTimeout(r, 5)); return { x, list: [1, 2] }; },
  fails: () => {
    const e = new Error("Traceback ...\\nValueError: the seed must be a whole number");
    e.type = "ValueError";
    throw e;
  },
  shout: (word) => { served.emit("heard", word.toUpperCase()); return "ok"; },
});
const caller = rpc.connect(port1);
const heard = [];
caller.on("heard", (word) => heard.push(word));
out.sums = await Promise.all([caller.call("add", 2, 3), caller.call("later", "y"), caller.call("add", "a", "b")]);
try { await caller.call("fails"); } catch (e) { out.error = { message: e.message, type: e.type }; }
try { await caller.call("missing", 1); } catch (e) { out.missing = e.message; }
out.shout = await caller.call("shout", "hi");
out.heard = heard;
const lonely = new MessageChannel();
const stuck = rpc.connect(lonely.port1);  // nobody answers
const pending = stuck.call("anything").catch((e) => e.message);
stuck.close("the worker went away");
out.closed = await pending;
lonely.port1.close();
lonely.port2.close();
const changes = [];
const kept = rpc.mirroredStorage({ a: "1" }, (key, value) => changes.push([key, value]));
kept.setItem("b", 2);
kept.removeItem("a");
out.storage = { a: kept.getItem("a"), b: kept.getItem("b"), changes };
port1.close();
port2.close();
"""
    )
    assert out["sums"] == [5, {"x": "y", "list": [1, 2]}, "ab"]
    assert out["error"] == {
        "message": "Traceback ...\nValueError: the seed must be a whole number",
        "type": "ValueError",
    }
    assert out["missing"] == 'the engine has no call named "missing"'
    assert out["shout"] == "ok" and out["heard"] == ["HI"]
    assert out["closed"] == "the worker went away"
    assert out["storage"] == {"a": None, "b": "2", "changes": [["b", "2"], ["a", None]]}



def test_a_name_without_a_handler_goes_to_the_served_fallback() -> None:
    """The engine's table answers every name the worker has no handler for (enginehost.js `call`); a name
    the handlers object only inherits (toString) is not a handler."""
    out = run_js(
        """
const { port1, port2 } = new MessageChannel();
rpc.serve(port2, { add: (a, b) => a + b }, (name, args) => {
  if (name === "missing") throw new Error(`the engine has no call named ${JSON.stringify(name)}`);
  return { name, args };
});
const caller = rpc.connect(port1);
out.own = await caller.call("add", 2, 3);
out.table = await caller.call("plan", { data: "site", level: "prod" });
out.inherited = await caller.call("toString");
try { await caller.call("missing", {}); } catch (e) { out.missing = e.message; }
port1.close();
port2.close();
"""
    )
    assert out["own"] == 5
    assert out["table"] == {"name": "plan", "args": {"data": "site", "level": "prod"}}
    assert out["inherited"] == {"name": "toString"}
    assert out["missing"] == 'the engine has no call named "missing"'


LINKS = {
    "texts": {
        "forward": {"first_op_line": 8, "stage": 1},
        "backward": {"first_op_line": 8, "stage": 2},
        "optimizer": {"first_op_line": 17, "stage": 3},
        "step": {"first_op_line": 17, "stage": 3},
    },
    "nodes": [
        {
            "id": "hidden",
            "op": "linear",
            "ir": {"forward": [0, 1], "backward": [5], "optimizer": [9, 2]},
            "kernels": [0, 2],
        },
        {"id": "relu", "op": "relu", "ir": {"forward": [2], "backward": [], "optimizer": []}, "kernels": [2]},
    ],
    "kernels": [
        {
            "index": 0,
            "label": "matmul",
            "kind": "matmul",
            "dispatch": [2, 1, 1],
            "bindings": [0, 3],
            "cpu": ["sc_matmul"],
            "nodes": ["hidden"],
            "ops": [0, 1],
            "wgsl": "...",
        },
        {
            "index": 1,
            "label": "copy",
            "kind": "copy",
            "dispatch": [1, 1, 1],
            "bindings": [4],
            "cpu": [],
            "nodes": ["loop"],
            "ops": [7],
            "wgsl": "...",
        },
        {
            "index": 2,
            "label": "elementwise",
            "kind": "elementwise",
            "dispatch": [32, 1, 1],
            "bindings": [3, 5],
            "cpu": ["sc_cpu_tape"],
            "nodes": ["hidden", "relu"],
            "ops": [2, 3],
            "wgsl": "...",
        },
    ],
}


def test_the_guide_links_nodes_to_lines_kernels_and_bars() -> None:
    out = run_js(
        f"""
const links = {json.dumps(LINKS)};
out.lines = guide.nodeLines(links, "hidden");
out.none = guide.nodeLines(links, "absent");
out.kernels = guide.kernelsOf(links, "hidden");
out.kernelLines = guide.kernelLines(links, 2);
out.summaries = [guide.kernelSummary(links.kernels[0]), guide.kernelSummary(links.kernels[1])];
out.bars = guide.timelineBars({{ kernels: 10, slots: [64, 32], buffers: [
  {{ id: 0, name: "x", bytes: 64, slot: 0, category: "batch inputs", first: null, last: null }},
  {{ id: 5, name: null, bytes: 32, slot: 1, category: "activations", first: 3, last: 3 }},
  {{ id: 6, name: null, bytes: 32, slot: 1, category: "gradients", first: 4, last: 9 }},
] }}).map((b) => [b.row, b.x, b.width, b.whole]);
"""
    )
    assert out["lines"] == {"1": [8, 9], "2": [13], "3": [19, 26]}
    assert out["none"] == {}
    assert out["kernels"] == [
        {"index": 0, "label": "matmul", "others": []},
        {"index": 2, "label": "elementwise", "others": ["relu"]},
    ]
    assert out["kernelLines"] == {"3": [19, 20]}
    assert out["summaries"] == [
        "k0: matmul (matmul), workgroups (2, 1, 1), bindings [0, 3]; CPU path: sc_matmul",
        "k1: copy (copy), workgroups (1, 1, 1), bindings [4]; CPU path: nothing (a copy on the host)",
    ]
    assert out["bars"] == [[0, 0, 10, True], [1, 3, 1, False], [1, 4, 6, False]]
