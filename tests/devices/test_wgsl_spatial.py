"""WGSL convolution, pooling, indexing and random kernels on lavapipe against the float64 reference, and
three steps of a small CNN's training on both.

Inputs are float32 values (the same numbers reach both sides). Declared tolerances, as
max |device - reference| <= TOL * max(1, max |reference|): float32 sums of at most a few hundred terms
against float64 give well under these. Uniform, bernoulli and integer draws are compared bit for bit.
"""

from __future__ import annotations

import asyncio
import math

import numpy as np
import pytest

from scellis.graph import Program
from scellis.ir import Function
from scellis.ir.function import input_name, input_role
from scellis.levels import Level
from scellis.lower import lower
from scellis.lower.kernels import Kind, Schedule
from scellis.ops import DType, Op, const, make
from scellis.ops import defs as d
from scellis.ops.node import input_node
from scellis.pipeline import compile_program
from scellis.plan import lowered, planned
from scellis.runtime.reference import train as rt
from scellis.runtime.reference.oracle import run
from scellis.runtime.webgpu.native import CompiledWgpu, WgpuDevice

TOL = {
    "conv2d": 1e-5,  # dot products and gradient sums of at most a few hundred terms
    "pool": 1e-6,  # window maxima are exact; averages and gradient sums have at most 9 terms
    "indexing": 1e-6,  # gather copies; scatter-add sums at most 12 rows
    "normal": 1e-5,  # Box-Muller in float32 (absolute, the brief's bound)
    "dropout": 1e-6,  # one multiply by 1 / (1 - p)
    "train": 1e-5,  # parameters and states after three SGD steps (lr 0.1) of a whole network
}
WIRE = {DType.F32: "<f4", DType.I32: "<i4", DType.U32: "<u4", DType.BOOL: "<u4"}


@pytest.fixture(scope="module")
def device() -> WgpuDevice:
    return WgpuDevice()


def f32(rng: np.random.Generator, shape: tuple[int, ...], low: int | None = None) -> np.ndarray:
    """Normal float32 values as float64; with `low`, small integers in [low, -low] (ties on purpose)."""
    values = rng.standard_normal(shape) if low is None else rng.integers(low, -low + 1, shape)
    return np.asarray(values, dtype=np.float32).astype(np.float64)


def write(compiled: CompiledWgpu, fn: Function, inputs: dict[str, np.ndarray]) -> None:
    for name, value in inputs.items():
        compiled.write(name, np.asarray(value).astype(WIRE[fn.input(name).dtype]).tobytes())


def read(compiled: CompiledWgpu, fn: Function) -> dict[str, np.ndarray]:
    out = {}
    for name, node in fn.outputs:
        flat = np.frombuffer(compiled.read(name), dtype=WIRE[node.dtype])
        out[name] = flat.reshape(node.shape).astype(np.bool_ if node.dtype is DType.BOOL else flat.dtype)
    return out


def on_device(device: WgpuDevice, fn: Function, inputs: dict[str, np.ndarray]) -> tuple[Schedule, dict]:
    schedule = lower(fn, Level.PROD)
    compiled = asyncio.run(device.compile(planned(schedule)))
    write(compiled, fn, inputs)
    compiled.run()
    return schedule, read(compiled, fn)


def assert_close(got: np.ndarray, want: np.ndarray, tol: float, what: str) -> None:
    assert got.shape == want.shape, what
    err = float(np.max(np.abs(got.astype(np.float64) - want))) if want.size else 0.0
    assert err <= tol * max(1.0, float(np.max(np.abs(want), initial=0.0))), f"{what}: max error {err:.3g}"


def check(device: WgpuDevice, fn: Function, inputs: dict[str, np.ndarray], tol: float) -> Schedule:
    """Every output of `fn` on the device against the reference; the schedule, for kernel checks."""
    schedule, got = on_device(device, fn, inputs)
    want = run(fn, inputs)
    for name, _ in fn.outputs:
        assert_close(got[name], want[name], tol, f"{fn.name}/{name}")
    return schedule


def kinds(schedule: Schedule) -> list[Kind]:
    return [k.kind for k in schedule.kernels]


# -- convolution ------------------------------------------------------------------------------------


