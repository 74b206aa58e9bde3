"""Evaluation in batches: a held-out split evaluated in training-sized calls (and one smaller call for
its last rows) gives the metrics of one call over the whole split, weighted by rows; its plan holds both
evaluations, and the devices allocate exactly that (lavapipe and the CPU path under wasmtime)."""

from __future__ import annotations

import asyncio

import pytest
from splits import random_split

from scellis.datasets import Split
from scellis.examples import digits_mlp
from scellis.levels import Level
from scellis.pipeline import compile_program
from scellis.runtime.cpu.device import CpuDevice
from scellis.runtime.webgpu.native import WgpuDevice
from scellis.session import Session

HELD_OUT = 100  # one batch of 64 and a last batch of 36


@pytest.fixture(scope="module")
def devices() -> dict[str, object]:
    return {"lavapipe": WgpuDevice(), "wasmtime": asyncio.run(CpuDevice.open())}


async def metrics(device: object, **sizes: int) -> tuple[dict[str, float], Session]:
    session = Session(digits_mlp(), device, seed=3, level=Level.DEBUG, **sizes)  # type: ignore[arg-type]
    await session.start()
    return await session.evaluate(random_split(HELD_OUT, 2)), session


def test_batches_weighted_by_rows_give_the_whole_splits_metrics(devices: dict[str, object]) -> None:
    for name, device in devices.items():
        whole, _ = asyncio.run(metrics(device, eval_batch=HELD_OUT))
        batched, session = asyncio.run(metrics(device, eval_rows=HELD_OUT))
        assert (session.eval_batch, session.eval_last_rows) == (64, 36)
        for metric in ("metric/accuracy", "loss"):  # float32 means of other rows, summed in another order
            assert batched[metric] == pytest.approx(whole[metric], rel=1e-6), (name, metric)
        assert round(batched["metric/accuracy"] * HELD_OUT, 4).is_integer()  # a count of right answers
        last = session.eval_last
        assert last is not None
        held = session.step.allocated + session.eval.allocated + last.allocated  # type: ignore[attr-defined]
        assert held == session.plan.total, name


def test_the_plan_holds_the_last_batchs_evaluation_and_names_it() -> None:
    plan = compile_program(digits_mlp(), eval_rows=HELD_OUT).at(Level.PROD, frozenset()).plan
    names = [f.name for f in plan.functions]
    assert names == ["training step", "evaluation", "evaluation, last batch", "init"]
    whole = compile_program(digits_mlp(), eval_rows=128).at(Level.PROD, frozenset()).plan
    assert [f.name for f in whole.functions] == ["training step", "evaluation", "init"]  # two whole batches
    small = compile_program(digits_mlp(), eval_rows=10)  # fewer rows than a batch: one call of 10
    assert small.evaluate_last is None and small.evaluate.inputs[0].shape[0] == 10


def test_a_split_the_plan_did_not_hold_is_refused_with_the_fix(devices: dict[str, object]) -> None:
    session = Session(digits_mlp(), devices["wasmtime"], seed=3, level=Level.DEBUG)  # type: ignore[arg-type]
    asyncio.run(session.start())
    with pytest.raises(ValueError, match=r"has 100 rows: 1 batches of 64 and 36 more.*give the session eval_rows=100"):
        asyncio.run(session.evaluate(random_split(HELD_OUT, 2)))
    with pytest.raises(ValueError, match="the held-out split is empty"):
        asyncio.run(session.evaluate(Split(b"", b"", 64)))
