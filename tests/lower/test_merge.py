"""lower.merge on small functions: a producer whose output the step names is computed inside its consumer
(one kernel writing both); one read through another shape's view (a broadcast) stays its own kernel; so
does a merge that would bind more than MAX_BINDINGS buffers; and what the merged kernel writes is what the
two kernels wrote, on the reference device. A reduction that repeats an earlier one is computed once,
unless the step names both results."""

from __future__ import annotations

import asyncio

import numpy as np

from scellis.ir import Function
from scellis.levels import Level
from scellis.lower import lower, merge
from scellis.lower.kernels import Kind, flat
from scellis.ops import DType, Op, make
from scellis.ops.build import add, expand, mul, unary
from scellis.ops.defs import ReduceArg, Role
from scellis.ops.node import input_node
from scellis.plan import lowered
from scellis.runtime.reference.device import ReferenceDevice


def data(name: str, shape: tuple[int, ...]) -> object:
    return input_node(name, Role.DATA, DType.F32, shape)


def test_a_named_producer_is_computed_in_its_consumer() -> None:
    x = data("x", (8,))
    y = unary(Op.EXP, x)
    fn = Function("f", (x,), (("y", y), ("z", mul(y, y))))
    schedule = lower(fn, Level.DEBUG)
    (kernel,) = flat(schedule.kernels)
    named = {b: n for n, b in schedule.outputs}
    assert {named[v.buffer] for v in kernel.writes} == {"y", "z"}

    compiled = asyncio.run(ReferenceDevice().compile(lowered(fn, Level.DEBUG)))
    values = np.linspace(-2, 2, 8, dtype="<f4")
    compiled.write("x", values.tobytes())
    compiled.run()
    want_y = np.exp(values.astype(np.float64))
    assert np.array_equal(np.frombuffer(compiled.read("y"), "<f4"), want_y.astype("<f4"))
    assert np.array_equal(np.frombuffer(compiled.read("z"), "<f4"), (want_y * want_y).astype("<f4"))


def test_a_producer_read_through_another_shape_stays_apart() -> None:
    x, w = data("x", (4,)), data("w", (4, 4))
    y = unary(Op.EXP, x)
    fn = Function("f", (x, w), (("y", y), ("z", add(expand(y, (4, 4)), w))))
    assert len(flat(lower(fn, Level.DEBUG).kernels)) == 2


def test_a_merge_binding_too_many_buffers_is_not_made() -> None:
    a = [data(f"a{i}", (8,)) for i in range(6)]
    b = [data(f"b{i}", (8,)) for i in range(2)]
    y = a[0]
    for term in a[1:]:
        y = add(y, term)
    fn = Function("f", (*a, *b), (("y", y), ("z", mul(mul(y, b[0]), b[1]))))
    kernels = flat(lower(fn, Level.DEBUG).kernels)
    assert len(kernels) == 2
    assert all(len({v.buffer for v in (*k.inputs, *k.writes)}) <= merge.MAX_BINDINGS for k in kernels)


def test_a_repeated_reduction_is_computed_once() -> None:
    x = data("x", (6, 5))
    first = make(Op.MEAN, x, arg=ReduceArg((0,), False))
    again = make(Op.MEAN, x, arg=ReduceArg((0,), False))  # another node, the same value (a backward pass's)
    fn = Function("f", (x,), (("a", mul(first, first)), ("b", add(again, again))))
    kernels = flat(lower(fn, Level.DEBUG).kernels)
    assert [k.kind for k in kernels].count(Kind.REDUCE) == 1

    compiled = asyncio.run(ReferenceDevice().compile(lowered(fn, Level.DEBUG)))
    xv = np.arange(30, dtype="<f4").reshape(6, 5)
    compiled.write("x", xv.tobytes())
    compiled.run()
    mean = xv.astype(np.float64).mean(axis=0)
    assert np.array_equal(np.frombuffer(compiled.read("a"), "<f4"), (mean * mean).astype("<f4"))
    assert np.array_equal(np.frombuffer(compiled.read("b"), "<f4"), (mean + mean).astype("<f4"))


def test_a_named_reduction_is_not_shared() -> None:
    x = data("x", (6, 5))
    fn = Function(
        "f",
        (x,),
        (("m", make(Op.MEAN, x, arg=ReduceArg((0,), False))), ("n", make(Op.MEAN, x, arg=ReduceArg((0,), False)))),
    )
    assert [k.kind for k in flat(lower(fn, Level.DEBUG).kernels)] == [Kind.REDUCE, Kind.REDUCE]
