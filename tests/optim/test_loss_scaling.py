"""Dynamic loss scaling as IR, run on the reference: a step whose scaled gradients overflow is skipped
(parameters, Adam state and the step counter kept, the scale backed off, the count restarted); finite
steps count and grow the scale at the growth interval (within floor and ceiling); with a finite scale the
scaled step gives the unscaled step's parameters (power-of-two scaling is exact in float32 and float64)."""

from __future__ import annotations

import numpy as np
import pytest
from test_optimizers import SHAPES, quadratic

from scellis.autodiff import grad
from scellis.examples import digits_mlp, mlp
from scellis.graph.settings import LossScaling, Optimizer
from scellis.ir import Function, verify
from scellis.ir.function import input_name
from scellis.levels import Level
from scellis.optim import apply_optimizer
from scellis.optim.loss_scaling import FINITE_STEPS, LOSS_SCALE, SCALED_LOSS, scale_loss
from scellis.optim.optimizers import STEP
from scellis.pipeline import compile_program
from scellis.runtime.reference.oracle import run

ADAM = Optimizer(kind="adam", lr=0.01)


def scaled_step(opt: Optimizer, settings: LossScaling) -> Function:
    fn = apply_optimizer(grad(scale_loss(quadratic()), SCALED_LOSS, list(SHAPES)), opt, list(SHAPES), settings)
    verify(fn)
    return fn


def start(fn: Function, loss_scale: float, count: int, float_dtype: type = np.float64) -> dict[str, np.ndarray]:
    """Parameters, targets and optimizer state (Adam's moments non-zero, as after some steps)."""
    rng = np.random.default_rng(1)
    values: dict[str, np.ndarray] = {}
    for k, shape in SHAPES.items():
        values[k] = rng.standard_normal(shape).astype(float_dtype)
        values[f"t{k}"] = rng.standard_normal(shape).astype(float_dtype)
    for node in fn.inputs:
        if input_name(node).startswith(("opt.m/", "opt.v/", "opt.velocity/")):
            values[input_name(node)] = np.abs(rng.standard_normal(node.shape)).astype(float_dtype)
    values[STEP] = np.array(7, np.int32)
    values[LOSS_SCALE] = np.array(loss_scale, float_dtype)
    values[FINITE_STEPS] = np.array(count, np.int32)
    return values


def advance(fn: Function, values: dict[str, np.ndarray], float_dtype: type = np.float64) -> dict[str, np.ndarray]:
    """One step: the outputs, and `values` updated from param/ and state/ outputs."""
    with np.errstate(over="ignore", invalid="ignore"):
        out = run(fn, values, float_dtype)
    for name, value in out.items():
        kind, _, target = name.partition("/")
        if kind in ("param", "state"):
            values[target] = value
    return out


def test_an_overflowing_step_is_skipped_and_backs_off() -> None:
    fn = scaled_step(ADAM, LossScaling())
    values = start(fn, 2.0**126, count=5, float_dtype=np.float32)
    values["tw"][0, 0] = values["w"][0, 0] - 8  # a gradient of 8 * 2**126 overflows float32
    before = {k: v.copy() for k, v in values.items()}
    out = advance(fn, values, np.float32)
    assert np.isinf(out["loss_scaled"])
    for name in ("w", "b", "opt.m/w", "opt.v/w", "opt.m/b", "opt.v/b"):
        np.testing.assert_array_equal(values[name], before[name], err_msg=name)
    assert int(values[STEP]) == 7
    assert float(values[LOSS_SCALE]) == 2.0**125 and float(out["loss_scale"]) == 2.0**126
    assert int(values[FINITE_STEPS]) == 0