def conv_cases() -> list[tuple]:
    """(n, groups, cg, og, h, w, kernel, stride, padding, dilation): fixed edge cases, then seeded draws."""
    cases: list[tuple] = [
        (1, 1, 1, 1, 1, 1, (1, 1), (1, 1), (0, 0), (1, 1)),  # everything size 1
        (2, 2, 3, 2, 7, 5, (3, 2), (2, 1), (1, 2), (1, 2)),  # all options, odd sizes
        (3, 1, 4, 3, 6, 9, (3, 3), (1, 1), (1, 1), (1, 1)),  # "same" convolution
    ]
    rng = np.random.default_rng(11)
    while len(cases) < 7:
        kernel = tuple(int(k) for k in rng.integers(1, 4, 2))
        dilation = tuple(int(v) for v in rng.integers(1, 3, 2))
        padding = tuple(int(rng.integers(0, k + 1)) for k in kernel)
        size = tuple(int(dl * (k - 1) + 1 + rng.integers(0, 5)) for k, dl in zip(kernel, dilation, strict=True))
        stride = tuple(int(v) for v in rng.integers(1, 4, 2))
        groups, cg, og = (int(v) for v in rng.integers(1, 4, 3))
        cases.append((int(rng.integers(1, 4)), groups, cg, og, *size, kernel, stride, padding, dilation))
    return cases


@pytest.mark.parametrize(("seed", "case"), enumerate(conv_cases()), ids=str)
def test_conv2d_with_fused_bias_relu_and_its_gradients(device: WgpuDevice, seed: int, case: tuple) -> None:
    n, groups, cg, og, h, w_, kernel, stride, padding, dilation = case
    arg = d.ConvArg(stride, padding, dilation, groups)
    x = input_node("x", d.Role.DATA, DType.F32, (n, groups * cg, h, w_))
    w = input_node("w", d.Role.PARAM, DType.F32, (groups * og, cg, *kernel))
    bias = input_node("b", d.Role.PARAM, DType.F32, (groups * og, 1, 1))
    conv = make(Op.CONV2D, x, w, arg=arg)
    g = input_node("g", d.Role.DATA, DType.F32, conv.shape)
    outputs = (
        ("y", make(Op.RELU, make(Op.ADD, conv, bias))),
        ("dx", make(Op.CONV2D_GRAD_INPUT, g, w, arg=d.ConvGradArg(arg, x.shape))),
        ("dw", make(Op.CONV2D_GRAD_WEIGHT, x, g, arg=d.ConvGradArg(arg, w.shape))),
    )
    fn = Function("conv", (x, w, bias, g), outputs)
    rng = np.random.default_rng(seed)
    inputs = {input_name(node): f32(rng, node.shape) for node in fn.inputs}
    schedule = check(device, fn, inputs, TOL["conv2d"])
    fused = [k for k in schedule.kernels if k.kind is Kind.CONV2D]
    assert len(fused) == 1 and fused[0].label == "conv2d+2", "bias and relu run inside the conv kernel"


def test_conv2d_gradients_repeat_bit_for_bit(device: WgpuDevice) -> None:
    """Fixed summation order, no atomics: the same inputs give the same bytes."""
    arg = d.ConvArg((2, 1), (1, 1), (1, 1), 2)
    x = input_node("x", d.Role.DATA, DType.F32, (3, 4, 9, 7))
    w = input_node("w", d.Role.PARAM, DType.F32, (6, 2, 3, 3))
    g = input_node("g", d.Role.DATA, DType.F32, make(Op.CONV2D, x, w, arg=arg).shape)
    dx = make(Op.CONV2D_GRAD_INPUT, g, w, arg=d.ConvGradArg(arg, x.shape))
    dw = make(Op.CONV2D_GRAD_WEIGHT, x, g, arg=d.ConvGradArg(arg, w.shape))
    fn = Function("grads", (x, w, g), (("dx", dx), ("dw", dw)))
    rng = np.random.default_rng(3)
    compiled = asyncio.run(device.compile(lowered(fn, Level.PROD)))
    write(compiled, fn, {input_name(node): f32(rng, node.shape) for node in fn.inputs})
    compiled.run()
    first = [compiled.read(name) for name, _ in fn.outputs]
    compiled.run()
    assert [compiled.read(name) for name, _ in fn.outputs] == first


# -- pooling ----------------------------------------------------------------------------------------

POOL_CASES = [
    ((1, 1, 1, 1), (1, 1), (1, 1), (0, 0)),
    ((2, 3, 7, 5), (3, 2), (2, 2), (1, 1)),  # padding, odd sizes
    ((1, 2, 6, 6), (3, 3), (1, 1), (1, 1)),  # overlapping windows: one input in up to 9 windows
    ((3, 1, 5, 8), (2, 3), (3, 1), (1, 0)),  # stride larger than the kernel: some inputs in no window
]


