"""Where lowering checks indices (lower.schedule): one CHECK_INDEX kernel for each indices view and bound, before
the first kernel that reads them (a gather and its gradient's scatter_add share one), none for integers drawn
below the bound; the records live in the step output INDEX_CHECKS, three words each."""

from __future__ import annotations

from scellis.ir import Function
from scellis.levels import Level
from scellis.lower import lower
from scellis.lower.kernels import INDEX_CHECKS, Kind, flat
from scellis.ops import DType, Op, make
from scellis.ops import defs as d
from scellis.ops.build import mul
from scellis.ops.defs import Role
from scellis.ops.indices import IndexUse
from scellis.ops.node import input_node


def test_a_gather_and_its_scatter_add_share_one_check_and_a_one_hot_has_its_own() -> None:
    table = input_node("embed.weight", Role.PARAM, DType.F32, (7, 3))
    tokens = input_node("tokens", Role.DATA, DType.I32, (4,))
    labels = input_node("labels", Role.LABEL, DType.I32, (4,))
    rows = make(Op.GATHER, table, tokens)
    grad = make(Op.SCATTER_ADD, tokens, rows, arg=d.RowsArg(7))
    hot = mul(make(Op.ONE_HOT, labels, arg=d.ClassesArg(3)), make(Op.ONE_HOT, labels, arg=d.ClassesArg(3)))
    fn = Function("f", (table, tokens, labels), (("grad", grad), ("hot", hot)))
    schedule = lower(fn, Level.DEBUG)
    checks = [k for k in flat(schedule.kernels) if k.kind is Kind.CHECK_INDEX]
    assert [k.arg for k in checks] == [
        IndexUse("gather from 'embed.weight' by 'tokens'", 7, (4,)),
        IndexUse("one_hot of 'labels' (3 classes)", 3, (4,)),
    ]
    assert [k.out.offset for k in checks] == [0, 3]
    records = dict(schedule.outputs)[INDEX_CHECKS]
    assert schedule.buffer(records).size == 6 and schedule.buffer(records).dtype is DType.U32
    gather = next(i for i, k in enumerate(schedule.kernels) if k.kind is Kind.GATHER)
    assert flat(schedule.kernels).index(checks[0]) < gather


def test_integers_drawn_below_the_bound_are_not_checked() -> None:
    table = input_node("x", Role.DATA, DType.F32, (10, 2))
    key = input_node("rng.boot", Role.RNG, DType.U32, (2,))
    position = input_node("rng.boot.position", Role.SETTING, DType.U32, ())
    draw = make(Op.RANDOM, key, position, arg=d.RandomArg(d.Distribution.INTEGER, "boot", 0, (5, 10), n=10))
    schedule = lower(Function("f", (table, key, position), (("y", make(Op.GATHER, table, draw)),)), Level.DEBUG)
    assert not [k for k in flat(schedule.kernels) if k.kind is Kind.CHECK_INDEX]
    assert INDEX_CHECKS not in dict(schedule.outputs)
