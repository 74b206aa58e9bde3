"""SOLVE, SORT, SORT_GRAD and the gradients their VJP rules build, on every device (the reference device,
the CPU path under wasmtime, WGSL on lavapipe) at every level, against numpy in float64.

Declared tolerances: a solve's x and gb within the SOLVE kernel's tolerance (lower.variants: 5e-6
sqrt(2n) of max(1, max |numpy|), for the well-conditioned matrices used here); ga = -(gb x^T) within the
matmul kernel's tolerance of the same product of the device's own gb and x in float64 (each kernel is held
to its own bound); SORT and SORT_GRAD move values, so their bits equal numpy's stable sort's, NaN payloads,
infinities and signed zeros included. Debug and prod give identical bytes from a second compile and run."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from scellis.autodiff import VJP
from scellis.ir import Function
from scellis.levels import Level
from scellis.lower import Kind, Schedule, lower
from scellis.lower.kernels import flat
from scellis.lower.variants import SMALL_SOLVE, tolerance
from scellis.ops import DType, Node, Op, make
from scellis.ops import defs as d
from scellis.ops.node import input_node
from scellis.plan import planned
from scellis.runtime.cpu.device import CpuDevice
from scellis.runtime.cpu.module import CpuPath
from scellis.runtime.reference.device import ReferenceDevice
from scellis.runtime.webgpu.native import WgpuDevice

DEVICES = ["reference", "cpu", "webgpu"]
LEVELS = list(Level)


@pytest.fixture(scope="module")
def devices(cpu: CpuPath) -> dict[str, object]:
    return {"reference": ReferenceDevice(), "cpu": CpuDevice(cpu), "webgpu": WgpuDevice()}


def data(name: str, shape: tuple[int, ...]) -> Node:
    return input_node(name, d.Role.DATA, DType.F32, shape)


def run_at(device: object, fn: Function, inputs: dict[str, np.ndarray], level: Level) -> tuple[Schedule, dict]:
    """Lower `fn` for `level`, compile it on `device`, run once: the schedule and every output's bytes."""
    schedule = lower(fn, level)
    compiled = asyncio.run(device.compile(planned(schedule)))  # type: ignore[attr-defined]
    for name, value in inputs.items():
        compiled.write(name, np.asarray(value, dtype="<f4").tobytes())
    compiled.run()
    return schedule, {name: compiled.read(name) for name, _ in fn.outputs}


def values(raw: dict[str, bytes], fn: Function) -> dict[str, np.ndarray]:
    return {name: np.frombuffer(raw[name], "<f4")[: node.size].reshape(node.shape) for name, node in fn.outputs}


def computing(schedule: Schedule, fn: Function, name: str) -> object:
    """The kernel that computes output `name` (the last covering its node)."""
    position = next(i for i, n in enumerate(fn.nodes()) if n is fn.output(name))
    return [k for k in flat(schedule.kernels) if position in k.covers][-1]


def relative(got: np.ndarray, want: np.ndarray) -> float:
    return float(np.max(np.abs(got.astype(np.float64) - want))) / max(1.0, float(np.max(np.abs(want))))


# -- solve ------------------------------------------------------------------------------------------------


def solve_fn(n: int, k: int, batch: tuple[int, ...]) -> Function:
    """x = solve(a, b) and, for a cotangent g of x, the gradients its VJP rule builds."""
    a, b, g = data("a", (*batch, n, n)), data("b", (*batch, n, k)), data("g", (*batch, n, k))
    x = make(Op.SOLVE, a, b)
    ga, gb = VJP[Op.SOLVE](x, g, (True, True))
    assert ga is not None and gb is not None
    return Function("solve", (a, b, g), (("x", x), ("ga", ga), ("gb", gb)))


def solve_inputs(n: int, k: int, batch: tuple[int, ...], seed: int) -> dict[str, np.ndarray]:
    """Diagonally dominant a with its rows shuffled (row exchanges needed), b and g, all exactly float32."""
    rng = np.random.default_rng(seed)
    a = rng.uniform(-1, 1, (*batch, n, n)) + (n + 1) * np.eye(n)
    a = a[..., rng.permutation(n), :]
    b, g = rng.uniform(-1, 1, (*batch, n, k)), rng.uniform(-1, 1, (*batch, n, k))
    return {name: v.astype(np.float32).astype(np.float64) for name, v in (("a", a), ("b", b), ("g", g))}


