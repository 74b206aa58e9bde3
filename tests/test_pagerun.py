"""The page's run (scellis.pagerun through scellis.app's JSON glue), here on wasmtime's CPU path with a
folder for a store: driven in chunks, paused and stepped one at a time it ends on the same bits as in one
go; progress (steps/s, time left) is reported; a state saved from the page changes nothing a re-run
compares; resuming from a key ends where the uninterrupted run does; the manifest and the share link of
a page's run re-run to the pinned final key, and data or links that do not fit are refused by name."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from safetensors import safe_open

from scellis import __version__
from scellis.app import Driven, open_replay, open_run, read_link
from scellis.datasets import digits_csv, read_digits, to_files
from scellis.engine import engine_files
from scellis.examples import digits_mlp
from scellis.manifest import LinkError, read_manifest, read_share_link, share_link
from scellis.store import DirectoryStore
from scellis.store.checkpoint import Checkpoint, ResumeError

BUILD = json.dumps({"package_version": __version__, "engine_files": engine_files(), "tools": {"pyodide": "314.0.7"}})
FILES = to_files(*read_digits(digits_csv().read_bytes()))
STEPS = 2 * (1438 // 64)  # two epochs of the digits MLP at batch 64
BASE = "http://127.0.0.1:8000/"


def program() -> str:
    data = digits_mlp()
    data["loop"] = {**data["loop"], "rules": [{"on": "step", "if": {"every": 10}, "then": ["checkpoint"]}]}
    return json.dumps(data)


def run_in(store: Path, drive: Callable[[Driven], Awaitable[Any]], resume: str | None = None) -> Any:
    async def go() -> Any:
        run = await open_run(
            "site",
            FILES,
            program(),
            device_kind="cpu",
            level="debug",
            seed="3",
            epochs=2,
            build=BUILD,
            browser="test",
            resume=resume,
            store=DirectoryStore(store),
        )
        assert isinstance(run, Driven), run
        return await drive(run)

    return asyncio.run(go())


async def to_end(run: Driven, chunk: int = 1000) -> list[dict]:
    states = []
    while not states or not states[-1]["done"]:
        states.append(json.loads(await run.advance(chunk)))
    return states


async def finished(run: Driven) -> dict:
    await to_end(run)
    return json.loads(await run.manifest(BASE))


@pytest.fixture(scope="module")
def whole(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The run in one go: its manifest, link and final key."""
    return run_in(tmp_path_factory.mktemp("whole"), finished)


def test_chunks_pauses_and_single_steps_end_on_the_same_bits(whole: dict, tmp_path: Path) -> None:
    async def drive(run: Driven) -> tuple[list[dict], dict]:
        states = [json.loads(await run.advance(7))]
        states += [json.loads(await run.advance(1)) for _ in range(3)]  # paused, then three single steps
        states += await to_end(run, 9)
        return states, json.loads(await run.manifest(BASE))

    states, pinned = run_in(tmp_path, drive)
    assert [s["step"] for s in states[:4]] == [7, 8, 9, 10]
    assert states[-1]["step"] == STEPS and states[-1]["done"] and not states[-2]["done"]
    assert pinned["final"] == whole["final"]
    assert read_manifest(pinned["manifest"]).checkpoints == read_manifest(whole["manifest"]).checkpoints
    first = states[0]
    assert (first["total"], first["epochs"], first["epoch"], first["level"]) == (STEPS, 2, 1, "debug")
    assert first["device"].startswith("CPU path (WebAssembly) via wasmtime")
    assert first["steps_per_s"] > 0 and first["eta_s"] == pytest.approx((STEPS - 7) / first["steps_per_s"])
    assert states[-1]["eta_s"] == 0.0
    assert [c["step"] for c in states[-1]["checkpoints"]] == [10, 20, 30, 40]
    assert states[-1]["events"][0] == "step 10 (epoch 1): checkpoint, every 10 steps"
    rows = [row for s in states for row in s["epochs_done"]]  # each epoch handed over once
    assert [row["epoch"] for row in rows] == [1, 2] and rows[-1]["test"]["metric/accuracy"] > 0.8


def test_a_state_saved_from_the_page_changes_nothing_a_rerun_compares(whole: dict, tmp_path: Path) -> None:
    async def drive(run: Driven) -> tuple[str, dict, dict]:
        await run.advance(15)
        key = await run.checkpoint()
        states = await to_end(run)
        return key, states[-1], json.loads(await run.manifest(BASE))

    key, last, pinned = run_in(tmp_path, drive)
    assert last["saved"] == [{"step": 15, "key": key}]
    assert all("saved" not in event for event in last["events"])
    assert pinned["final"] == whole["final"] and DirectoryStore(tmp_path).has(key)


