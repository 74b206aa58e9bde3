"""The Runs history's pure logic under Node (app/src/runsmodel.js): a run's record shaped from its settings
and the run panel's states (written per epoch or checkpoint, not per chunk), its manifest's final key and
data versions, the newest-first order, the summary cells and headline metric, which checkpoint objects a
deletion frees and which it keeps for other runs, and the data a resume needs. The IndexedDB and the card
run in e2e/test_runs_history.py."""

from __future__ import annotations

import json
import re

from nodejs import run_node
from test_app_js import SRC

PRELUDE = f"""
import assert from "node:assert/strict";
import * as runs from "{SRC}/runsmodel.js";
const key = (c) => "sha256:" + c.repeat(64);
const settings = {{ program: JSON.stringify({{ name: "digits-mlp" }}), kind: "cpu", level: "debug", seed: 5,
  epochs: 2, resume: undefined }};
const row = (epoch, accuracy, loss) => ({{ epoch, steps: epoch * 22, batch: 64, train_loss: 0.5, level: "debug",
  test: {{ loss, "metric/accuracy": accuracy }}, notes: [], memory: {{ bytes: 1, verdict: "green", reasons: [] }} }});
const state = (step, more = {{}}) => ({{ step, total: 44, device: "CPU path (WebAssembly) via pyodide",
  checkpoints: [], saved: [], epochs_done: [], ...more }});
const fresh = (id = "a", now = 1000) => runs.newRecord({{ id, now, settings, device: "the page's device" }});
const out = {{}};
"""


def run_js(body: str) -> dict:
    return run_node(PRELUDE, body)


def test_a_new_record_names_the_program_and_the_site_data_unless_the_settings_name_data() -> None:
    out = run_js("""
    out.plain = fresh();
    out.named = runs.newRecord({ id: "b", now: 1, device: "d",
      settings: { ...settings, resume: key("a"), data: { name: "iris.csv", versions: [{ split: "train" }] } } });
    out.unnamed = runs.programName("{not json");
    """)
    plain = out["plain"]
    assert plain["name"] == "digits-mlp" and plain["data"] == {"name": "digits (this site)", "versions": None}
    assert (plain["status"], plain["seed"], plain["device"], plain["resumedFrom"]) == (
        "running",
        "5",
        "the page's device",
        None,
    )
    assert out["named"]["data"] == {"name": "iris.csv", "versions": [{"split": "train"}]}
    assert out["named"]["resumedFrom"] == "sha256:" + "a" * 64
    assert out["unnamed"] == "unnamed program"


def test_states_change_the_record_at_epochs_and_checkpoints_not_at_every_chunk() -> None:
    out = run_js("""
    let r = fresh();
    const changes = [];
    const feed = (s) => { const next = runs.withState(r, s); r = next.record; changes.push(next.changed); };
    feed(state(0));                                                    // the first: total known
    feed(state(7));                                                    // a chunk: nothing to write
    feed(state(22, { epochs_done: [row(1, 0.8, 0.6)] }));              // an epoch
    feed(state(25, { checkpoints: [{ step: 20, key: key("b") }] }));   // a rule's checkpoint
    feed(state(26, { checkpoints: [{ step: 20, key: key("b") }] }));   // the same again: nothing new
    feed(state(27, { checkpoints: [{ step: 20, key: key("b") }], saved: [{ step: 27, key: key("c") }] }));
    out.changes = changes;
    out.record = r;
    """)
    assert out["changes"] == [True, False, True, True, False, True]
    record = out["record"]
    assert record["device"] == "CPU path (WebAssembly) via pyodide" and record["step"] == 27
    assert record["rows"] == [
        {"epoch": 1, "steps": 22, "train_loss": 0.5, "test": {"loss": 0.6, "metric/accuracy": 0.8}}
    ]
    assert [(c["step"], c["kind"]) for c in record["checkpoints"]] == [(20, "rule"), (27, "saved")]


def test_status_and_manifest_end_the_record() -> None:
    out = run_js("""
    let r = runs.withState(fresh(), state(10, { saved: [{ step: 10, key: key("c") }] })).record;
    out.paused = runs.withStatus(r, "paused", { now: 2000 });
    const data = [{ split: "train", sha256: key("d"), examples: 1438, shape: [64] }];
    const manifest = JSON.stringify({ steps: 44, data });
    r = runs.withManifest(runs.withStatus(r, "done", { now: 3000 }), { manifest, final: key("e"), link: "x" });
    out.done = r;
    out.again = runs.withManifest(r, { manifest, final: key("c"), link: "x" }).checkpoints.length;
    try { runs.withStatus(r, "finished", { now: 1 }); } catch (error) { out.bad = error.message; }
    """)
    assert (out["paused"]["status"], out["paused"]["ended"]) == ("paused", None)
    done = out["done"]
    assert (done["status"], done["ended"], done["final"], done["step"]) == ("done", 3000, "sha256:" + "e" * 64, 44)
    assert done["data"]["versions"][0]["examples"] == 1438 and json.loads(done["manifest"])["steps"] == 44
    assert [(c["step"], c["kind"]) for c in done["checkpoints"]] == [(10, "saved"), (44, "pinned")]
    assert out["again"] == 2  # a key already listed keeps its first entry
    assert out["bad"] == "not a run status: finished"


