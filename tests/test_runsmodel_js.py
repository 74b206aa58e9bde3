"""The Runs history's pure logic under Node (app/src/runsmodel.js): a run's record shaped from its settings
and the run panel's states (written per epoch or checkpoint, not per chunk), its manifest's final key and
data versions, the newest-first order, the summary cells and headline metric, which checkpoint objects a
deletion frees and which it keeps for other runs, and the data a resume needs. The IndexedDB and the card
run in e2e/test_runs_history.py."""

from __future__ import annotations

import json
import random
import re
import time
from collections.abc import Callable

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
    const read = (value) => runs.readRecord(value);
    out.read = [read(fresh()).record?.id, read({ id: 3 }).damaged.key, read(null).damaged.key];
    """)
    assert (out["same"], out["other"], out["byName"], out["names"]) == (True, False, True, False)
    program = '{"name":"digits-mlp"}'
    assert out["settings"] == {"program": program, "level": "debug", "seed": "5", "epochs": 2, "keep": 3}
    assert out["read"] == ["a", 3, None]


# Records as stored, each with the problem its check must name (a path and words from it).
MALFORMED = {
    "rows missing": ("delete r.rows", "rows: expected a list, found nothing"),
    "rows[0] not an object": ("r.rows = [7]", "rows[0]: expected an object, found the number 7"),
    "rows[0].test not an object": (
        "r.rows = [{ ...row(1, 0.9, 0.3), test: null }]",
        "rows[0].test: expected an object",
    ),
    "a metric that is an object": ("r.rows = [{ ...row(1, 0.9, 0.3), test: { loss: {} } }]", 'rows[0].test["loss"]'),
    "started as text": ('r.started = "yesterday"', "started: expected a time"),
    "unknown status": ('r.status = "exploded"', "status: text of 8 characters is not one of running"),
    "a checkpoint's key": ('r.checkpoints = [{ step: 1, key: "sha256:zz", kind: "rule" }]', "checkpoints[0].key"),
    "a huge name": ('r.name = "x".repeat(2_000_000)', "name: text of 2,000,000 characters, more than the 1,000"),
    "a huge program": ('r.program = "x".repeat(17 * 1024 * 1024)', "program: text of 17,825,792 characters"),
    "data not an object": ('r.data = "digits"', "data: expected an object, found text of 6 characters"),
    "a newer format": ("r.format = 2", "format: the number 2, written by a newer version of this site"),
    "rerunOf missing in format 1": ("delete r.rerunOf", "rerunOf: not a checkpoint key (nothing"),
    "id not its key": ('r.id = "other"', "id: differs from the key it is stored under"),
    "seed as a number": ("r.seed = 5", "seed: expected a whole number as text"),
    "epochs negative": ("r.epochs = -1", "epochs: expected a whole number from 0, found the number -1"),
}
NOT_OBJECTS = {"null": "null", "42": "the number 42", '"text"': "text of 4 characters", "[1, 2]": "a list"}


def test_what_a_page_writes_stays_within_what_a_read_accepts() -> None:
    out = run_js("""
    const long = "é".repeat(10_000);
    let r = runs.newRecord({ id: "a", now: 1, device: long, settings: { ...settings, data: { name: long } } });
    r = runs.withState(r, state(3, { device: long, epochs_done: [row(1, 0.9, 0.3)] })).record;
    r = runs.withStatus(r, "failed", { now: 2, error: long });
    out.read = runs.readRecord(r);
    out.lengths = [r.device.length, r.error.length, r.data.name.length];
    """)
    assert out["read"]["record"]["status"] == "failed"
    assert out["lengths"] == [4000, 4000, 1000]


def test_a_stored_record_is_checked_field_by_field_and_damage_is_named() -> None:
    cases = "\n".join(
        f"{{ const r = structuredClone(good); {change}; out[{json.dumps(name)}] = runs.readRecord(r, 'a'); }}"
        for name, (change, _) in MALFORMED.items()
    )
    values = "\n".join(f"out[{json.dumps(v)}] = runs.readRecord({v}, 'k');" for v in NOT_OBJECTS)
    out = run_js(f"""
    const good = {{ ...fresh(), status: "done", rows: [row(1, 0.9, 0.3)],
      checkpoints: [{{ step: 22, key: key("1"), kind: "rule" }}], final: key("1"), manifest: "{{}}" }};
    out.good = runs.readRecord(structuredClone(good));
    const old = structuredClone(good); delete old.format; delete old.rerunOf; delete old.verdict;
    out.old = runs.readRecord(old);
    {cases}
    {values}
    """)
    assert out["good"]["record"]["id"] == "a" and out["good"]["record"]["format"] == 1
    assert out["old"]["record"]["format"] == 1 and out["old"]["record"]["rerunOf"] is None  # upgraded, kept
    for name, (_, problem) in MALFORMED.items():
        damaged = out[name]["damaged"]
        assert damaged["key"] == "a" and any(problem in p for p in damaged["problems"]), (name, damaged)
        assert all(len(p) < 400 for p in damaged["problems"]), name  # a huge value is described, not copied
    for value, found in NOT_OBJECTS.items():
        assert out[value]["damaged"]["problems"] == [f"the record: expected an object, found {found}"]


MUTATIONS = 2000


def places(node: object) -> list[tuple[object, object]]:
    """Every (container, key or index) in `node`, depth first."""
    found: list[tuple[object, object]] = []
    if isinstance(node, dict):
        for k, v in node.items():
            found += [(node, k), *places(v)]
    elif isinstance(node, list):
        for i, v in enumerate(node):
            found += [(node, i), *places(v)]
    return found


def mutate(record: dict, rnd: random.Random) -> object:
    """`record` with one to three random changes anywhere in it (a field dropped, retyped, grown)."""
    odd: list[Callable[[], object]] = [
        lambda: None,
        lambda: rnd.choice([-1, 0.5, 2**60, float("1e308")]),
        lambda: "x" * rnd.choice([0, 3, 5000, 20_000]),
        lambda: [],
        lambda: {},
        lambda: [None],
        lambda: True,
    ]
    value: object = json.loads(json.dumps(record))
    for _ in range(rnd.randint(1, 3)):
        paths = places(value)
        if not paths or rnd.random() < 0.02:
            value = odd[rnd.randrange(len(odd))]()
            continue
        parent, where = paths[rnd.randrange(len(paths))]
        if isinstance(parent, dict) and rnd.random() < 0.3:
            del parent[where]
        else:
            parent[where] = odd[rnd.randrange(len(odd))]()  # type: ignore[index]
    return value


def test_mutated_records_are_read_or_named_damaged_and_never_break_the_card(fault_log: Callable[..., None]) -> None:
    """A fixed set of random mutations of a valid record: each is read (and then every function the card
    calls on it answers) or named damaged; none throws."""
    good = run_js("""
    out.record = { ...fresh(), status: "done", rows: [row(1, 0.9, 0.3), row(2, 0.95, 0.2)],
      checkpoints: [{ step: 22, key: key("1"), kind: "rule" }, { step: 44, key: key("2"), kind: "pinned" }],
      final: key("2"), manifest: "{}", data: { name: "d", versions: [{ split: "train", sha256: "s", examples: 3 }] } };
    """)["record"]
    rnd = random.Random(19)
    inputs = [mutate(good, rnd) for _ in range(MUTATIONS)]
    began = time.monotonic()
    out = run_node(
        PRELUDE,
        """
    import { readFileSync } from "node:fs";
    const inputs = JSON.parse(readFileSync(process.argv[2], "utf8")).inputs;
    out.read = 0; out.damaged = 0; out.crashes = []; out.unnamed = 0;
    for (const value of inputs) {
      try {
        const read = runs.readRecord(value, value?.id ?? "k");
        if (read.record) {
          const r = read.record;
          runs.summaryCells(r, { now: 5000, live: null }); runs.headline(r); runs.referencedKeys(r);
          runs.deletionPlan(r, [r], new Set()); runs.deviceText(r); runs.resumeSettings(r);
          for (const row of r.rows) row.test.loss;
          out.read += 1;
        } else {
          out.damaged += 1;
          if (!read.damaged.problems.length) out.unnamed += 1;
          runs.damagedText(read.damaged);
        }
      } catch (error) { out.crashes.push(String(error)); }
    }
    """,
        {"inputs": inputs},
    )
    elapsed = time.monotonic() - began
    fault_log(
        "runs-records",
        inputs=MUTATIONS,
        read=out["read"],
        damaged_named=out["damaged"] - out["unnamed"],
        crashes=len(out["crashes"]),
        hangs=int(elapsed > 60),
        silent_wrong=out["unnamed"],
    )
    assert out["crashes"] == [] and out["unnamed"] == 0
    assert out["read"] + out["damaged"] == MUTATIONS and out["damaged"] > MUTATIONS // 2


def test_a_rerun_starts_only_within_the_cap_and_the_room_the_browser_gives() -> None:
    out = run_js("""
    const storage = { steps: 300, checkpoints: 301, per_checkpoint: 2 * 1024 * 1024, bytes: 301 * 2 * 1024 * 1024 };
    const MiB = 1024 * 1024;
    out.within = runs.rerunStorageCheck(storage, 1024 * MiB, 10 * 1024 * MiB);
    out.unknownRoom = runs.rerunStorageCheck(storage, 1024 * MiB, null);
    out.overCap = runs.rerunStorageCheck(storage, 100 * MiB, null);
    out.overRoom = runs.rerunStorageCheck(storage, 1024 * MiB, 50 * MiB);
    out.badCap = runs.rerunStorageCheck(storage, NaN, null);
    const huge = { steps: 2 ** 53, checkpoints: 2 ** 53 + 1, per_checkpoint: 1000, bytes: (2 ** 53 + 1) * 1000 };
    out.huge = runs.rerunStorageCheck(huge, 1024 * MiB, null);
    """)
    assert out["within"]["ok"] and out["unknownRoom"]["ok"]
    assert out["within"]["text"] == (
        "The re-run takes 300 steps; its checkpoints take at most 602 MiB (301 of 2 MiB each): within the storage "
        "cap of 1 GiB and the 10 GiB this browser still lets this site store."
    )
    assert (
        not out["overCap"]["ok"]
        and "602 MiB (301 of 2 MiB each), more than the storage cap of 100 MiB" in (out["overCap"]["text"])
    )
    assert (
        not out["overRoom"]["ok"]
        and "more than the 50 MiB this browser still lets this site store" in (out["overRoom"]["text"])
    )
    assert not out["badCap"]["ok"] and "a number of MiB above 0" in out["badCap"]["text"]
    assert not out["huge"]["ok"] and out["huge"]["text"].startswith(
        "Not started: the re-run takes 9,007,199,254,740,992 steps"
    )


def test_a_run_trained_and_a_rerun_open_side_by_side_are_both_live() -> None:
    out = run_js("""
    const a = fresh("a"), b = { ...fresh("b"), rerunOf: key("9") }, c = fresh("c");
    const live = new Set(["a", "b"]);
    out.shown = [a, b, c].map((r) => runs.shownStatus(r, live));
    """)
    assert out["shown"] == ["running", "running", "interrupted"]
