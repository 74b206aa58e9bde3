"""The loop program's rules on a device (the CPU path under wasmtime, level debug): a skip rule fires on
an injected non-finite batch, on the device, and that step changes no weight; a plateau rule changes the
learning rate at the evaluation it should and the device uses the new rate; a stop rule ends the run;
a run paused after any step and run on gives the bits of an unbroken run."""

from __future__ import annotations

import asyncio
import math
import struct
from typing import Any

import pytest
from splits import random_split

from scellis.datasets import Split
from scellis.examples import digits_mlp
from scellis.levels import Level
from scellis.optim.optimizers import STEP
from scellis.rng import permutation
from scellis.runtime.cpu.device import CpuDevice
from scellis.session import Session

ROWS, HELD_OUT, POISONED = 640, 64, 321  # ten batches of 64; example 321's pixels are NaN


@pytest.fixture(scope="module")
def cpu() -> CpuDevice:
    return asyncio.run(CpuDevice.open())


def program(rules: list[dict[str, Any]], **loop: Any) -> dict[str, Any]:
    data = digits_mlp()
    data["loop"] = {**data["loop"], "rules": rules, **loop}
    return data


def poisoned(rows: int) -> Split:
    clean = random_split(rows, 1)
    row = 64 * 4
    nan = struct.pack("<f", math.nan) * 64
    features = clean.features[: POISONED * row] + nan + clean.features[(POISONED + 1) * row :]
    return Split(features, clean.labels, 64)


def session(cpu: CpuDevice, data: dict[str, Any]) -> Session:
    return Session(data, cpu, seed=7, level=Level.DEBUG, eval_rows=HELD_OUT)


SKIP = {"on": "step", "if": {"non_finite": ["loss", "gradients"]}, "then": ["skip_batch"]}


def test_a_non_finite_batch_is_skipped_on_the_device_and_changes_nothing(cpu: CpuDevice) -> None:
    s = session(cpu, program([SKIP], epochs=1))
    train, test = poisoned(ROWS), random_split(HELD_OUT, 2)
    asyncio.run(s.start(train))
    order = permutation(ROWS, 7, 0)  # the first epoch draws the shuffle substream's position 0
    bad_step = order.index(POISONED) // 64 + 1
    names = [*s.carried, STEP]
    for step in range(1, ROWS // 64 + 1):
        before = asyncio.run(s.step.fetch(names))
        asyncio.run(s.run(train, test, steps=1))
        after = asyncio.run(s.step.fetch(names))
        changed = {name for name in names if before[name] != after[name]}
        if step == bad_step:
            assert changed == set(), changed  # no weight, no optimizer state, not even the step counter
        else:
            assert STEP in changed and len(changed) > 1
    assert [str(e) for e in s.loop.events] == [
        f"step {bad_step} (epoch 1): skipped, the loss or a gradient was not finite"
    ]
    assert s.epoch == 1 and math.isfinite(s.last_metrics["loss"])


def test_without_the_rule_the_same_batch_poisons_the_weights(cpu: CpuDevice) -> None:
    s = session(cpu, program([], epochs=1))
    asyncio.run(s.fit(poisoned(ROWS), random_split(HELD_OUT, 2)))
    assert math.isnan(s.last_metrics["loss"])


def test_a_plateau_changes_the_learning_rate_at_the_expected_evaluation(cpu: CpuDevice) -> None:
    never_better = {"metric": "loss", "patience": 2, "min_delta": 1e9}  # only the first evaluation sets a best
    rules = [{"on": "evaluation", "if": {"plateau": never_better}, "then": [{"set_lr": {"scale": 0.5}}]}]
    s = session(cpu, program(rules, epochs=1, evaluate_every=2))
    asyncio.run(s.fit(random_split(ROWS, 1), random_split(HELD_OUT, 2)))
    # evaluations after steps 2, 4, 6, 8, 10: a best at 2, two without improvement at 4 and 6 -> fire;
    # the count starts again: 8, 10 -> fire
    assert [(e.step, e.text.split(",")[0]) for e in s.loop.events] == [
        (6, "learning rate x 0.5 (scale 1 -> 0.5)"),
        (10, "learning rate x 0.5 (scale 0.5 -> 0.25)"),
    ]
    assert s.loop.lr_scale == 0.25
    reported = asyncio.run(s.step.step({}, ["lr"]))  # one more step: the rate the device now uses
    assert struct.unpack("<f", reported["lr"])[0] == pytest.approx(3e-3 * 0.25, rel=1e-6)


def test_a_stop_rule_ends_the_run_early(cpu: CpuDevice) -> None:
    rules = [
        {"on": "evaluation", "if": {"plateau": {"metric": "loss", "patience": 1, "min_delta": 1e9}}, "then": ["stop"]}
    ]
    s = session(cpu, program(rules, epochs=5))
    results = asyncio.run(s.fit(random_split(ROWS, 1), random_split(HELD_OUT, 2)))
    assert [r.epoch for r in results] == [0, 1] and s.steps == 20 and s.loop.stopped
    assert str(s.loop.events[-1]).startswith("step 20 (epoch 2): stop, loss has not improved on")


def test_pausing_after_any_step_gives_the_bits_of_an_unbroken_run(cpu: CpuDevice) -> None:
    data = program([SKIP], epochs=2, evaluate_every=3)
    train, test = poisoned(ROWS), random_split(HELD_OUT, 2)
    whole = session(cpu, data)
    asyncio.run(whole.fit(train, test))
    paused = session(cpu, data)
    asyncio.run(paused.start(train))
    for chunk in (1, 4, 7, 3, 5):  # 20 steps in pieces, across the epoch boundary
        asyncio.run(paused.run(train, test, steps=chunk))
    asyncio.run(paused.run(train, test))  # nothing left: the end
    assert asyncio.run(paused.step.fetch(paused.carried)) == asyncio.run(whole.step.fetch(whole.carried))
    assert [str(e) for e in paused.loop.events] == [str(e) for e in whole.loop.events]
    assert paused.last_metrics == whole.last_metrics and paused.steps == whole.steps == 20


def test_progress_is_told_at_each_read_with_rate_and_time_left(cpu: CpuDevice) -> None:
    s = session(cpu, program([], epochs=2, evaluate_every=5))
    told: list = []
    s.progress = told.append
    asyncio.run(s.fit(random_split(ROWS, 1), random_split(HELD_OUT, 2)))
    # reads: the step before each evaluation (every 5 steps), each evaluation, and each epoch's last step
    assert [p.step for p in told] == [5, 5, 10, 10, 15, 15, 20, 20]
    assert all(p.total == 20 and p.epochs == 2 and p.steps_per_s > 0 for p in told)
    assert told[-1].eta_s == 0 and told[-1].epoch == 2 and "metric/accuracy" in told[-1].metrics
    assert str(told[-1]).startswith("step 20/20 (epoch 2/2), loss ")