def test_deletion_frees_only_objects_no_other_run_refers_to() -> None:
    out = run_js("""
    const first = { ...fresh("a", 1), checkpoints: [{ step: 5, key: key("1"), kind: "saved" },
      { step: 44, key: key("2"), kind: "pinned" }, { step: 9, key: key("4"), kind: "rule" }], final: key("2") };
    const resumed = { ...fresh("b", 2), resumedFrom: key("1"),
      checkpoints: [{ step: 44, key: key("2"), kind: "pinned" }], final: key("2") };
    const other = { ...fresh("c", 3), checkpoints: [{ step: 3, key: key("3"), kind: "saved" }] };
    const all = [first, resumed, other];
    const stored = new Set([key("1"), key("2"), key("3")]);   // key("4") is gone already
    out.first = runs.deletionPlan(first, all, stored);
    out.resumed = runs.deletionPlan(resumed, all, stored);
    out.alone = runs.deletionPlan(first, [first, other], stored);
    out.text = runs.deletionText(first, out.first);
    out.aloneText = runs.deletionText(first, out.alone);
    out.refs = runs.referencedKeys(resumed);
    """)
    k = lambda c: "sha256:" + c * 64  # noqa: E731
    assert out["first"]["free"] == [] and out["first"]["gone"] == [k("4")]
    assert [kept["key"] for kept in out["first"]["kept"]] == [k("1"), k("2")]
    assert out["first"]["kept"][0]["runs"][0].startswith("digits-mlp of ")
    assert out["resumed"] == {"free": [], "kept": out["resumed"]["kept"], "gone": []}
    assert [kept["key"] for kept in out["resumed"]["kept"]] == [k("2"), k("1")]
    assert out["alone"]["free"] == [k("1"), k("2")]
    assert out["refs"] == [k("2"), k("1")]
    assert "No checkpoint object will be deleted." in out["text"]["lines"]
    assert out["text"]["kept"] == "2 checkpoint objects are kept: other runs refer to them."
    assert out["aloneText"]["lines"][1] == "2 checkpoint objects no other run refers to will be deleted:"


def test_runs_sort_newest_first_and_summarise() -> None:
    out = run_js("""
    const a = fresh("a", 1000);
    const b = { ...fresh("b", 5000), status: "done", kind: "webgpu", device: "SwiftShader",
      rows: [row(1, 0.9, 0.3), row(2, 0.85, 0.4)] };
    const c = { ...fresh("c", 3000), status: "running" };
    out.order = runs.sortedRuns([a, b, c]).map((r) => r.id);
    out.b = runs.summaryCells(b, { now: 5000 + 90_000, live: "c" });
    out.c = runs.summaryCells(c, { now: 3000, live: "c" }).status;
    out.cGone = runs.summaryCells(c, { now: 3000, live: null }).status;
    out.a = runs.summaryCells(a, { now: 1000 + 3 * 86_400_000, live: null });
    out.loss = runs.headline({ rows: [{ epoch: 1, test: { loss: 0.5 } }, { epoch: 2, test: { loss: "nan" } }] }).text;
    out.hours = runs.formatWhen(0, 7_200_000);
    """)
    assert out["order"] == ["b", "c", "a"]
    assert out["b"] == {
        "program": "digits-mlp",
        "data": "digits (this site)",
        "level": "debug",
        "device": "WebGPU: SwiftShader",
        "status": "done",
        "metric": "accuracy 85.0 % (best 90.0 %, epoch 1)",
        "when": "1 min ago",
    }
    assert (out["c"], out["cGone"]) == ("running", "interrupted")
    assert out["a"]["metric"] == "—" and out["a"]["device"] == "the page's device"
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d", out["a"]["when"])
    assert out["loss"] == "loss nan (best 0.5000, epoch 1)" and out["hours"] == "2 h ago"


def test_a_resume_needs_the_data_the_run_read() -> None:
    out = run_js("""
    const v = (train, test) => [{ split: "train", sha256: key(train) }, { split: "test", sha256: key(test) }];
    const site = (name, versions) => ({ name, versions });
    out.same = runs.sameData(site("digits (this site)", v("1", "2")), site("this site's digits", v("1", "2")));
    out.other = runs.sameData({ name: "x", versions: v("1", "2") }, { name: "x", versions: v("1", "3") });
    out.byName = runs.sameData(site("digits (this site)", null), site("digits (this site)", null));
    out.names = runs.sameData({ name: "a.csv", versions: null }, { name: "b.csv", versions: v("1", "2") });
    out.settings = runs.resumeSettings(fresh());
    out.read = [runs.readRecord(fresh()) !== null, runs.readRecord({ id: 3 }), runs.readRecord(null)];
    """)
    assert (out["same"], out["other"], out["byName"], out["names"]) == (True, False, True, False)
    assert out["settings"] == {"program": '{"name":"digits-mlp"}', "level": "debug", "seed": "5", "epochs": 2}
    assert out["read"] == [True, None, None]
