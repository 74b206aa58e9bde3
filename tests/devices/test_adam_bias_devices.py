"""Adam's and AdamW's bias corrections and updates on every device (the reference device, the CPU path under
wasmtime, WGSL on lavapipe) at every level, against a float64 Adam written out here (not the reference).

The corrections 1 - beta1^t and 1 - beta2^t (optim.optimizers.bias_corrections, compiled as a function of
the step counter) within CORRECTION_TOL relative, for t = 1..5 and t = 1000. The update (p - p_new) / lr
of apply_optimizer's step on loss = sum(w * c) (gradient c, exact) within UPDATE_TOL relative, for five
consecutive steps from a zero state (m, v and the counter carried on the device) and for one step at
t = 1000 (the counter given as 999, with m and v given). lr is 1 and each step gets fresh parameters with
|p| < 2**-6 (only AdamW's decay reads them), so the float32 rounding of p_new is ~6e-8 of the update.
Measured (bench/adam_bias.py): corrections within 8e-8, updates within 3.2e-7, on each device.
"""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from scellis.autodiff import grad
from scellis.graph.settings import Optimizer
from scellis.ir import Function
from scellis.levels import Level
from scellis.lower import lower
from scellis.ops import DType
from scellis.ops.build import cast, mul, total
from scellis.ops.defs import Role
from scellis.ops.node import input_node
from scellis.optim import apply_optimizer
from scellis.optim.optimizers import STEP, bias_corrections
from scellis.plan import lowered, planned
from scellis.runtime.cpu.device import CpuDevice
from scellis.runtime.cpu.module import CpuPath
from scellis.runtime.reference.device import ReferenceDevice
from scellis.runtime.webgpu.native import WgpuDevice

DEVICES = ["reference", "cpu", "webgpu"]
LEVELS = list(Level)
OPTIMIZERS = [Optimizer(kind="adam", lr=1.0), Optimizer(kind="adamw", lr=1.0, weight_decay=0.01)]
CORRECTION_TOL, UPDATE_TOL = 1e-6, 1e-5
SHAPE = (64,)


@pytest.fixture(scope="module")
def devices(cpu: CpuPath) -> dict[str, object]:
    return {"reference": ReferenceDevice(), "cpu": CpuDevice(cpu), "webgpu": WgpuDevice()}


def adam64(opt: Optimizer, p: np.ndarray, g: np.ndarray, *, m: np.ndarray, v: np.ndarray, t: int) -> tuple:
    """Step t (from 1) of Adam, or AdamW, in float64: the update (p - p_new) / lr, and the new m and v."""
    m = opt.beta1 * m + (1 - opt.beta1) * g
    v = opt.beta2 * v + (1 - opt.beta2) * g * g
    m_hat, v_hat = m / (1 - opt.beta1**t), v / (1 - opt.beta2**t)
    update = m_hat / (np.sqrt(v_hat) + opt.eps)
    if opt.kind == "adamw":
        update = update + opt.weight_decay * p
    return update, m, v


def f32(x: np.ndarray) -> np.ndarray:
    return np.asarray(x, np.float32).astype(np.float64)


@pytest.mark.parametrize("level", LEVELS, ids=lambda v: v.value)
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("opt", OPTIMIZERS, ids=lambda o: o.kind)
def test_bias_corrections(devices: dict[str, object], device: str, level: Level, opt: Optimizer) -> None:
    step = input_node(STEP, Role.STATE, DType.I32, ())
    c1, c2 = bias_corrections(opt, cast(step, DType.F32))
    fn = Function("corrections", (step,), (("c1", c1), ("c2", c2)))
    compiled = asyncio.run(devices[device].compile(lowered(fn, level)))  # type: ignore[attr-defined]
    for counter in (0, 1, 2, 3, 4, 999):
        compiled.write(STEP, np.int32(counter).tobytes())
        compiled.run()
        for name, beta in (("c1", opt.beta1), ("c2", opt.beta2)):
            got = float(np.frombuffer(compiled.read(name), "<f4")[0])
            want = 1 - beta ** (counter + 1)
            assert abs(got - want) <= CORRECTION_TOL * want, (name, counter + 1, got, want)


def step_function(opt: Optimizer) -> Function:
    w, c = input_node("w", Role.PARAM, DType.F32, SHAPE), input_node("c", Role.DATA, DType.F32, SHAPE)
    fn = Function("linear.train", (w, c), (("loss", total(mul(w, c))),))
    return apply_optimizer(grad(fn, "loss", ["w"]), opt, ["w"])


def check_updates(compiled: object, opt: Optimizer, *, first: int, m: np.ndarray, v: np.ndarray, steps: int) -> None:
    """Run `steps` steps from counter `first`, the device holding m and v; each update within UPDATE_TOL
    of adam64's. Each element's gradients keep one sign (m's, where m is not 0), so m stays away from 0."""
    rng = np.random.default_rng(first)
    sign = np.where(m != 0, np.sign(m), rng.choice([-1.0, 1.0], SHAPE))
    for t in range(first + 1, first + steps + 1):
        p, g = f32(rng.uniform(-(2**-6), 2**-6, SHAPE)), f32(sign * rng.uniform(0.5, 2.0, SHAPE))
        compiled.write("w", p.astype("<f4").tobytes())  # type: ignore[attr-defined]
        compiled.write("c", g.astype("<f4").tobytes())  # type: ignore[attr-defined]
        compiled.run()  # type: ignore[attr-defined]
        p_new = np.frombuffer(compiled.read("param/w"), "<f4").astype(np.float64)  # type: ignore[attr-defined]
        want, m, v = adam64(opt, p, g, m=m, v=v, t=t)
        relative = np.abs((p - p_new) / opt.lr - want) / np.abs(want)
        assert relative.max() <= UPDATE_TOL, (t, relative.max())
    assert int(np.frombuffer(compiled.read(f"state/{STEP}"), "<i4")[0]) == first + steps  # type: ignore[attr-defined]


@pytest.mark.parametrize("level", LEVELS, ids=lambda v: v.value)
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("opt", OPTIMIZERS, ids=lambda o: o.kind)
def test_updates(devices: dict[str, object], device: str, level: Level, opt: Optimizer) -> None:
    schedule = lower(step_function(opt), level)
    fresh = asyncio.run(devices[device].compile(planned(schedule)))  # type: ignore[attr-defined]
    zeros = np.zeros(SHAPE)
    for name in ("opt.m/w", "opt.v/w"):
        fresh.write(name, zeros.astype("<f4").tobytes())
    fresh.write(STEP, np.int32(0).tobytes())
    check_updates(fresh, opt, first=0, m=zeros, v=zeros, steps=5)
    late = asyncio.run(devices[device].compile(planned(schedule)))  # type: ignore[attr-defined]
    rng = np.random.default_rng(1000)
    m = f32(rng.choice([-1.0, 1.0], SHAPE) * rng.uniform(0.5, 1.5, SHAPE))
    v = f32(m * m * rng.uniform(1.0, 3.0, SHAPE))
    late.write("opt.m/w", m.astype("<f4").tobytes())
    late.write("opt.v/w", v.astype("<f4").tobytes())
    late.write(STEP, np.int32(999).tobytes())
    check_updates(late, opt, first=999, m=m, v=v, steps=1)