# (n, k, batch): the workflows' [2000, 4, 4] with [2000, 4, 1] and [4, 4] with [4, 4]; one unknown; two
# batch axes (one invocation a matrix up to SMALL_SOLVE unknowns); a workgroup a matrix, with fewer rows than
# its 64 lanes and with more
SOLVE_CASES = [(4, 1, (2000,)), (4, 4, ()), (1, 2, ()), (6, 2, (2, 3)), (9, 2, (5,)), (70, 3, (2,))]


@pytest.mark.parametrize("level", LEVELS, ids=lambda v: v.value)
def test_small_systems_take_an_invocation_each_and_larger_ones_a_workgroup(level: Level) -> None:
    for n, variant in (
        (1, "solve-invocation"),
        (SMALL_SOLVE, "solve-invocation"),
        (SMALL_SOLVE + 1, "solve-workgroup"),
    ):
        kernels = flat(lower(solve_fn(n, 2, (3,)), level).kernels)
        assert [k.variant for k in kernels if k.kind is Kind.SOLVE] == [variant, variant], n  # x, then gb


@pytest.mark.parametrize("level", LEVELS, ids=lambda v: v.value)
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("case", SOLVE_CASES, ids=str)
def test_solve_and_its_gradients_within_the_declared_tolerance(
    devices: dict[str, object], device: str, level: Level, case: tuple[int, int, tuple[int, ...]]
) -> None:
    n, k, batch = case
    fn = solve_fn(n, k, batch)
    inputs = solve_inputs(n, k, batch, seed=n + k)
    schedule, raw = run_at(devices[device], fn, inputs, level)
    got = values(raw, fn)
    a, b, g = inputs["a"], inputs["b"], inputs["g"]
    x, gb = np.linalg.solve(a, b), np.linalg.solve(np.swapaxes(a, -1, -2), g)
    for name, want in (("x", x), ("gb", gb)):
        kernel = computing(schedule, fn, name)
        assert kernel.kind is Kind.SOLVE  # type: ignore[attr-defined]
        assert relative(got[name], want) <= tolerance(kernel), name  # type: ignore[arg-type]
    product = -(got["gb"].astype(np.float64) @ np.swapaxes(got["x"].astype(np.float64), -1, -2))
    kernel = computing(schedule, fn, "ga")
    assert kernel.kind is Kind.MATMUL  # type: ignore[attr-defined]
    assert relative(got["ga"], product) <= tolerance(kernel)  # type: ignore[arg-type]


@pytest.mark.parametrize("device", DEVICES)
def test_solve_pivots_past_zeros_on_the_diagonal(devices: dict[str, object], device: str) -> None:
    fn = solve_fn(3, 2, ())
    a = np.array([[0.0, 2.0, 1.0], [3.0, 0.0, 1.0], [1.0, 1.0, 0.0]])
    inputs = {"a": a, "b": np.array([[1.0, 0.0], [2.0, 1.0], [3.0, -1.0]]), "g": np.ones((3, 2))}
    schedule, raw = run_at(devices[device], fn, inputs, Level.DEBUG)
    kernel = computing(schedule, fn, "x")
    assert relative(values(raw, fn)["x"], np.linalg.solve(a, inputs["b"])) <= tolerance(kernel)  # type: ignore[arg-type]


@pytest.mark.parametrize("device", DEVICES)
def test_a_singular_matrix_gives_non_finite_values_and_leaves_the_others(
    devices: dict[str, object], device: str
) -> None:
    fn = solve_fn(2, 1, (3,))
    a = np.array([[[1.0, 2.0], [2.0, 4.0]], [[2.0, 0.0], [0.0, 2.0]], [[0.0, 0.0], [0.0, 0.0]]])
    inputs = {"a": a, "b": np.ones((3, 2, 1)), "g": np.ones((3, 2, 1))}
    x = values(run_at(devices[device], fn, inputs, Level.DEBUG)[1], fn)["x"]
    assert not np.isfinite(x[0]).all() and not np.isfinite(x[2]).all()
    np.testing.assert_array_equal(x[1], [[0.5], [0.5]])


