"""scellis.app: what the page calls to plan its program, apply remedies and train, here on the CPU path under
wasmtime."""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import json
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

from scellis import __version__
from scellis.app import (
    Driven,
    apply_remedy,
    capped,
    check_program,
    example_program,
    guide_json,
    open_run,
    palette_json,
    plan_example,
    running_engine,
)
from scellis.assets import WASM_NAME, read_asset
from scellis.datasets import digits_csv, from_files, read_digits, to_files
from scellis.engine import engine_files, installed_engine_version
from scellis.examples import digits_mlp
from scellis.levels import Level
from scellis.pipeline import compile_program
from scellis.plan.breakdown import CATEGORIES
from scellis.plan.budget import GREEN_SHARE, Budget
from scellis.store import DirectoryStore

# what dist/build.json says of the engine, for this very engine
BUILD = json.dumps({"package_version": __version__, "engine_files": engine_files(), "tools": {"pyodide": "314.0.7"}})


def train_example(
    files: dict[str, bytes],
    kind: str,
    level: str,
    epochs: int,
    report: Callable[[dict], None],
    *,
    program: str | None = None,
    cap: int | None = None,
    store: Path | None = None,
) -> dict:
    """The page's run of `program` (the example unless given), driven 25 steps at a time to its end:
    the last epoch's row, every row going to `report`; or the refusal of a red plan."""

    async def drive(where: DirectoryStore) -> dict:
        run = await open_run(
            "site",
            files,
            program or example_program(),
            device_kind=kind,
            level=level,
            seed="1",
            epochs=epochs,
            build=BUILD,
            cap=cap,
            store=where,
        )
        if not isinstance(run, Driven):
            return json.loads(run)
        rows = []
        while True:
            state = json.loads(await run.advance(25))
            for row in state["epochs_done"]:
                report(row)
                rows.append(row)
            if state["done"]:
                return rows[-1]

    if store is not None:
        return asyncio.run(drive(DirectoryStore(store)))
    with tempfile.TemporaryDirectory(prefix="scellis-app-") as scratch:
        return asyncio.run(drive(DirectoryStore(Path(scratch))))


def test_train_example_reports_every_epoch_with_level_and_notes() -> None:
    files = to_files(*read_digits(digits_csv().read_bytes()))
    seen: list[dict] = []
    last = train_example(files, "cpu", "fast", 2, seen.append)
    assert [row["epoch"] for row in seen] == [1, 2] and last == seen[-1]
    assert last["level"] == "fast" and last["notes"] == []  # the digits MLP runs no float16 kernel
    assert "loss_scale" not in last  # so fast does not scale its loss
    assert last["test"]["metric/accuracy"] > 0.8
    memory = last["memory"]  # the CPU path measures its budget: the plan is green
    assert memory["verdict"] == "green" and memory["bytes"] > 0 and memory["reasons"][0].startswith("takes ")


def test_unknown_level_and_device_are_named() -> None:
    files = to_files(*read_digits(digits_csv().read_bytes()))
    with pytest.raises(ValueError, match="determinism level must be one of debug, prod, fast; got 'quick'"):
        train_example(files, "cpu", "quick", 1, print)
    with pytest.raises(ValueError, match="unknown device kind 'tpu'"):
        train_example(files, "tpu", "prod", 1, print)


FILES = to_files(*read_digits(digits_csv().read_bytes()))
MIB = 1 << 20


def plan(program: str, cap: int | None = None) -> dict:
    return json.loads(asyncio.run(plan_example("site", FILES, program, "cpu", "prod", cap=cap)))


def test_the_plan_is_the_sessions_with_every_category_in_order() -> None:
    shown = plan(example_program())
    assert shown["program"] == "digits-mlp" and shown["batch"] == 64 and shown["level"] == "prod"
    assert [row["category"] for row in shown["breakdown"]] == list(CATEGORIES)
    functions = {f["name"]: f for f in shown["functions"]}
    # the session evaluates the held-out split (359 rows) in batches of 64 and one of 39
    assert list(functions) == ["training step", "evaluation", "evaluation, last batch", "init"]
    assert not functions["init"]["held"]
    held = ("training step", "evaluation", "evaluation, last batch")
    assert shown["total"] == sum(functions[name]["bytes"] for name in held)
    assert sum(row["bytes"] for row in shown["breakdown"]) == functions["training step"]["bytes"]
    held_out = from_files(FILES)[1].n
    session_plan = compile_program(digits_mlp(), eval_rows=held_out).at(Level.PROD, frozenset()).plan
    assert shown["total"] == session_plan.total
    assert shown["verdict"]["color"] == "green" and shown["remedies"] == [] and shown["capacity"] == []
    assert shown["budget"]["cap"] is None and shown["budget"]["how"].startswith("wasm32 memory")
    assert shown["green_share"] == GREEN_SHARE


