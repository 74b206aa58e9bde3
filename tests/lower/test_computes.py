"""Which IR nodes each kernel computes (lower.computes): its covers, and a reduction that keeps its axes,
whose kernel covers nothing."""

from __future__ import annotations

import pytest

from scellis.examples import digits_cnn
from scellis.ir import Function
from scellis.levels import Level
from scellis.lower import lower
from scellis.lower.computes import computed
from scellis.ops import DType, Op, make
from scellis.ops import defs as d
from scellis.ops.node import input_node
from scellis.pipeline import compile_program


def test_a_reduction_that_keeps_its_axes_is_computed_by_its_kernel() -> None:
    x = input_node("x", d.Role.DATA, DType.F32, (4, 6))
    kept = make(Op.SUM, x, arg=d.ReduceArg((1,), True))
    flat = make(Op.MEAN, x, arg=d.ReduceArg((1,), False))
    fn = Function("f", (x,), (("y", make(Op.EXP, make(Op.SUB, x, kept))), ("z", flat)))
    schedule = lower(fn, Level.PROD)
    nodes = fn.nodes()
    computes = [[nodes[p].op for p in positions] for positions in computed(schedule, fn)]
    assert [k.covers for k in schedule.kernels if k.kind.value == "reduce"].count(()) == 1
    assert sorted(computes, key=str) == sorted([[Op.SUM], [Op.SUB, Op.EXP], [Op.MEAN]], key=str)


def test_every_computed_node_of_a_step_is_computed_by_a_kernel() -> None:
    step = compile_program(digits_cnn()).step
    schedule = lower(step, Level.PROD)
    done = {p for positions in computed(schedule, step) for p in positions}
    views = {Op.INPUT, Op.CONST, Op.RESHAPE, Op.EXPAND, Op.PERMUTE, Op.SLICE}
    assert {i for i, n in enumerate(step.nodes()) if n.op not in views} <= done


def test_a_schedule_of_another_function_is_refused() -> None:
    step = compile_program(digits_cnn()).step
    x = input_node("x", d.Role.DATA, DType.F32, (4, 6))
    other = Function("f", (x,), (("y", make(Op.SUM, x, arg=d.ReduceArg((1,), True))),))
    with pytest.raises(ValueError, match="keepdims"):
        computed(lower(other, Level.PROD), step)
