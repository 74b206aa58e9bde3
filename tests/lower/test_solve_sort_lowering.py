"""How SOLVE, SORT and SORT_GRAD lower: solve's working copy is its own output buffer (so the plan holds
it), sort's axis goes last by strides alone."""

from __future__ import annotations

from scellis.ir import Function
from scellis.levels import Level
from scellis.lower import Kind, View, lower
from scellis.ops import DType, Op, make
from scellis.ops import defs as d
from scellis.ops.node import input_node
from scellis.plan import plan_memory


def test_solve_reduces_the_augmented_matrix_in_its_output_and_x_is_a_view_of_it() -> None:
    a = input_node("a", d.Role.DATA, DType.F32, (2000, 4, 4))
    b = input_node("b", d.Role.DATA, DType.F32, (2000, 4, 1))
    x = make(Op.SOLVE, a, b)
    schedule = lower(Function("f", (a, b), (("y", make(Op.EXP, x)),)), Level.DEBUG)
    solve, exp = schedule.kernels
    assert solve.kind is Kind.SOLVE and solve.out == View.contiguous(solve.out.buffer, (2000, 4, 5))
    assert [v.shape for v in solve.inputs] == [(2000, 4, 4), (2000, 4, 1)]
    assert exp.inputs == (View(solve.out.buffer, (2000, 4, 1), (20, 5, 0), 4),)  # x: the last column
    assert schedule.buffer(solve.out.buffer).nbytes == 2000 * 4 * 5 * 4
    plan = plan_memory(schedule)
    assert plan.slot_of[solve.out.buffer] >= 0 and plan.slot_bytes[plan.slot_of[solve.out.buffer]] >= 160_000


def test_sort_and_sort_grad_read_the_sorted_axis_last_through_strides() -> None:
    x = input_node("x", d.Role.DATA, DType.F32, (2000, 4))
    g = input_node("g", d.Role.DATA, DType.F32, (2000, 4))
    sorted_x = make(Op.SORT, x, arg=d.AxisArg(0))
    routed = make(Op.SORT_GRAD, x, g, arg=d.AxisArg(0))
    schedule = lower(Function("f", (x, g), (("s", sorted_x), ("r", routed))), Level.DEBUG)
    kinds = [k.kind for k in schedule.kernels]
    # then both back to [2000, 4], by one kernel (lower.merge: side by side)
    assert kinds == [Kind.SORT, Kind.SORT_GRAD, Kind.ELEMENTWISE]
    assert len(schedule.kernels[2].writes) == 2
    sort, grad = schedule.kernels[:2]
    assert sort.inputs == (View(0, (4, 2000), (1, 4)),)
    assert grad.inputs == (View(0, (4, 2000), (1, 4)), View(1, (4, 2000), (1, 4)))
    assert sort.out.shape == grad.out.shape == (4, 2000) and sort.out.is_contiguous