# -- sort -------------------------------------------------------------------------------------------------


def sort_fn(shape: tuple[int, ...], axis: int) -> Function:
    """SORT along `axis` and the gradient its VJP rule builds for a cotangent g (a SORT_GRAD)."""
    x, g = data("x", shape), data("g", shape)
    sorted_x = make(Op.SORT, x, arg=d.AxisArg(axis))
    (routed,) = VJP[Op.SORT](sorted_x, g, (True,))
    assert routed is not None and routed.op is Op.SORT_GRAD
    return Function("sort", (x, g), (("sorted", sorted_x), ("routed", routed)))


F32_SPECIALS = np.array(
    [0x7FC00000, 0xFFC00000, 0x7FC00123, 0x7F800000, 0xFF800000, 0x80000000, 0, 0x00000001, 0x80000001, 0x3F800000],
    dtype="<u4",
).view("<f4")


def sort_inputs(shape: tuple[int, ...], kind: str, seed: int) -> dict[str, np.ndarray]:
    """x: distinct floats, ties (quarter steps in [-2, 2]), or a mix with NaN (payloads and signs),
    infinities, signed zeros and subnormals; g: normal."""
    rng = np.random.default_rng(seed)
    if kind == "distinct":
        x = rng.standard_normal(shape).astype(np.float32)
    elif kind == "ties":
        x = (rng.integers(-8, 9, shape) / 4).astype(np.float32)
    else:
        x = np.where(rng.random(shape) < 0.5, rng.choice(F32_SPECIALS, shape), rng.integers(-2, 3, shape)).astype("<f4")
    return {"x": x, "g": rng.standard_normal(shape).astype(np.float32)}


def expected_sort(x: np.ndarray, g: np.ndarray, axis: int) -> tuple[np.ndarray, np.ndarray]:
    """numpy's stable sort of x (float32 bits moved as they are) and g routed back: gx[i] = g[rank(i)]."""
    order = np.argsort(x, axis=axis, kind="stable")
    rank = np.argsort(order, axis=axis, kind="stable")
    return np.take_along_axis(x, order, axis=axis), np.take_along_axis(g, rank, axis=axis)


# (shape, axis): the workflows' [2000] and [2000, 4] along axis 0; rows of more than one 256-key tile;
# an inner axis; lines of one element
SORT_CASES = [((2000,), 0), ((2000, 4), 0), ((3, 300, 2), 1), ((7, 33), 1), ((1,), 0), ((5, 1), 1), ((2, 600), 1)]


@pytest.mark.parametrize("level", LEVELS, ids=lambda v: v.value)
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("case", SORT_CASES, ids=str)
@pytest.mark.parametrize("kind", ["distinct", "ties", "special"])
def test_sort_and_sort_grad_match_numpy_bit_for_bit(
    devices: dict[str, object], device: str, level: Level, case: tuple[tuple[int, ...], int], kind: str
) -> None:
    shape, axis = case
    fn = sort_fn(shape, axis)
    inputs = sort_inputs(shape, kind, seed=sum(shape) + axis)
    got = values(run_at(devices[device], fn, inputs, level)[1], fn)
    want_sorted, want_routed = expected_sort(inputs["x"], inputs["g"], axis)
    assert got["sorted"].view("<u4").tolist() == want_sorted.view("<u4").tolist()
    assert got["routed"].view("<u4").tolist() == want_routed.view("<u4").tolist()


# -- determinism ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("level", [Level.DEBUG, Level.PROD], ids=lambda v: v.value)
@pytest.mark.parametrize("device", ["cpu", "webgpu"])
def test_a_second_compile_and_run_gives_identical_bytes(devices: dict[str, object], device: str, level: Level) -> None:
    for fn, inputs in (
        (solve_fn(4, 1, (2000,)), solve_inputs(4, 1, (2000,), seed=1)),
        (solve_fn(70, 3, (2,)), solve_inputs(70, 3, (2,), seed=2)),
        (sort_fn((2000, 4), 0), sort_inputs((2000, 4), "special", seed=3)),
    ):
        first = run_at(devices[device], fn, inputs, level)[1]
        assert run_at(devices[device], fn, inputs, level)[1] == first, fn.name
