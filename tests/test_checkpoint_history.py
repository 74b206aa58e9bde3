"""Checkpoint history and retention on a real session (a small MLP on the CPU path, wasmtime, at debug):
checkpoint metadata is the same size at step 10 and at step 10,000; a long run's store holds only the
checkpoints retention keeps (the last N, the best, the pinned) beside its small history segments;
resuming from a kept checkpoint (a rule's or a mid-run one) reaches the uninterrupted run's final key and
lists the same checkpoints; a history that is missing, corrupt or disagrees with its checkpoint, and a
loop state without its fields, are refused by name."""

from __future__ import annotations

import asyncio
import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent / "devices"))
sys.path.insert(0, str(Path(__file__).parent / "store"))

from memstore import MemoryStore
from splits import random_split

from scellis.examples import mlp
from scellis.levels import Level
from scellis.runtime.cpu.device import CpuDevice
from scellis.session import Session, checkpoints_to
from scellis.store import Checkpoint, ResumeError, decode, encode, load, save
from scellis.store.history import History

TRAIN, TEST = random_split(40, 1), random_split(8, 2)  # ten steps an epoch


def program(every: int, evaluate_every: int) -> dict[str, Any]:
    data = mlp(64, [8], 10, 4)
    rules = [{"on": "step", "if": {"every": every}, "then": ["checkpoint"]}]
    data["loop"] = {**data["loop"], "epochs": 2000, "rules": rules, "evaluate_every": evaluate_every}
    return data


@pytest.fixture(scope="module")
def device() -> CpuDevice:
    return asyncio.run(CpuDevice.open())


def new_session(device: CpuDevice, store: Any, keep: int | None = 3, every: int = 10, evaluate: int = 5) -> Session:
    session = Session(program(every, evaluate), device, seed=5, level=Level.DEBUG, eval_rows=TEST.n)
    session.checkpointer = checkpoints_to(store, keep)
    return session


async def run_to(session: Session, store: Any, steps: int, resume: str | None = None) -> str:
    """Start (or resume from `resume`), run until `steps` steps are done, save and return the state's key."""
    if resume is None:
        await session.start(TRAIN)
    else:
        key = session.compiled.at(Level.DEBUG, session.device.features).key
        await session.resume(await load(store, resume, expect_program=key, expect_level=Level.DEBUG), TRAIN)
    await session.run(TRAIN, TEST, steps=steps - session.steps)
    return await save(store, await session.checkpoint())


def metadata_bytes(store: Any, key: str) -> int:
    _, metadata = decode(store.get(key))
    return sum(len(name) + len(text) for name, text in metadata.items())


def checkpoints_in(store: MemoryStore) -> dict[str, Checkpoint]:
    found = {}
    for key, data in store.objects.items():
        try:
            found[key] = Checkpoint.from_bytes(data)
        except ValueError:
            continue
    return found


def test_metadata_stays_the_same_size_and_storage_is_bounded(device: CpuDevice) -> None:
    store = MemoryStore()
    session = new_session(device, store, evaluate=10)
    asyncio.run(run_to(session, store, 20))
    (step, early), (_, second) = session.checkpoints
    sizes = [metadata_bytes(store, early), metadata_bytes(store, second)]
    asyncio.run(run_to(session, store, 10_000))
    step_late, late = session.checkpoints[-1]
    assert (step, step_late, len(session.checkpoints)) == (10, 10_000, 1000)
    sizes.append(metadata_bytes(store, late))
    # the same but for digits (step, cursor, positions, counts); from the second on, each names the best so far
    assert abs(sizes[2] - sizes[1]) <= 40 and abs(sizes[2] - sizes[0]) <= 40 + 100, sizes
    kept = checkpoints_in(store)
    rule_kept = {k for k, c in kept.items() if c.loop["by_rule"]}
    best = session.best
    assert best is not None
    assert rule_kept == {key for _, key in session.checkpoints[-3:]} | {best.key}
    assert len(kept) <= 3 + 1 + 2  # last 3, the best, and the two states saved above
    segments = len(store.objects) - len(kept)
    assert segments <= len(session.checkpoints) + 2
    assert max(len(d) for k, d in store.objects.items() if k not in kept) < 400  # a segment is small


def test_resume_from_kept_checkpoints_equals_uninterrupted(device: CpuDevice) -> None:
    store = MemoryStore()
    whole_session = new_session(device, store, every=7)
    whole = asyncio.run(run_to(whole_session, store, 60))
    written = list(whole_session.checkpoints)
    assert [s for s, _ in written] == [7, 14, 21, 28, 35, 42, 49, 56]
    assert not store.has(written[0][1]) or whole_session.best.key == written[0][1]  # type: ignore[union-attr]
    # interrupted mid-epoch between rule checkpoints, then resumed
    first = new_session(device, store, every=7)
    middle = asyncio.run(run_to(first, store, 33))
    second = new_session(device, store, every=7)
    assert asyncio.run(run_to(second, store, 60, resume=middle)) == whole
    assert second.checkpoints == written and second.best == whole_session.best
    # resumed from the last rule checkpoint (kept by retention)
    third = new_session(device, store, every=7)
    assert asyncio.run(run_to(third, store, 60, resume=written[-1][1])) == whole
    assert third.checkpoints == written
    assert [str(e) for e in third.loop.events] == [str(e) for e in whole_session.loop.events]


