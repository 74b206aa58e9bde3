"""Which IR nodes each kernel computes (its covers, which the Guide's links read): a reduction that keeps its
axes and a reduction split into a partial and a final kernel cover their node too."""

from __future__ import annotations

from scellis.examples import digits_cnn
from scellis.ir import Function
from scellis.levels import Level
from scellis.lower import lower
from scellis.lower.kernels import flat
from scellis.ops import DType, Op, make
from scellis.ops import defs as d
from scellis.ops.node import input_node
from scellis.pipeline import compile_program


def _covered(fn: Function) -> list[list[Op]]:
    nodes = fn.nodes()
    return sorted(([nodes[p].op for p in k.covers] for k in flat(lower(fn, Level.PROD).kernels)), key=str)


def test_a_reduction_that_keeps_its_axes_is_covered_by_its_kernel() -> None:
    x = input_node("x", d.Role.DATA, DType.F32, (4, 6))
    kept = make(Op.SUM, x, arg=d.ReduceArg((1,), True))
    flat = make(Op.MEAN, x, arg=d.ReduceArg((1,), False))
    fn = Function("f", (x,), (("y", make(Op.EXP, make(Op.SUB, x, kept))), ("z", flat)))
    assert _covered(fn) == sorted([[Op.SUM], [Op.SUB, Op.EXP], [Op.MEAN]], key=str)


def test_every_kernel_of_a_split_reduction_covers_it() -> None:
    x = input_node("x", d.Role.DATA, DType.F32, (2, 1 << 16))
    fn = Function("f", (x,), (("v", make(Op.VAR, x, arg=d.ReduceArg((1,), True, 1))),))
    assert _covered(fn) == [[Op.VAR]] * 4


def test_every_computed_node_of_a_step_is_computed_by_a_kernel() -> None:
    step = compile_program(digits_cnn()).step
    done = {p for k in flat(lower(step, Level.PROD).kernels) for p in k.covers}
    views = {Op.INPUT, Op.CONST, Op.RESHAPE, Op.EXPAND, Op.PERMUTE, Op.SLICE}
    assert {i for i, n in enumerate(step.nodes()) if n.op not in views} <= done