def test_resuming_from_a_key_ends_where_the_uninterrupted_run_does(whole: dict, tmp_path: Path) -> None:
    async def first(run: Driven) -> str:
        await run.advance(25)
        return await run.checkpoint()

    key = run_in(tmp_path, first)
    pinned = run_in(tmp_path, finished, resume=key)
    assert pinned["final"] == whole["final"]
    # the resumed run's manifest lists the checkpoints written before it was interrupted too
    assert read_manifest(pinned["manifest"]).checkpoints == read_manifest(whole["manifest"]).checkpoints
    with pytest.raises(ResumeError, match=r"cannot resume from sha256:0+: no object sha256:0+ in the store"):
        run_in(tmp_path, finished, resume="sha256:" + "0" * 64)
    with pytest.raises(ValueError, match="sha256:"):
        run_in(tmp_path, finished, resume="not a key")


def replayed(store: Path, link: str, files: dict[str, bytes] = FILES) -> tuple[dict, str | None, list[dict]]:
    async def go() -> tuple[dict, str | None, list[dict]]:
        run, note = await open_replay("site", files, link, "cpu", BUILD, store=DirectoryStore(store))
        assert isinstance(run, Driven), run
        states = await to_end(run, 10)
        return json.loads(await run.verdict()), note, states

    return asyncio.run(go())


def test_the_share_link_of_a_page_run_reruns_to_its_final_key(whole: dict, tmp_path: Path) -> None:
    link = whole["link"]
    assert link.startswith(BASE + "#run=")
    shown = json.loads(read_link(link))
    assert shown["name"] == "digits-mlp" and json.loads(shown["program"]) == json.loads(program())
    assert shown["settings"]["final"] == whole["final"] and shown["settings"]["steps"] == STEPS
    assert shown["ran_on"]["device"].startswith("CPU path (WebAssembly) via wasmtime")
    verdict, note, states = replayed(tmp_path, link)
    assert note is None and states[-1]["step"] == STEPS and states[-1]["total"] == STEPS
    assert verdict["verified"] and verdict["final"] == verdict["pinned"] == whole["final"]
    assert verdict["lines"][-1].startswith(f"verified: the re-run reached the pinned final checkpoint {whole['final']}")


def test_a_link_pinning_webgpu_reruns_on_the_cpu_path_where_the_page_has_none(whole: dict, tmp_path: Path) -> None:
    shared = read_share_link(whole["link"])
    link = share_link(replace(shared, settings=replace(shared.settings, device="webgpu")), BASE)
    verdict, note, _ = replayed(tmp_path, link)
    assert note is not None and note.startswith("the run was on WebGPU and this page has none")
    assert verdict["verified"]  # the pinned device's name is this CPU path's, so its bits are compared


def test_a_rerun_on_other_data_or_of_no_run_is_refused(whole: dict, tmp_path: Path) -> None:
    other = dict(FILES)
    other["digits-test-y.i32"] = other["digits-test-y.i32"][4:] + other["digits-test-y.i32"][:4]
    with pytest.raises(ValueError, match="the test split does not match the pinned data: its content hash is"):
        replayed(tmp_path, whole["link"], other)
    no_data = open_replay("none", {}, whole["link"], "cpu", BUILD, store=DirectoryStore(tmp_path))
    with pytest.raises(ValueError, match=r"this run of 'digits-mlp' read data \(train, test\): give it that data"):
        asyncio.run(no_data)
    unrun = share_link(replace(read_share_link(whole["link"]), ran_on=None, settings=_unrun(whole)), BASE)
    with pytest.raises(ValueError, match="the link shares a program that has not been run"):
        replayed(tmp_path, unrun)
    with pytest.raises(LinkError, match="the link has no fragment"):
        read_link(BASE)

    async def early(run: Driven) -> str:
        await run.advance(3)
        return await run.verdict()

    with pytest.raises(ValueError, match="this run was not opened from a pinned run"):
        run_in(tmp_path, early)


def _unrun(whole: dict) -> Any:
    settings = read_share_link(whole["link"]).settings
    return replace(settings, steps=None, final=None)


def test_exported_weights_are_a_safetensors_file_of_the_model_alone(tmp_path: Path) -> None:
    """The weights a page run exports: safetensors reads them; they are the parameters evaluation reads
    (no optimizer state), equal to the final checkpoint's, with the program and where it stands."""

    async def drive(run: Driven) -> tuple[bytes, dict]:
        await to_end(run)
        return await run.weights(), json.loads(await run.manifest(BASE))

    data, out = run_in(tmp_path, drive)
    manifest = json.loads(out["manifest"])
    path = tmp_path / "weights.safetensors"
    path.write_bytes(data)
    with safe_open(str(path), framework="numpy") as f:
        names, metadata = set(f.keys()), f.metadata()
        weight = f.get_tensor("hidden.weight")
    assert names == {"hidden.weight", "hidden.bias", "logits.weight", "logits.bias"}
    assert weight.shape == (64, 128) and weight.dtype.name == "float32"
    assert metadata["format"] == "scellis.weights/1" and metadata["step"] == str(manifest["steps"])
    assert json.loads(metadata["program"])["name"] == "digits-mlp" and metadata["level"] == "debug"
    final = Checkpoint.from_bytes(DirectoryStore(tmp_path).get(out["final"]))
    assert final.tensors["hidden.weight"].data == weight.tobytes()