@pytest.mark.parametrize("case", POOL_CASES, ids=str)
def test_pools_and_gradients_with_padding_and_ties(device: WgpuDevice, case: tuple) -> None:
    shape, kernel, stride, padding = case
    arg = d.PoolArg(kernel, stride, padding)
    x = input_node("x", d.Role.DATA, DType.F32, shape)
    pooled = make(Op.MAX_POOL2D, x, arg=arg)
    g = input_node("g", d.Role.DATA, DType.F32, pooled.shape)
    grad = d.PoolGradArg(arg, shape)
    outputs = (
        ("max", pooled),
        ("avg", make(Op.AVG_POOL2D, x, arg=arg)),
        ("max_grad", make(Op.MAX_POOL2D_GRAD, x, g, arg=grad)),
        ("avg_grad", make(Op.AVG_POOL2D_GRAD, g, arg=grad)),
    )
    rng = np.random.default_rng(len(POOL_CASES) + math.prod(shape))
    # integers in [-1, 1]: most windows hold their maximum more than once, so first-maximum routing shows
    inputs = {"x": f32(rng, shape, low=-1), "g": f32(rng, pooled.shape)}
    check(device, Function("pool", (x, g), outputs), inputs, TOL["pool"])


# -- indexing ---------------------------------------------------------------------------------------

INDEX_CASES = [
    ((1,), (1,)),  # one row, one index
    ((5, 3), (4, 2)),  # 2-D indices
    ((3, 1, 4), (7,)),  # more indices than rows: every row repeats
    ((4,), (2, 3)),  # a 1-D table: rows are scalars
    ((6, 2), ()),  # one scalar index
    ((6,), ()),  # a scalar picked from a 1-D table
]


