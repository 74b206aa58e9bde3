"""The exported loop program and the way back: optimizers, schedules, clipping, weight decay and the loop's
rules (evaluation cadence, learning rate on a plateau, checkpoints every N steps, skipping a batch whose loss
is not finite) decide in train.py as in Scellis, in float64 (losses, parameters, the decision log); a
checkpoint train.py wrote resumes in a Scellis session and goes on as an unbroken Scellis run does; a
checkpoint of another program, and data that changed since the export, are refused by name."""

from __future__ import annotations

import asyncio
import json
import math
import re
import struct
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("torch", reason="PyTorch is not installed: scripts/setup installs it from requirements-dev.txt")

from scellis.datasets import Split
from scellis.examples import digits_mlp
from scellis.levels import Level
from scellis.pipeline import compile_program
from scellis.rng import permutation
from scellis.runtime.reference.device import ReferenceDevice
from scellis.session import Session, checkpoints_to
from scellis.store.directory import DirectoryStore
from scellis.torchexport.imported import TorchCheckpointError, expected_tensors, from_torch
from tests.torchexport.cases import arrays, digits, export, run_train, scellis_run, worst

RULES = [
    {"on": "step", "if": {"non_finite": ["loss"]}, "then": ["skip_batch"]},
    {"on": "evaluation", "if": {"plateau": {"metric": "accuracy", "patience": 1, "mode": "max", "min_delta": 0.1}},
     "then": [{"set_lr": {"scale": 0.5}}]},
    {"on": "step", "if": {"every": 7}, "then": ["checkpoint"]},
]  # fmt: skip
OPTIMIZERS = {
    "momentum, nesterov, cosine warmup, clipping, decay": {
        "kind": "momentum", "lr": 0.05, "nesterov": True, "weight_decay": 0.01, "clip_norm": 0.5,
        "schedule": {"kind": "cosine", "warmup_steps": 4, "total_steps": 30, "min_lr": 0.001},
    },
    "adamw, step decay": {"kind": "adamw", "lr": 0.01, "weight_decay": 0.1,
                          "schedule": {"kind": "step", "step_size": 6, "gamma": 0.5}},
    "sgd": {"kind": "sgd", "lr": 0.1},
}  # fmt: skip


def program(optimizer: dict[str, Any], **loop: Any) -> dict[str, Any]:
    out = digits_mlp()
    out["optimizer"] = optimizer
    out["loop"] = {**out["loop"], **loop}
    return out


def poisoned(train: Split, rows: list[int]) -> Split:
    """`train` with its first pixel NaN in `rows`: those examples' batches have a NaN loss."""
    features = bytearray(train.features)
    for row in rows:
        struct.pack_into("<f", features, row * train.width * 4, math.nan)
    return Split(bytes(features), train.labels, train.width)


def events_of(checkpoint: Path) -> list[list[Any]]:
    text = checkpoint.read_bytes()
    header = json.loads(text[8 : 8 + int.from_bytes(text[:8], "little")])
    return json.loads(header["__metadata__"]["scellis.torch"])["loop"]["events"]