def test_a_cap_below_the_plan_is_red_and_training_is_refused() -> None:
    total = plan(example_program())["total"]
    cap = total - 1
    shown = plan(example_program(), cap)
    assert shown["budget"]["bytes"] == cap and shown["budget"]["cap"] == cap
    assert shown["budget"]["how"].startswith(f"limited to {cap:,} bytes by the memory cap set in the page")
    assert shown["verdict"]["color"] == "red"
    assert shown["verdict"]["reasons"] == [
        f"needs {total:,} bytes, more than the budget of {cap:,} ({shown['budget']['how']})"
    ]
    # evaluation runs in training-sized batches, so a smaller batch shrinks both: one is green
    assert any(r["verdict"]["color"] == "green" and "batch" in r["change"] for r in shown["remedies"])
    seen: list[dict] = []
    out = train_example(FILES, "cpu", "prod", 1, seen.append, cap=cap)
    assert seen == [] and out["memory"]["verdict"] == "red"
    assert out["refused"].startswith("digits-mlp does not fit on CPU path (WebAssembly)")
    assert f"more than the budget of {cap:,}" in out["refused"]


def test_the_batch_remedy_applied_is_what_plans_green_and_trains() -> None:
    cap = int(0.9 * plan(example_program())["total"])  # the digits MLP does not fit: red
    shown = plan(example_program(), cap)
    assert shown["verdict"]["color"] == "red"
    remedy = next(r for r in shown["remedies"] if "batch" in r["change"])
    assert remedy["verdict"]["color"] == "green" and remedy["name"] == f"batch {remedy['batch']}"
    assert remedy["batch"] < 64
    program = apply_remedy(example_program(), json.dumps(remedy["change"]))
    assert json.loads(program)["loop"]["batch_size"] == remedy["batch"]
    again = plan(program, cap)
    assert again["verdict"]["color"] == "green" and again["total"] == remedy["total"] and again["remedies"] == []
    seen: list[dict] = []
    last = train_example(FILES, "cpu", "prod", 1, seen.append, program=program, cap=cap)
    assert [row["epoch"] for row in seen] == [1] and last["batch"] == remedy["batch"]
    assert last["steps"] == from_files(FILES)[0].n // remedy["batch"]
    assert last["memory"] == {"bytes": remedy["total"], "verdict": "green", "reasons": again["verdict"]["reasons"]}


def test_below_the_batch_independent_bytes_the_capacity_facts_are_shown() -> None:
    shown = plan(example_program(), 100_000)
    assert shown["verdict"]["color"] == "red"
    assert shown["capacity"][0].startswith("no batch size fits: parameters, gradients and optimizer state alone need")
    assert all(r["verdict"]["color"] == "red" for r in shown["remedies"])


def test_a_cap_above_the_measured_budget_changes_nothing_but_says_so() -> None:
    measured = Budget(1000, "a test budget")
    assert capped(measured, None) == measured
    assert capped(measured, 5000) == Budget(1000, "a test budget; the memory cap of 5,000 bytes is above it")
    unmeasured = capped(Budget(None, "no probe"), 5000)
    assert unmeasured == Budget(5000, "limited to 5,000 bytes by the memory cap set in the page; measured: no probe")
    with pytest.raises(ValueError, match="the memory cap must be a positive number of bytes, got 0"):
        asyncio.run(plan_example("site", FILES, example_program(), "cpu", "prod", cap=0))


def test_a_program_keeping_its_data_set_on_the_device_plans_and_trains_it() -> None:
    program = apply_remedy(example_program(), json.dumps({"data": "resident"}))
    shown = plan(program)
    resident = {row["category"]: row["bytes"] for row in shown["breakdown"]}["resident data set"]
    assert resident >= from_files(FILES)[0].n * 64 * 4  # the training split's pixels, at least
    last = train_example(FILES, "cpu", "prod", 1, lambda row: None, program=program)
    assert last["memory"]["bytes"] == shown["total"] and last["test"]["metric/accuracy"] > 0.5