@pytest.mark.parametrize("case", INDEX_CASES, ids=str)
def test_gather_and_scatter_add_with_repeated_indices(device: WgpuDevice, case: tuple) -> None:
    table_shape, index_shape = case
    rows = table_shape[0]
    table = input_node("table", d.Role.PARAM, DType.F32, table_shape)
    indices = input_node("indices", d.Role.DATA, DType.I32, index_shape)
    g = input_node("g", d.Role.DATA, DType.F32, index_shape + table_shape[1:])
    outputs = (
        ("gather", make(Op.GATHER, table, indices)),
        ("scatter", make(Op.SCATTER_ADD, indices, g, arg=d.RowsArg(rows))),
    )
    rng = np.random.default_rng(rows * 7 + len(index_shape))
    chosen = rng.integers(0, max(1, rows // 2 + 1), index_shape)  # low rows only: repeats, and rows never hit
    inputs = {"table": f32(rng, table_shape), "indices": chosen, "g": f32(rng, g.shape)}
    check(device, Function("index", (table, indices, g), outputs), inputs, TOL["indexing"])


# -- randomness -------------------------------------------------------------------------------------


def random_fn(shape: tuple[int, ...], site: int, p: float) -> Function:
    key = input_node("rng.dropout", d.Role.RNG, DType.U32, (2,))
    position = input_node("rng.position", d.Role.SETTING, DType.U32, ())
    n = {d.Distribution.INTEGER: 7}  # integers in [0, 7)
    draws = tuple(
        (dist.value, make(Op.RANDOM, key, position, arg=d.RandomArg(dist, "dropout", site, shape, p, n.get(dist, 0))))
        for dist in d.Distribution
    )
    return Function("random", (key, position), draws)


# (shape, site, p, position): sizes 1 and odd, the largest site and position, p = 0 and p near 1
RANDOM_CASES = [
    ((1,), 0, 0.5, 0),
    ((3, 50, 7), 3, 0.1, 5),
    ((4097,), 2**32 - 1, 0.999, 2**32 - 1),
    ((2, 1, 3), 7, 0.0, 9),
    ((), 1, 0.5, 1),
]


@pytest.mark.parametrize("case", RANDOM_CASES, ids=str)
def test_random_draws_match_the_reference_bit_for_bit(device: WgpuDevice, case: tuple) -> None:
    shape, site, p, position = case
    fn = random_fn(shape, site, p)
    rng = np.random.default_rng(site % 1000)
    inputs = {
        "rng.dropout": rng.integers(0, 2**32, 2, dtype=np.uint64).astype(np.uint32),
        "rng.position": np.array(position, dtype=np.uint32),
    }
    _, got = on_device(device, fn, inputs)
    want = run(fn, inputs, np.float32)  # float32 reference: uniform draws are exact multiples of 2^-24
    np.testing.assert_array_equal(got["uniform"], want["uniform"])
    np.testing.assert_array_equal(got["bernoulli"], want["bernoulli"])
    np.testing.assert_array_equal(got["integer"], want["integer"])
    assert_close(got["normal"], run(fn, inputs)["normal"], TOL["normal"], "normal")


def test_bernoulli_compares_against_p_exactly(device: WgpuDevice) -> None:
    """p just above a drawn u (which is m * 2^-24, m >= 2^23) rounds to u in float32; the mask must still
    follow the exact comparison u >= p, as the reference does in float64."""
    inputs = {"rng.dropout": np.array([11, 12]), "rng.position": np.array(0)}
    uniform = run(random_fn((64,), 0, 0.5), inputs)["uniform"]
    u = float(uniform[uniform >= 0.5][0])
    p = u + 2.0**-30
    assert np.float32(p) == u, "p must round onto the drawn value in float32"
    fn = random_fn((64,), 0, p)
    _, got = on_device(device, fn, inputs)
    np.testing.assert_array_equal(got["bernoulli"], run(fn, inputs)["bernoulli"])
    assert not got["bernoulli"][np.flatnonzero(uniform == u)].any()


def test_dropout_fuses_into_the_random_kernel(device: WgpuDevice) -> None:
    p = 0.3
    x = input_node("x", d.Role.DATA, DType.F32, (5, 33))
    key = input_node("rng.dropout", d.Role.RNG, DType.U32, (2,))
    position = input_node("rng.position", d.Role.SETTING, DType.U32, ())
    keep = make(Op.RANDOM, key, position, arg=d.RandomArg(d.Distribution.BERNOULLI, "dropout", 1, x.shape, p))
    dropped = make(Op.WHERE, keep, make(Op.MUL, x, const(1 / (1 - p))), const(0.0))
    fn = Function("dropout", (x, key, position), (("y", dropped),))
    rng = np.random.default_rng(5)
    inputs = {"x": f32(rng, x.shape), "rng.dropout": np.array([7, 2**31 + 5]), "rng.position": np.array(4)}
    schedule, got = on_device(device, fn, inputs)
    want = run(fn, inputs)["y"]
    assert kinds(schedule) == [Kind.RANDOM], "draw, where and multiply are one kernel"
    np.testing.assert_array_equal(got["y"] == 0, want == 0)
    assert_close(got["y"], want, TOL["dropout"], "dropout")


# -- a CNN training step -----------------------------------------------------------------------------


def cnn() -> dict:
    p = Program("cnn")
    x, y = p.input("x", [3, 9, 7]), p.input("y", [], dtype="int32", role="labels")
    h = p.relu(p.batch_norm(p.conv2d(x, 4, 3, padding=1)))
    h = p.max_pool2d(p.relu(p.conv2d(h, 6, 3, stride=[2, 1], padding=[1, 0], groups=2)), 2, padding=1)
    logits = p.linear(p.dropout(p.flatten(h), 0.25), 5)
    p.set_loss(p.cross_entropy(logits, y))
    p.set_optimizer("sgd", lr=0.1)  # SGD keeps float32 rounding proportional (Adam's first step is ~sign(g))
    p.set_loop(epochs=1, batch_size=3)
    return p.to_json()


def test_cnn_training_steps_match_the_reference(device: WgpuDevice) -> None:
    compiled = compile_program(cnn())
    step = compiled.step
    schedule = lower(step, Level.PROD)
    needed = {Kind.CONV2D, Kind.CONV2D_GRAD_INPUT, Kind.CONV2D_GRAD_WEIGHT, Kind.MAX_POOL2D, Kind.MAX_POOL2D_GRAD}
    assert needed | {Kind.RANDOM} <= set(kinds(schedule))
    gpu = asyncio.run(device.compile(planned(schedule)))
    state = rt.initial_state(compiled.init, step, seed=3)
    # float32 starting values, so both sides start from the same numbers
    state.values = {k: v.astype(np.float32).astype(v.dtype) for k, v in state.values.items()}
    held = [input_name(n) for n in step.inputs if input_role(n) in (d.Role.PARAM, d.Role.STATE)]
    write(gpu, step, {**rt.keys(step, state.seed), **{name: state.values[name] for name in held}})
    rng = np.random.default_rng(8)
    for _ in range(3):
        batch = {"x": f32(rng, (3, 3, 9, 7)), "y": rng.integers(0, 5, 3)}
        write(gpu, step, {**batch, **rt.positions(step, state)})
        gpu.run()
        rt.step(step, state, batch)
    got = read(gpu, step)
    for name, _ in step.outputs:
        kind, _, target = name.partition("/")
        if kind in ("param", "state"):
            assert_close(got[name], state.values[target], TOL["train"], name)