def test_a_nan_step_is_skipped_and_the_scale_stays_above_the_floor() -> None:
    fn = scaled_step(ADAM, LossScaling(floor=4.0))
    values = start(fn, 4.0, count=3)
    values["tw"][1, 2] = np.nan
    before = {k: v.copy() for k, v in values.items()}
    advance(fn, values)
    np.testing.assert_array_equal(values["b"], before["b"])  # b's gradient is finite: skipped all the same
    assert float(values[LOSS_SCALE]) == 4.0 and int(values[FINITE_STEPS]) == 0 and int(values[STEP]) == 7


def test_finite_steps_count_and_grow_the_scale_at_the_interval() -> None:
    fn = scaled_step(ADAM, LossScaling(growth_interval=3, ceiling=2.0**12))
    values = start(fn, 2.0**10, count=0)
    seen = []
    for _ in range(8):
        before_w = values["w"].copy()
        advance(fn, values)
        assert not np.array_equal(values["w"], before_w)  # finite steps update
        seen.append((float(values[LOSS_SCALE]), int(values[FINITE_STEPS])))
    grown, top = 2.0**11, 2.0**12
    expected = [(2.0**10, 1), (2.0**10, 2), (grown, 0), (grown, 1), (grown, 2), (top, 0), (top, 1), (top, 2)]
    assert seen == expected
    assert int(values[STEP]) == 7 + 8
    advance(fn, values)
    assert float(values[LOSS_SCALE]) == top  # the ceiling holds


@pytest.mark.parametrize(
    "opt",
    [ADAM, Optimizer(kind="momentum", lr=0.05, weight_decay=0.01, clip_norm=0.5), Optimizer(kind="adamw", lr=0.01)],
    ids=["adam", "momentum-wd-clip", "adamw"],
)
@pytest.mark.parametrize("float_dtype", [np.float32, np.float64], ids=["f32", "f64"])
def test_a_finite_scale_gives_the_unscaled_step(opt: Optimizer, float_dtype: type) -> None:
    scaled = scaled_step(opt, LossScaling())
    plain = apply_optimizer(grad(quadratic(), "loss", list(SHAPES)), opt, list(SHAPES))
    values = start(scaled, 2.0**15, count=0, float_dtype=float_dtype)
    reference = {input_name(n): values[input_name(n)] for n in plain.inputs}
    for _ in range(3):
        out = advance(scaled, values, float_dtype)
        want = advance(plain, reference, float_dtype)
        assert float(out["loss"]) == float(want["loss"])  # the reported loss is unscaled
    for name, want_value in reference.items():
        # multiplying by a power of two is exact in binary floating point, so the results are identical
        np.testing.assert_array_equal(values[name], want_value, err_msg=name)


def test_fast_scales_its_loss_only_where_it_runs_float16_kernels() -> None:
    f16 = frozenset({"shader-f16"})
    small = compile_program(digits_mlp())  # no matmul large enough for the float16 tiles
    for level in Level:
        assert small.at(level, f16).step is small.step and small.at(level, f16).init is small.init
    assert small.at(Level.FAST, f16).key == small.at(Level.PROD).key
    compiled = compile_program(mlp(64, [1026, 1026], 10, 512))
    assert compiled.at(Level.FAST, f16).scales_loss
    assert not any(compiled.at(level, frozenset()).scales_loss for level in Level)  # no shader-f16: prod's kernels
    assert compiled.at(Level.PROD, f16).step is compiled.step
    fast = compiled.at(Level.FAST, f16).step
    assert fast.has_input(LOSS_SCALE) and fast.has_input(FINITE_STEPS) and not compiled.step.has_input(LOSS_SCALE)
    names = {name for name, _ in fast.outputs}
    assert {f"state/{LOSS_SCALE}", f"state/{FINITE_STEPS}", "loss_scale", "loss"} <= names
    init = run(compiled.at(Level.FAST, f16).init, {"rng.init": np.array([1, 2], np.uint32)})
    assert float(init[f"state/{LOSS_SCALE}"]) == 2.0**15 and int(init[f"state/{FINITE_STEPS}"]) == 0
