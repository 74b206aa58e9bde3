"""The CPU path's exports per kernel (codegen.cpu): one table for every kind, a producer's epilogue (or
the move out of its temporary) as a tape after it."""

from __future__ import annotations

from scellis.codegen.cpu import PRODUCER_EXPORTS, TAPE, TAPE_A_PART, TAPED, cpu_calls
from scellis.ir import Function
from scellis.levels import Level
from scellis.lower import Kind, lower
from scellis.lower.kernels import flat
from scellis.ops import DType, Op, make
from scellis.ops import defs as d
from scellis.ops.node import input_node


def test_every_kind_has_its_export() -> None:
    assert set(PRODUCER_EXPORTS) | TAPED | TAPE_A_PART | {Kind.SERIES} == set(Kind)  # a series: its parts'
    assert all(name.startswith("sc_cpu_") for name in PRODUCER_EXPORTS.values())


def test_an_epilogue_runs_as_a_tape_after_its_producer() -> None:
    a = input_node("a", d.Role.DATA, DType.F32, (4, 8))
    b = input_node("b", d.Role.PARAM, DType.F32, (8, 3))
    product = make(Op.MATMUL, a, b, arg=d.MatmulArg())
    fn = Function("f", (a, b), (("plain", product), ("relu", make(Op.RELU, product)), ("e", make(Op.EXP, a))))
    calls = [cpu_calls(k) for k in flat(lower(fn, Level.PROD).kernels)]
    assert sorted(calls) == sorted([("sc_cpu_matmul", TAPE), (TAPE,)])  # the ReLU's tape writes both outputs
    shared = Function("g", (a, b), (("relu", make(Op.RELU, make(Op.MATMUL, a, b, arg=d.MatmulArg()))),))
    assert [cpu_calls(k) for k in flat(lower(shared, Level.PROD).kernels)] == [("sc_cpu_matmul", TAPE)]


def test_a_concatenation_of_views_is_one_kernel_and_a_copying_tape_a_part() -> None:
    a = input_node("a", d.Role.DATA, DType.F32, (4, 8))
    tail = make(Op.SLICE, a, arg=d.SliceArg((0, 5), (4, 8), (1, 1)))
    head = make(Op.SLICE, a, arg=d.SliceArg((0, 0), (4, 5), (1, 1)))
    fn = Function("roll", (a,), (("y", make(Op.CONCAT, tail, head, arg=d.AxisArg(1))),))
    kernels = flat(lower(fn, Level.PROD).kernels)
    assert [k.kind for k in kernels] == [Kind.CONCAT]
    assert cpu_calls(kernels[0]) == (TAPE, TAPE)