def test_pinned_checkpoints_are_kept(device: CpuDevice) -> None:
    store = MemoryStore()
    session = new_session(device, store, keep=1)
    asyncio.run(run_to(session, store, 10))
    pinned = session.checkpoints[0][1]
    session.pinned.add(pinned)
    asyncio.run(run_to(session, store, 50))
    kept = {k for k, c in checkpoints_in(store).items() if c.loop["by_rule"]}
    assert pinned in kept and session.checkpoints[-1][1] in kept
    assert len(kept) <= 3  # the pinned, the last, the best


def test_a_damaged_history_is_refused_by_name(device: CpuDevice) -> None:
    store = MemoryStore()
    session = new_session(device, store, keep=None)
    key = asyncio.run(run_to(session, store, 25))
    program_key = session.compiled.at(Level.DEBUG, session.device.features).key
    checkpoint = asyncio.run(load(store, key, expect_program=program_key, expect_level=Level.DEBUG))
    assert isinstance(checkpoint.history, History) and len(checkpoint.history.written) == 2
    segment = checkpoint.history.reference().key

    def refused(store: Any, key: str) -> ResumeError:
        with pytest.raises(ResumeError) as caught:
            asyncio.run(load(store, key, expect_program=program_key, expect_level=Level.DEBUG))
        return caught.value

    broken = MemoryStore()
    broken.objects = {k: v for k, v in store.objects.items() if k != segment}
    error = refused(broken, key)
    assert error.reasons == ["missing"] and "its history cannot be read" in str(error) and segment in str(error)
    broken.objects[segment] = b'{"format": "scellis.history/1"}'
    error = refused(broken, key)
    assert error.reasons == ["corrupt"]
    # a checkpoint whose counts disagree with its history
    lying = replace(checkpoint, history=replace(checkpoint.history.reference(), events=99))
    error = refused(store, store.put(lying.to_bytes()))
    assert error.reasons == ["not a checkpoint"] and "the checkpoint says 99" in str(error)
    # a history segment that is not one
    forged = replace(checkpoint, history=replace(checkpoint.history.reference(), key=store.put(b"[1, 2]")))
    error = refused(store, store.put(forged.to_bytes()))
    assert error.reasons == ["not a checkpoint"] and "is not a history segment" in str(error)


def test_a_loop_state_without_its_fields_is_refused_by_name(device: CpuDevice) -> None:
    """Not KeyError: 'state': a ResumeError saying which field is missing."""
    store = MemoryStore()
    session = new_session(device, store, keep=None)
    key = asyncio.run(run_to(session, store, 12))
    program_key = session.compiled.at(Level.DEBUG, session.device.features).key
    checkpoint = asyncio.run(load(store, key, expect_program=program_key, expect_level=Level.DEBUG))
    for name in ("state", "by_rule", "best", "order_drawn"):
        loop = {k: v for k, v in checkpoint.loop.items() if k != name}
        with pytest.raises(ResumeError, match=f"its loop state has no valid '{name}'"):
            asyncio.run(new_session(device, store).resume(replace(checkpoint, loop=loop), TRAIN))
    with pytest.raises(ResumeError, match="names a history that was not read"):
        bare = Checkpoint.from_bytes(store.get(key))
        asyncio.run(new_session(device, store).resume(bare, TRAIN))


def as_format_1(checkpoint: Checkpoint) -> bytes:
    """`checkpoint` as the earlier format wrote it: its log and earlier keys inside its loop state."""
    assert isinstance(checkpoint.history, History)
    tensors, metadata = decode(checkpoint.to_bytes())
    state = {**checkpoint.loop["state"], "events": [list(e) for e in checkpoint.history.events]}
    loop = {"state": state, "order_drawn": checkpoint.loop["order_drawn"], "by_rule": checkpoint.loop["by_rule"]}
    loop["checkpoints"] = [list(w) for w in checkpoint.history.written]
    del metadata["log"]
    metadata.update(format='"scellis.checkpoint/1"', loop=json.dumps(loop, sort_keys=True, separators=(",", ":")))
    return encode(tensors, metadata)


def test_a_checkpoint_of_the_earlier_format_still_resumes(device: CpuDevice) -> None:
    """Stored before the history moved out of the metadata: it resumes as a saved state, its log and
    earlier checkpoints carried on, and the run decides as an unbroken one."""
    store = MemoryStore()
    whole_session = new_session(device, store, every=7)
    asyncio.run(run_to(whole_session, store, 60))
    first = new_session(device, store, every=7)
    middle = asyncio.run(run_to(first, store, 33))
    program_key = first.compiled.at(Level.DEBUG, first.device.features).key
    checkpoint = asyncio.run(load(store, middle, expect_program=program_key, expect_level=Level.DEBUG))
    old = store.put(as_format_1(checkpoint))
    second = new_session(device, store, every=7)
    asyncio.run(run_to(second, store, 60, resume=old))
    assert [s for s, _ in second.checkpoints] == [s for s, _ in whole_session.checkpoints]
    assert second.checkpoints[:4] == whole_session.checkpoints[:4]  # those written before, by their keys
    assert [str(e) for e in second.loop.events] == [str(e) for e in whole_session.loop.events]
