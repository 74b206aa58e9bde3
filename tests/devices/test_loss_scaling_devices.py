"""Dynamic loss scaling on devices (level fast).

The scaling logic on the CPU path (wasmtime) and WGSL (lavapipe): a quadratic's Adam step at scales near
float32's limit, where some steps overflow, gives the reference's sequence of skipped and applied steps,
scales and counts exactly, and its parameters within ADAM_TOL. A 64-1024-1024-10 MLP at batch 512 on
lavapipe (which has shader-f16: its large matmuls, backward ones included, run the float16 tiles) takes
three fast steps within FAST_TOL of the float64 reference (losses within LOSS_TOL); and a Session at fast
reports the loss scale.
"""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
from sklearn.datasets import load_digits
from wgpu_harness import DEVICE_DTYPES

from scellis.autodiff import grad
from scellis.datasets import digits_csv, read_digits
from scellis.examples import digits_mlp, mlp
from scellis.graph.settings import LossScaling, Optimizer
from scellis.ir import Function
from scellis.ir.function import input_name, input_role
from scellis.levels import Level
from scellis.lower import lower
from scellis.ops import DType, const
from scellis.ops.build import mul, sub, total
from scellis.ops.defs import Role
from scellis.ops.node import input_node
from scellis.optim import apply_optimizer
from scellis.optim.loss_scaling import FINITE_STEPS, LOSS_SCALE, SCALED_LOSS, scale_loss
from scellis.optim.optimizers import STEP
from scellis.pipeline import compile_program
from scellis.plan import lowered, planned
from scellis.runtime.cpu.device import CpuDevice
from scellis.runtime.cpu.module import CpuPath
from scellis.runtime.reference import train as rt
from scellis.runtime.reference.oracle import run
from scellis.runtime.webgpu.native import WgpuDevice
from scellis.session import Session

# |device - numpy float32| of each parameter: 2.4e-7 measured on lavapipe, 0 on the CPU path (the bias
# corrections are expm1s of a float64 log; WGSL's float32 pow put 7.6e-5 here before)
ADAM_TOL = 1e-6
# |device - reference| of each parameter after three SGD steps at lr 0.05 with float16 operands (5.7e-6
# measured on lavapipe, parameters up to 0.13), and the relative error of each loss (1.5e-6 measured)
FAST_TOL, LOSS_TOL = 5e-5, 2e-5
SHAPE = (4, 8)


@pytest.fixture(scope="module")
def devices(cpu: CpuPath) -> dict[str, object]:
    return {"cpu": CpuDevice(cpu), "webgpu": WgpuDevice()}


def quadratic_step() -> Function:
    """Adam on loss = 0.5 sum((w - t)^2) with loss scaling: growth every two finite steps, no ceiling below."""
    w, t = input_node("w", Role.PARAM, DType.F32, SHAPE), input_node("t", Role.DATA, DType.F32, SHAPE)
    diff = sub(w, t)
    fn = Function("quadratic.train", (w, t), (("loss", mul(total(mul(diff, diff)), const(0.5))),))
    backward = grad(scale_loss(fn), SCALED_LOSS, ["w"])
    settings = LossScaling(growth_interval=2, ceiling=2.0**127)
    return apply_optimizer(backward, Optimizer(kind="adam", lr=0.5), ["w"], settings)


def read(compiled: object, fn: Function, name: str) -> np.ndarray:
    node = fn.output(name)
    raw = compiled.read(name)  # type: ignore[attr-defined]
    return np.frombuffer(raw, dtype=DEVICE_DTYPES[node.dtype])[: node.size].reshape(node.shape)