def test_the_editor_gets_the_palette_and_every_problem_of_a_program() -> None:
    shown = json.loads(palette_json())
    assert "linear" in {op["name"] for op in shown["ops"]} and shown["categories"]
    assert json.loads(check_program(example_program())) == {"issues": []}
    assert json.loads(check_program('{"nodes": 3')) == {
        "issues": [
            {"path": "", "node": None, "port": None, "message": "not JSON (line 1, column 12): Expecting ',' delimiter"}
        ]
    }
    broken = json.loads(example_program())
    broken["nodes"][2]["params"]["features"] = -1
    [issue] = json.loads(check_program(json.dumps(broken)))["issues"]
    assert issue == {
        "path": "nodes[2].params.features",
        "node": "hidden",
        "port": None,
        "message": "must be at least 1, got -1",
    }


def test_the_guide_of_the_page_program_links_nodes_and_shows_buffer_lifetimes() -> None:
    guide = json.loads(guide_json(example_program(), "prod", []))
    titles = [title for title, _ in guide["stages"]]
    assert titles[:3] == ["program JSON", "typed IR", "backward IR"] and guide["level"] == "prod"
    nodes = {node["id"]: node for node in guide["links"]["nodes"]}
    assert {"hidden", "relu", "logits", "loop"} <= set(nodes)
    assert all(0 <= k < len(guide["links"]["kernels"]) for n in nodes.values() for k in n["kernels"])
    memory = guide["timeline"]
    plan = compile_program(digits_mlp()).at(Level.PROD, frozenset()).plan
    assert sum(memory["slots"]) == plan.functions[0].allocated and memory["kernels"] == plan.functions[0].kernels
    assert memory["peak_live"] <= sum(memory["slots"])
    for buffer in memory["buffers"]:
        assert buffer["category"] in CATEGORIES
        if buffer["first"] is None:  # an input or output of the step: it lives the whole step
            assert buffer["name"] is not None and buffer["last"] is None
        else:
            assert 0 <= buffer["first"] <= buffer["last"] < memory["kernels"]
    # buffers sharing an allocation never live at once
    by_slot: dict[int, list[dict]] = {}
    for buffer in memory["buffers"]:
        by_slot.setdefault(buffer["slot"], []).append(buffer)
    for shared in by_slot.values():
        spans = sorted((b["first"], b["last"]) for b in shared if b["first"] is not None)
        assert len(spans) == len(shared) or len(shared) == 1
        assert all(a[1] < b[0] for a, b in itertools.pairwise(spans))


# dist/build.json as a mixed or doctored build would have it: another package version, other engine files
LYING_BUILD = json.dumps(
    {
        "package_version": "9.9.9",
        "engine_version": "9.9.9+000000000000",
        "engine_files": dict.fromkeys(engine_files(), "0" * 64),
        "tools": {"pyodide": "0.0.0"},
    }
)


def test_the_manifest_pins_the_engine_that_ran_not_what_build_json_says(tmp_path: Path) -> None:
    files = to_files(*read_digits(digits_csv().read_bytes()))

    async def manifest_of_a_run() -> dict:
        run = await open_run(
            "site",
            files,
            example_program(),
            device_kind="cpu",
            level="debug",
            seed="1",
            epochs=1,
            build=LYING_BUILD,
            store=DirectoryStore(tmp_path),
        )
        assert isinstance(run, Driven)
        await run.advance(2)
        return json.loads(json.loads(await run.manifest("http://127.0.0.1/"))["manifest"])

    engine = asyncio.run(manifest_of_a_run())["engine"]
    ran = running_engine()
    assert engine == ran.to_json()
    assert engine["package_version"] == __version__ and engine["engine_version"] == installed_engine_version()
    assert engine["wasm"] == "sha256:" + hashlib.sha256(read_asset(WASM_NAME)).hexdigest()
    assert engine["pyodide"] is None  # CPython runs no Pyodide, whatever build.json says


def test_the_pin_follows_the_engine_files_as_loaded(monkeypatch: pytest.MonkeyPatch) -> None:
    """The pin is computed from what the interpreter loads: another CPU-path module (as a mixed build would
    install) is another pin, whatever build.json claims."""
    before = running_engine()
    loaded = {**engine_files(), WASM_NAME: "ab" * 32}
    monkeypatch.setattr("scellis.app.engine_files", lambda: loaded)
    after = running_engine()
    assert after.wasm == "sha256:" + "ab" * 32 and after.wasm != before.wasm
    assert after.engine_version != before.engine_version and after.wgsl == before.wgsl
