"""EXPM1 and the gradient its VJP rule builds, on every device (the reference device, the CPU path under
wasmtime, WGSL on lavapipe) at every level, against numpy in float64.

Declared tolerances, relative to |np.expm1(x)|: 2.5e-7 (4 float32 ulps) for |x| < 0.5 on every device,
tiny |x| included (the range where exp(x) - 1 would cancel); the same everywhere on the CPU path and the
reference device (double precision inside, one rounding). Elsewhere WGSL computes exp(x) - 1, so its bound
is the WGSL spec's for exp, (3 + 2|x|) ulp, times e^x / |e^x - 1| (at most 2.6 there), plus half an ulp
for the subtraction. Zero stays zero, and large negative x gives exactly -1. The gradient exp(x) g within
the elementwise kernels' declared tolerance (lower.variants: 5e-6 of max(1, max |numpy|)).
"""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from scellis.autodiff import VJP
from scellis.ir import Function
from scellis.levels import Level
from scellis.lower.variants import TOLERANCE
from scellis.ops import DType, Op, make
from scellis.ops.defs import Role
from scellis.ops.node import input_node
from scellis.plan import lowered
from scellis.runtime.cpu.device import CpuDevice
from scellis.runtime.cpu.module import CpuPath
from scellis.runtime.reference.device import ReferenceDevice
from scellis.runtime.webgpu.native import WgpuDevice

DEVICES = ["reference", "cpu", "webgpu"]
LEVELS = list(Level)
POLYNOMIAL_TOL = 2.5e-7
ULP = 2.0**-23  # float32's largest relative spacing


@pytest.fixture(scope="module")
def devices(cpu: CpuPath) -> dict[str, object]:
    return {"reference": ReferenceDevice(), "cpu": CpuDevice(cpu), "webgpu": WgpuDevice()}


def points() -> np.ndarray:
    """Tiny |x|, both sides of the polynomial's edge at 0.5, a dense sweep of [-3, 3] (0 among them), large |x|."""
    tiny = [1e-30, 1e-8, 3e-6, 1e-3]
    edge = [0.4999, 0.49999997, 0.5, 0.50000006, 0.5001]
    large = [1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 88.0, -20.0, -50.0, -88.0, -104.0, -200.0]
    swept = np.linspace(-3, 3, 6001)
    values = np.concatenate([tiny, np.negative(tiny), edge, np.negative(edge), large, swept])
    return values.astype(np.float32).astype(np.float64)


def run(device: object, fn: Function, inputs: dict[str, np.ndarray], level: Level) -> dict[str, np.ndarray]:
    compiled = asyncio.run(device.compile(lowered(fn, level)))  # type: ignore[attr-defined]
    for name, value in inputs.items():
        compiled.write(name, np.asarray(value, "<f4").tobytes())
    compiled.run()
    return {name: np.frombuffer(compiled.read(name), "<f4").astype(np.float64) for name, _ in fn.outputs}


def bound(device: str, x: np.ndarray) -> np.ndarray:
    """The declared relative bound at each x (module docstring)."""
    if device != "webgpu":
        return np.full(x.shape, POLYNOMIAL_TOL)
    with np.errstate(divide="ignore", invalid="ignore"):
        amplification = np.exp(x) / np.abs(np.expm1(x))
    return np.where(np.abs(x) < 0.5, POLYNOMIAL_TOL, (3 + 2 * np.abs(x)) * ULP * amplification + ULP / 2)


@pytest.mark.parametrize("level", LEVELS, ids=lambda v: v.value)
@pytest.mark.parametrize("device", DEVICES)
def test_expm1_within_its_declared_bound(devices: dict[str, object], device: str, level: Level) -> None:
    xs = points()
    x = input_node("x", Role.DATA, DType.F32, xs.shape)
    got = run(devices[device], Function("expm1", (x,), (("y", make(Op.EXPM1, x)),)), {"x": xs}, level)["y"]
    want = np.expm1(xs)
    nonzero = want != 0
    relative = np.abs(got[nonzero] - want[nonzero]) / np.abs(want[nonzero])
    worst = np.argmax(relative / bound(device, xs[nonzero]))
    assert np.all(relative <= bound(device, xs[nonzero])), (xs[nonzero][worst], relative[worst])
    assert np.all(got[xs == 0] == 0)
    assert np.all(got[xs <= -20] == -1.0)
    tiny = np.abs(xs) <= 1e-8  # where float32 exp(x) - 1 gives 0: correctly rounded here
    assert np.all(got[tiny & nonzero] == want[tiny & nonzero].astype(np.float32))


@pytest.mark.parametrize("level", LEVELS, ids=lambda v: v.value)
@pytest.mark.parametrize("device", DEVICES)
def test_expm1_gradient_is_exp(devices: dict[str, object], device: str, level: Level) -> None:
    rng = np.random.default_rng(7)
    values = {name: rng.uniform(-3, 3, (5, 33)).astype(np.float32).astype(np.float64) for name in ("x", "g")}
    x, g = (input_node(name, Role.DATA, DType.F32, (5, 33)) for name in ("x", "g"))
    (gx,) = VJP[Op.EXPM1](make(Op.EXPM1, x), g, (True,))
    assert gx is not None
    got = run(devices[device], Function("expm1 gradient", (x, g), (("gx", gx),)), values, level)["gx"]
    want = (np.exp(values["x"]) * values["g"]).ravel()
    assert np.max(np.abs(got - want)) <= TOLERANCE["default"] * max(1.0, float(np.max(np.abs(want))))