@pytest.mark.parametrize("device", ["cpu", "webgpu"])
def test_skips_backoff_and_growth_follow_the_reference(devices: dict[str, object], device: str) -> None:
    fn = quadratic_step()
    rng = np.random.default_rng(4)
    t = rng.standard_normal(SHAPE).astype(np.float32)
    values = {"w": t + rng.standard_normal(SHAPE).astype(np.float32), "t": t}
    values["w"][0, 0] = t[0, 0] + 100  # a gradient of 100 * scale: overflows at 2**122, not at 2**121
    for node in fn.inputs:
        if input_name(node).startswith("opt."):
            values[input_name(node)] = np.zeros(node.shape, DEVICE_DTYPES[node.dtype])
    values[LOSS_SCALE] = np.array(2.0**122, np.float32)
    compiled = asyncio.run(devices[device].compile(lowered(fn, Level.FAST)))  # type: ignore[attr-defined]
    for name, value in values.items():
        compiled.write(name, value.astype(DEVICE_DTYPES[fn.input(name).dtype]).tobytes())
    seen, expected = [], []
    for _ in range(6):
        compiled.run()
        with np.errstate(over="ignore", invalid="ignore"):
            out = run(fn, values, np.float32)
        values.update({name.split("/", 1)[1]: v for name, v in out.items() if name.startswith(("param/", "state/"))})
        expected.append(tuple(float(values[n]) for n in (LOSS_SCALE, FINITE_STEPS, STEP)))
        seen.append(tuple(float(read(compiled, fn, f"state/{n}")[()]) for n in (LOSS_SCALE, FINITE_STEPS, STEP)))
        np.testing.assert_allclose(read(compiled, fn, "param/w"), values["w"], rtol=0, atol=ADAM_TOL)
    assert seen == expected
    steps = [s for _, _, s in expected]
    assert steps[0] == 0 and 0 < steps[-1] < 6  # some steps were skipped and some applied
    assert max(s for s, _, _ in expected) == 2.0**122 and min(s for s, _, _ in expected) == 2.0**121


LARGE = [1026, 1026]  # hidden layers of a width not a multiple of 4: products not read as vec4 take float16 tiles


def mlp_step() -> tuple[Function, Function]:
    program = mlp(64, LARGE, 10, 512)
    program["optimizer"] = {"kind": "sgd", "lr": 0.05}
    compiled = compile_program(program)
    f16 = frozenset({"shader-f16"})
    return compiled.at(Level.FAST, f16).step, compiled.at(Level.FAST, f16).init


def test_fast_mlp_steps_on_lavapipe_match_the_reference() -> None:
    device = WgpuDevice()
    assert "shader-f16" in device.features
    fn, init = mlp_step()
    schedule = lower(fn, Level.FAST, device.features)
    # the products of 512 x 1026 by 1026 x 1026, which cannot be read as vec4 (products that can take the
    # float32 pipelined tiles or blocks, which outrun float16 ones: lower.variants.choose); thin ones dot
    assert sum("f16" in k.variant for k in schedule.kernels) >= 1
    reference = rt.initial_state(init, fn, seed=2)
    compiled = asyncio.run(device.compile(planned(schedule)))
    for node in fn.inputs:
        if input_role(node) in (Role.PARAM, Role.STATE):
            value = reference.values[input_name(node)]
            compiled.write(input_name(node), value.astype(DEVICE_DTYPES[node.dtype]).tobytes())
    features, labels = load_digits(return_X_y=True)
    for xb, yb in list(rt.batches(features / 16.0, labels, 512, 2, 0))[:3]:
        batch = {"x": xb, "y": yb}
        for name, value in batch.items():
            compiled.write(name, value.astype(DEVICE_DTYPES[fn.input(name).dtype]).tobytes())
        compiled.run()
        want = rt.step(fn, reference, batch)
        assert float(read(compiled, fn, "loss")[()]) == pytest.approx(float(want["loss"]), rel=LOSS_TOL)
        assert float(read(compiled, fn, "loss_scale")[()]) == 2.0**15
    for node in fn.inputs:
        if input_role(node) is Role.PARAM:
            got = read(compiled, fn, f"param/{input_name(node)}")
            np.testing.assert_allclose(got, reference.values[input_name(node)], rtol=0, atol=FAST_TOL)
    state = [float(read(compiled, fn, f"state/{n}")[()]) for n in (LOSS_SCALE, FINITE_STEPS, STEP)]
    assert state == [2.0**15, 3, 3]


@pytest.mark.parametrize("device", ["cpu", "webgpu"])
def test_a_fast_session_scales_its_loss_only_with_float16_kernels(devices: dict[str, object], device: str) -> None:
    """A fast session of the digits MLP runs no float16 kernel (its matmuls are too small), so it runs
    prod's step and reports no scale; a fast session of a large MLP on lavapipe (shader-f16) scales."""
    train, test = read_digits(digits_csv().read_bytes())
    small = Session(digits_mlp(), devices[device], seed=1, level=Level.FAST, eval_batch=test.n)  # type: ignore[arg-type]
    assert asyncio.run(small.fit(train, test, epochs=1))[0].loss_scale is None
    if device == "cpu":
        return
    program = mlp(64, LARGE, 10, 512)
    large = Session(program, devices[device], seed=1, level=Level.FAST, eval_batch=test.n)  # type: ignore[arg-type]
    results = asyncio.run(large.fit(train, test, epochs=1))
    assert [r.loss_scale for r in results] == [2.0**15]  # 2 finite steps: no skip, no growth yet
    assert np.isfinite(results[-1].loss)
