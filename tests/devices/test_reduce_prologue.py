"""Reductions of elementwise producers (lower.merge: the producer becomes the REDUCE's prologue,
Reduction.prologue) on every device against the float64 reference, declared tolerance 1e-5 relative to the
largest magnitude: sum, mean, max and variance over leading, trailing and interleaved axes (the producer's
iteration permuted to the reduction's view), a chain of producers, and a producer whose value is also an
output (the reduction stores it) under an epilogue. A producer that one reduction reads alone is one kernel
with it; one read through a broadcast stays apart."""

from __future__ import annotations

import numpy as np
import pytest
from wgpu_harness import run_on

from scellis.codegen.cpu import prologue_blocks
from scellis.ir import Function
from scellis.levels import Level
from scellis.lower import lower
from scellis.lower.kernels import Kind, Reduction, flat
from scellis.ops import DType, Node, Op, make
from scellis.ops import defs as d
from scellis.ops.build import expand, mul, unary
from scellis.ops.node import input_node
from scellis.runtime.cpu.device import CpuDevice
from scellis.runtime.cpu.module import CpuPath
from scellis.runtime.reference.device import ReferenceDevice
from scellis.runtime.reference.oracle import run
from scellis.runtime.webgpu.native import WgpuDevice

RNG = np.random.default_rng(7)
REL = 1e-5


@pytest.fixture(scope="module")
def devices(cpu: CpuPath) -> dict[str, object]:
    return {"reference": ReferenceDevice(), "cpu": CpuDevice(cpu), "webgpu": WgpuDevice()}


def data(name: str, shape: tuple[int, ...]) -> Node:
    return input_node(name, d.Role.DATA, DType.F32, shape)


def check(device: object, fn: Function, inputs: dict[str, np.ndarray], level: Level) -> None:
    got, want = run_on(device, fn, inputs, level), run(fn, inputs)
    for name, _ in fn.outputs:
        scale = max(1.0, float(np.max(np.abs(want[name]))))
        np.testing.assert_allclose(got[name].astype(np.float64), want[name], rtol=0, atol=REL * scale, err_msg=name)


def reductions(shape: tuple[int, ...], axes: tuple[int, ...]) -> tuple[Function, dict[str, np.ndarray]]:
    x, y = data("x", shape), data("y", shape)
    product = mul(unary(Op.TANH, x), y)
    outs = [(op.value, make(op, product, arg=d.ReduceArg(axes, False))) for op in (Op.SUM, Op.MEAN, Op.MAX, Op.VAR)]
    return Function("reduce", (x, y), tuple(outs)), {"x": RNG.standard_normal(shape), "y": RNG.standard_normal(shape)}


# the last: the CPU path computes its prologue a block of output rows at a time (codegen.cpu.prologue_blocks)
CASES = [((6, 70), (1,)), ((6, 70), (0,)), ((5, 3, 4, 2), (0, 2, 3)), ((9,), (0,)), ((5000, 3), (0,))]


@pytest.mark.parametrize("level", [Level.DEBUG, Level.PROD], ids=lambda v: v.value)
@pytest.mark.parametrize("device", ["reference", "cpu", "webgpu"])
@pytest.mark.parametrize(("shape", "axes"), CASES)
def test_reductions_of_a_product(
    devices: dict[str, object], device: str, shape: tuple, axes: tuple, level: Level
) -> None:
    fn, inputs = reductions(shape, axes)
    check(devices[device], fn, inputs, level)


@pytest.mark.parametrize("op", [Op.SUM, Op.MEAN, Op.MAX, Op.VAR])
@pytest.mark.parametrize(("shape", "axes"), CASES)
def test_a_reduction_takes_the_product_as_its_prologue(shape: tuple, axes: tuple, op: Op) -> None:
    x, y = data("x", shape), data("y", shape)
    fn = Function("f", (x, y), (("r", make(op, mul(unary(Op.TANH, x), y), arg=d.ReduceArg(axes, False))),))
    (kernel,) = lower(fn, Level.PROD).kernels
    assert kernel.kind is Kind.REDUCE and isinstance(kernel.arg, Reduction) and kernel.arg.prologue is not None
    assert kernel.arg.reads == 2 and not kernel.stores  # nothing reads the product but the reduction
    blocks = prologue_blocks(kernel)[0]
    assert blocks == (3 if shape == (5000, 3) else 1)  # 5,000 x 3 elements: a block per output row


@pytest.mark.parametrize("device", ["reference", "cpu", "webgpu"])
def test_a_named_producer_is_stored_by_the_reduction(devices: dict[str, object], device: str) -> None:
    x, y = data("x", (4, 3, 50)), data("y", (4, 3, 50))
    scaled = unary(Op.EXP, mul(x, y))
    total = make(Op.SUM, scaled, arg=d.ReduceArg((0, 2), False))
    fn = Function("f", (x, y), (("scaled", scaled), ("total", unary(Op.NEG, total))))
    (kernel,) = lower(fn, Level.PROD).kernels
    assert kernel.kind is Kind.REDUCE and len(kernel.stores) == 1
    inputs = {"x": RNG.standard_normal((4, 3, 50)) * 0.5, "y": RNG.standard_normal((4, 3, 50))}
    got, want = run_on(devices[device], fn, inputs), run(fn, inputs)
    np.testing.assert_allclose(got["scaled"], want["scaled"], rtol=5e-6)  # the elementwise tolerance
    check(devices[device], fn, inputs, Level.PROD)


def test_a_reduction_read_through_a_broadcast_keeps_its_producer_apart() -> None:
    x = data("x", (5,))
    e = unary(Op.EXP, x)
    wide = make(Op.SUM, expand(e, (4, 5)), arg=d.ReduceArg((0, 1), False))
    fn = Function("f", (x,), (("e", e), ("s", wide)))  # e is written once, at its own shape
    kinds = [k.kind for k in lower(fn, Level.PROD).kernels]
    assert kinds == [Kind.ELEMENTWISE, Kind.REDUCE]


@pytest.mark.parametrize("device", ["reference", "cpu", "webgpu"])
def test_a_cheap_producer_two_reductions_read_is_computed_in_both(devices: dict[str, object], device: str) -> None:
    """A one-hot of labels read by two reductions (a cross-entropy's loss and its gradient's row sums):
    each computes it, through its own view (one transposed, so the one-hot's coordinates follow their axis),
    and no kernel writes it."""
    labels = input_node("labels", d.Role.LABEL, DType.I32, (6,))
    x = data("x", (6, 5))
    hot = make(Op.ONE_HOT, labels, arg=d.ClassesArg(5))
    rows = make(Op.SUM, mul(hot, x), arg=d.ReduceArg((1,), False))
    columns = make(Op.SUM, mul(hot, unary(Op.EXP, x)), arg=d.ReduceArg((0,), False))
    fn = Function("f", (labels, x), (("rows", rows), ("columns", columns)))
    kernels = flat(lower(fn, Level.PROD).kernels)
    assert [k.kind for k in kernels] == [Kind.CHECK_INDEX, Kind.REDUCE, Kind.REDUCE]
    inputs = {"labels": np.array([0, 4, 2, 2, 1, 3]), "x": RNG.standard_normal((6, 5))}
    check(devices[device], fn, inputs, Level.PROD)
