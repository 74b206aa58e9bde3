"""Resume equals uninterrupted: 100 steps straight and 50 steps, a checkpoint, a new session resumed from
its key and 50 more give checkpoints with the same key (weights, optimizer state, RNG state, loop state),
at debug on lavapipe and on the CPU path (wasmtime), for the digits CNN (dropout and shuffling on: the
RNG state matters). Resuming from a corrupted, another program's or another level's checkpoint is a
clear error, never a fresh start. Retention keeps the last three rule checkpoints (all of them here)."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path

import pytest
from splits import random_split

from scellis.examples import digits_cnn
from scellis.levels import Level
from scellis.plan.remedies import apply
from scellis.runtime.cpu.device import CpuDevice
from scellis.runtime.webgpu.native import WgpuDevice
from scellis.session import Session, checkpoints_to
from scellis.store import DirectoryStore
from scellis.store.checkpoint import ResumeError, load, save
from scellis.store.history import History

ROWS, HELD_OUT = 640, 64  # ten steps an epoch
RULES = [
    {"on": "step", "if": {"non_finite": ["loss", "gradients"]}, "then": ["skip_batch"]},
    {"on": "evaluation", "if": {"plateau": {"metric": "loss", "patience": 2}}, "then": [{"set_lr": {"scale": 0.5}}]},
    {"on": "step", "if": {"every": 30}, "then": ["checkpoint"]},
]


def program() -> dict:
    data = apply(digits_cnn(), {"batch": 64})
    data["loop"] = {**data["loop"], "epochs": 10, "rules": RULES, "evaluate_every": 20}
    return data


@pytest.fixture(scope="module")
def devices() -> dict[str, object]:
    return {"lavapipe": WgpuDevice(), "wasmtime": asyncio.run(CpuDevice.open())}


def new_session(device: object, store: DirectoryStore, level: Level = Level.DEBUG, data: dict | None = None) -> Session:
    session = Session(data or program(), device, seed=11, level=level, eval_rows=HELD_OUT)  # type: ignore[arg-type]
    session.checkpointer = checkpoints_to(store)
    return session


async def straight(device: object, store: DirectoryStore) -> tuple[str, list[tuple[int, str]]]:
    train, test = random_split(ROWS, 1), random_split(HELD_OUT, 2)
    session = new_session(device, store)
    await session.start(train)
    await session.run(train, test, steps=100)
    return await save(store, await session.checkpoint()), session.checkpoints


async def in_two(device: object, store: DirectoryStore) -> tuple[str, str, list[tuple[int, str]]]:
    train, test = random_split(ROWS, 1), random_split(HELD_OUT, 2)
    first = new_session(device, store)
    await first.start(train)
    await first.run(train, test, steps=50)  # mid-epoch: the sixth epoch's order is drawn
    middle = await save(store, await first.checkpoint())
    second = new_session(device, store)
    checkpoint = await load(store, middle, expect_program=second.at.key, expect_level=Level.DEBUG)
    await second.resume(checkpoint, train)
    await second.run(train, test, steps=50)
    return middle, await save(store, await second.checkpoint()), second.checkpoints


async def from_rule_checkpoint(device: object, store: DirectoryStore, key: str) -> tuple[str, list[tuple[int, str]]]:
    train, test = random_split(ROWS, 1), random_split(HELD_OUT, 2)
    session = new_session(device, store)
    checkpoint = await load(store, key, expect_program=session.at.key, expect_level=Level.DEBUG)
    await session.resume(checkpoint, train)
    await session.run(train, test, steps=100 - checkpoint.step)
    return await save(store, await session.checkpoint()), session.checkpoints


def test_resume_equals_uninterrupted(devices: dict[str, object], tmp_path: Path) -> None:
    for name, device in devices.items():
        store = DirectoryStore(tmp_path / name)
        whole, written = asyncio.run(straight(device, store))
        middle, resumed, carried = asyncio.run(in_two(device, store))
        assert resumed == whole, name
        # the resumed session lists the checkpoint written before the interruption too (its manifest pins all)
        assert [step for step, _ in written] == [30, 60, 90] and carried == written, name
        # resumed from a checkpoint its loop program wrote (at step 60): that one is listed as well
        assert asyncio.run(from_rule_checkpoint(device, store, written[1][1])) == (whole, written), name
        assert middle != whole and len(store.keys()) >= 5  # rule checkpoints at 30, 60, 90 and the two above


def test_resume_refuses_what_it_cannot_continue(devices: dict[str, object], tmp_path: Path) -> None:
    store = DirectoryStore(tmp_path)
    device = devices["wasmtime"]
    middle, _, _ = asyncio.run(in_two(device, store))
    session = new_session(device, store)
    key = session.at.key  # type: ignore[attr-defined]
    with pytest.raises(ResumeError, match="it was saved at level debug, and this run is at level prod"):
        asyncio.run(load(store, middle, expect_program=key, expect_level=Level.PROD))
    other = new_session(device, store, data=apply(program(), {"batch": 32})).compiled.at(Level.DEBUG).key
    with pytest.raises(ResumeError, match=f"this run's program is {other}"):
        asyncio.run(load(store, middle, expect_program=other, expect_level=Level.DEBUG))
    path = store.path(middle)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 1  # one byte
    path.chmod(0o644)
    path.write_bytes(bytes(data))
    with pytest.raises(ResumeError) as corrupt:
        asyncio.run(load(store, middle, expect_program=key, expect_level=Level.DEBUG))
    assert corrupt.value.reasons == ["corrupt"] and middle in str(corrupt.value)
    with pytest.raises(ResumeError) as missing:
        asyncio.run(load(store, "sha256:" + "0" * 64, expect_program=key, expect_level=Level.DEBUG))
    assert missing.value.reasons == ["missing"]


def test_a_checkpoint_with_a_bad_history_is_refused(devices: dict[str, object], tmp_path: Path) -> None:
    """The earlier checkpoints are in the history a checkpoint names (store.history), not in its metadata: one
    listing a checkpoint after its own step, or a loop state without its fields, is a ResumeError."""
    store = DirectoryStore(tmp_path)
    train, test = random_split(ROWS, 1), random_split(HELD_OUT, 2)
    first = new_session(devices["wasmtime"], store)
    asyncio.run(first.start(train))
    asyncio.run(first.run(train, test, steps=31))
    checkpoint = asyncio.run(first.checkpoint())
    assert isinstance(checkpoint.history, History) and checkpoint.history.written == ((30, first.checkpoints[0][1]),)
    assert "checkpoints" not in checkpoint.loop and "events" not in checkpoint.loop["state"]
    later = replace(checkpoint.history, written=((40, first.checkpoints[0][1]),))
    with pytest.raises(ResumeError, match="lists a checkpoint after its own step 31"):
        asyncio.run(new_session(devices["wasmtime"], store).resume(replace(checkpoint, history=later), train))
    without = {k: v for k, v in checkpoint.loop.items() if k != "state"}
    with pytest.raises(ResumeError, match="its loop state has no valid 'state'"):
        asyncio.run(new_session(devices["wasmtime"], store).resume(replace(checkpoint, loop=without), train))
