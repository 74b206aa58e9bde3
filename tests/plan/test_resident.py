"""A resident data set: the training split held on the device and each batch gathered there by its
example indices. Planned as its own category; refused without its size; streaming it is the remedy that
makes a program fit when the data set is what does not (no device: budgets are given)."""

from __future__ import annotations

import pytest

from scellis.examples import digits_cnn, digits_mlp
from scellis.graph import ProgramError
from scellis.ir.function import input_name, input_role
from scellis.levels import Level
from scellis.ops.defs import Role
from scellis.pipeline import compile_program, planner
from scellis.plan.budget import Budget, DeviceLimits
from scellis.plan.remedies import Target, advise, apply, device_judge

LIMITS = DeviceLimits(1 << 30, 1 << 30, 32)
EXAMPLES = 1438  # the digits' training split


def resident(program: dict) -> dict:
    return apply(program, {"data": "resident"})


def test_the_step_gathers_its_batch_from_the_resident_split() -> None:
    step = compile_program(resident(digits_mlp()), examples=EXAMPLES).step
    inputs = {input_name(n): (input_role(n), n.dtype.value, n.shape) for n in step.inputs}
    assert inputs["dataset.pixels"] == (Role.DATASET, "float32", (EXAMPLES, 64))
    assert inputs["dataset.digit"] == (Role.DATASET, "int32", (EXAMPLES,))
    assert inputs["batch.rows"] == (Role.DATA, "int32", (64,))
    assert "pixels" not in inputs and "digit" not in inputs
    evaluate = compile_program(resident(digits_mlp()), eval_batch=10, examples=EXAMPLES).evaluate
    assert {input_name(n) for n in evaluate.inputs} >= {"pixels", "digit"}  # evaluation streams its rows


@pytest.mark.parametrize("make", [digits_mlp, digits_cnn])
def test_the_resident_split_is_planned_as_its_own_category(make) -> None:  # type: ignore[no-untyped-def]
    streamed = compile_program(make()).at(Level.PROD, frozenset()).plan
    held = compile_program(resident(make()), examples=EXAMPLES).at(Level.PROD, frozenset()).plan
    split = EXAMPLES * (64 + 1) * 4  # float32 pixels and an int32 label per example
    assert streamed.step.bytes["resident data set"] == 0
    assert held.step.bytes["resident data set"] == split
    assert held.step.bytes["batch inputs"] < streamed.step.bytes["batch inputs"]  # indices, not rows
    assert held.total > streamed.total


def test_a_resident_program_needs_its_size() -> None:
    with pytest.raises(ValueError, match="needs the number of training examples; got None"):
        compile_program(resident(digits_mlp()))
    with pytest.raises(ValueError, match="has 10 examples, fewer than one batch of 64"):
        compile_program(resident(digits_mlp()), examples=10)
    with pytest.raises(ProgramError, match=r"memory\.data"):
        compile_program(apply(digits_mlp(), {}) | {"memory": {"data": "disk"}})
    with pytest.raises(ValueError, match="unknown remedy change color"):
        apply(digits_mlp(), {"color": "red"})


def test_streaming_is_the_remedy_when_the_data_set_is_what_does_not_fit() -> None:
    examples = 60_000  # MNIST-sized: the split outweighs everything else the MLP holds
    program = resident(digits_mlp())
    held = compile_program(program, examples=examples).at(Level.PROD, frozenset()).plan
    streamed = compile_program(digits_mlp()).at(Level.PROD, frozenset()).plan
    budget = Budget(held.total // 2, "a test budget")
    assert streamed.total < 0.8 * budget.bytes  # type: ignore[operator]
    judge = device_judge(LIMITS, budget)
    assert judge(held).color == "red"
    advice = advise(program, held, budget, Target(planner(Level.PROD, frozenset(), examples=examples), judge))
    first = advice.remedies[0]
    assert (first.name, first.change, first.verdict.color) == ("stream the data set", {"data": "stream"}, "green")
    assert not advice.capacity  # parameters, gradients and optimizer state fit: it is not a capacity problem
    applied = apply(program, first.change)
    assert compile_program(applied, examples=examples).at(Level.PROD, frozenset()).plan.total == first.plan.total
    assert judge(first.plan).color == "green"
