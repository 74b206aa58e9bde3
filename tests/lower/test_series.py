"""lower.series on hand-made kernels: kernels of one invocation per index join the series opened before them
when they touch what its parts touch alike; a read through another footprint, a kernel in between that
writes what a kernel reads, an update whose input another part touches, and more than MAX_BINDINGS buffers
keep a kernel out; kernels of one invocation share anything; updates wait for a later one. And on a
program: the digits MLP's cross-entropy rows run as one series."""

from __future__ import annotations

from scellis.examples import digits_mlp
from scellis.levels import Level
from scellis.lower import lower
from scellis.lower.kernels import Expr, Kernel, Kind, Load, View
from scellis.lower.merge import MAX_BINDINGS
from scellis.lower.series import joined
from scellis.ops import DType
from scellis.ops.defs import AxisArg
from scellis.pipeline import compile_program

COPY = Expr((Load(0),), (DType.F32,))


def copy(src: View, dst: View) -> Kernel:
    return Kernel(Kind.ELEMENTWISE, dst, (src,), None, COPY)


def grid(buffer: int, shape: tuple[int, ...] = (4, 4)) -> View:
    return View.contiguous(buffer, shape)


def test_kernels_touching_the_same_elements_join_one_series() -> None:
    first, second = copy(grid(0), grid(1)), copy(grid(1), grid(2))  # the second reads what the first wrote
    (series,) = joined([first, second], {})
    assert series.kind is Kind.SERIES and series.parts == (first, second)
    assert {v.buffer for v in series.writes} == {1, 2} and {v.buffer for v in series.inputs} == {0, 1}


def test_a_read_of_another_invocations_elements_keeps_a_kernel_out() -> None:
    first = copy(grid(0), grid(1))
    turned = copy(View(1, (4, 4), (1, 4), 0), grid(2))  # reads the transpose: invocation i, another's element
    assert joined([first, turned], {}) == (first, turned)
    rows = Kernel(Kind.ARGMAX, View.contiguous(3, (4,)), (grid(1),), AxisArg(1), variant="serial")
    columns = Kernel(Kind.ARGMAX, View.contiguous(4, (4,)), (View(1, (4, 4), (1, 4), 0),), AxisArg(1), variant="serial")
    # a row's argmax reads the row invocation i of a row-wise writer wrote; a column's does not
    writer = Kernel(Kind.LOG_SOFTMAX, grid(1), (grid(0),), AxisArg(1), variant="serial")
    (series,) = joined([writer, rows], {})
    assert series.parts == (writer, rows)
    assert joined([writer, columns], {}) == (writer, columns)


def test_a_kernel_does_not_move_past_one_that_writes_what_it_reads() -> None:
    first = copy(grid(0), grid(1))
    sort = Kernel(Kind.SORT, grid(2), (grid(1),), AxisArg(1))  # runs no series
    after = copy(grid(2), grid(3))
    assert joined([first, sort, after], {}) == (first, sort, after)
    independent = copy(grid(0), grid(4))
    series, kept = joined([first, sort, independent], {})
    assert series.parts == (first, independent) and kept is sort


def test_an_update_another_part_touches_and_too_many_buffers_keep_a_kernel_out() -> None:
    first = copy(grid(9), grid(1))  # reads the parameter the update updates
    update = copy(grid(9), grid(5))  # buffer 5 is carried into buffer 9: updated in place, once alone
    assert joined([first, update], {5: 9}) == (first, update)
    (alone,) = joined([copy(grid(0), grid(1)), update], {5: 9})
    assert alone.kind is Kind.SERIES  # with a part that touches neither, it joins
    wide = [copy(grid(2 * i), grid(2 * i + 1)) for i in range(MAX_BINDINGS // 2 + 1)]
    out = joined(wide, {})
    assert [len(k.parts) for k in out] == [MAX_BINDINGS // 2, 1]


def test_single_invocations_share_any_buffer() -> None:
    record = 7
    a = copy(View.contiguous(0, (1,)), View.contiguous(record, (1,), 0))
    b = copy(View.contiguous(0, (1,)), View.contiguous(record, (1,), 1))  # another word of the same buffer
    (series,) = joined([a, b], {})
    assert series.parts == (a, b)


def test_the_digits_mlp_runs_its_cross_entropy_rows_as_one_series() -> None:
    schedule = lower(compile_program(digits_mlp()).step, Level.PROD)
    assert len(schedule.kernels) == 10
    kinds = [[p.kind for p in k.parts] for k in schedule.kernels if k.kind is Kind.SERIES]
    assert [Kind.LOG_SOFTMAX, Kind.CHECK_INDEX, Kind.REDUCE, Kind.ARGMAX] in kinds
    carried = {c.src for c in schedule.carry}
    assert not any(v.buffer in carried for k in schedule.kernels if k.kind is Kind.SERIES for v in k.writes)


def test_updates_wait_for_a_later_update_and_run_with_it_where_nothing_between_touches_them() -> None:
    first = copy(grid(0), grid(1))  # carried into buffer 10: an update
    sort = Kernel(Kind.SORT, grid(3), (grid(2),), AxisArg(1))  # touches neither
    second = copy(grid(3), grid(5))  # carried into buffer 11; reads what the sort writes: cannot run earlier
    kept, series = joined([first, sort, second], {1: 10, 5: 11})
    assert kept is sort and series.parts == (first, second)
    reads_it = Kernel(Kind.SORT, grid(3), (grid(10),), AxisArg(1))  # reads what the first update updates
    assert joined([first, reads_it, second], {1: 10, 5: 11}) == (first, reads_it, second)
    plain = copy(grid(6), grid(7))  # no update: it does not wait
    assert joined([plain, sort, second], {5: 11}) == (plain, sort, second)