@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_optimizers_schedules_and_rules_decide_as_scellis_does(name: str, tmp_path: Path) -> None:
    prog = program(OPTIMIZERS[name], rules=RULES, evaluate_every=3)
    train, test = digits()
    order = permutation(train.n, 2, 0)
    data = (poisoned(train, [order[64 * 4 + 1]]), test)  # step 5's batch
    store = DirectoryStore(tmp_path / "store")

    async def ours() -> tuple[list[float], Session]:
        session = Session(prog, ReferenceDevice(), seed=2, level=Level.PROD, eval_rows=test.n)
        session.checkpointer = checkpoints_to(store)
        await session.start(data[0])
        losses = []
        for _ in range(20):
            await session.run(*data, steps=1)
            losses.append(session.last_loss)
        return losses, session

    losses, session = asyncio.run(ours())
    start = scellis_run(prog, ReferenceDevice(), data, steps=0, seed=2, level=Level.PROD, weights=None)
    theirs = run_train(
        export(prog, start, data, seed=2, level=Level.PROD, into=tmp_path), "--steps", "20", "--dtype", "float64"
    )
    want, got = np.array(losses), np.array(theirs.losses)
    assert math.isnan(got[4]) and math.isnan(want[4])
    finite = ~np.isnan(want)
    assert np.max(np.abs(want[finite] - got[finite]) / (1 + np.abs(want[finite]))) < 1e-6
    err, where = worst(arrays(asyncio.run(session.tensors(session.kept))), theirs.end)
    assert err < 1e-6, f"{where} differs by {err:.3g}"
    assert [list(e)[:3] for e in events_of(theirs.checkpoint)] == [
        [e.step, e.epoch, e.text] for e in session.loop.events
    ]
    assert any("skipped" in e.text for e in session.loop.events)
    assert any("learning rate x 0.5" in e.text for e in session.loop.events)
    written = sorted(p.name for p in (tmp_path / "checkpoints").glob("step-*.safetensors"))
    assert written == ["step-00000007.safetensors", "step-00000014.safetensors", "step-00000020.safetensors"]


def test_a_torch_checkpoint_resumes_in_scellis_as_an_unbroken_run(tmp_path: Path) -> None:
    prog, (train, test) = program(OPTIMIZERS["adamw, step decay"]), digits()
    unbroken = scellis_run(prog, ReferenceDevice(), (train, test), steps=30, seed=6, level=Level.PROD, weights=None)
    folder = export(prog, unbroken, (train, test), seed=6, level=Level.PROD, into=tmp_path)
    theirs = run_train(folder, "--steps", "20", "--dtype", "float64")
    compiled, level = unbroken.session.compiled, Level.PROD
    key = unbroken.session.at.key
    checkpoint = from_torch(
        theirs.checkpoint.read_bytes(), program=key, level=level, expect=expected_tensors(compiled, level)
    )
    assert (checkpoint.step, checkpoint.epoch, checkpoint.cursor) == (20, 0, 20)
    assert checkpoint.rng.positions == {"init": 1, "shuffle": 1}

    async def resumed() -> Session:
        session = Session(prog, ReferenceDevice(), seed=6, level=level, eval_rows=test.n)
        await session.resume(checkpoint, train)
        await session.run(train, test, steps=10)
        return session

    session = asyncio.run(resumed())
    assert session.steps == 30
    err, where = worst(arrays(unbroken.end), arrays(asyncio.run(session.tensors(session.kept))))
    assert err < 1e-6, f"{where} differs by {err:.3g}"
    assert "imported from a checkpoint of PyTorch" in session.loop.events[0].text

    other = program(OPTIMIZERS["sgd"])
    other_key = compile_program(other).at(level, frozenset()).key
    with pytest.raises(TorchCheckpointError, match="it is a checkpoint of program"):
        from_torch(
            theirs.checkpoint.read_bytes(), program=other_key, level=level, expect=expected_tensors(compiled, level)
        )
    more = {**expected_tensors(compiled, level), "opt.v/extra": ("F32", (1,))}
    with pytest.raises(TorchCheckpointError, match=re.escape("missing ['opt.v/extra'], unexpected []")):
        from_torch(theirs.checkpoint.read_bytes(), program=key, level=level, expect=more)


def test_changed_data_is_refused(tmp_path: Path) -> None:
    prog, data = program(OPTIMIZERS["sgd"]), digits()
    start = scellis_run(prog, ReferenceDevice(), data, steps=0, seed=1, level=Level.PROD, weights=None)
    folder = export(prog, start, data, seed=1, level=Level.PROD, into=tmp_path)
    raw = bytearray((folder / "data" / "train.safetensors").read_bytes())
    raw[-1] ^= 1
    (folder / "data" / "train.safetensors").write_bytes(bytes(raw))
    with pytest.raises(
        AssertionError, match=r"data/train.safetensors has SHA-256 .* the export pinned .*: the data changed"
    ):
        run_train(folder, "--steps", "1")
