"""Whole training steps on lavapipe: the digits MLP's compiled step, 20 steps, against the reference
executor in float32 from the same initial parameters and batches.

Declared tolerances. Momentum SGD: every parameter within 2e-5 and every loss within 1e-5 relative.
Adam: every parameter within 3e-7 and every loss within 5e-7 relative (7.5e-8 and 1.4e-7 measured:
the bias corrections are expm1s of a float64 log on both sides; with WGSL's float32 pow in them, 1.2 %
of the weights were 2e-4 off, some by ~lr).
"""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
from sklearn.datasets import load_digits
from wgpu_harness import DEVICE_DTYPES

from scellis.examples import digits_mlp
from scellis.ir.function import input_name, input_role
from scellis.levels import Level
from scellis.ops.defs import Role
from scellis.pipeline import compile_program
from scellis.plan import lowered
from scellis.runtime.reference import train as rt
from scellis.runtime.webgpu.native import WgpuDevice

STEPS = 20


def train_both(optimizer: dict) -> tuple[list[tuple[float, float]], dict, rt.TrainState, object]:
    features, labels = load_digits(return_X_y=True)
    program = digits_mlp()
    program["optimizer"] = optimizer
    compiled = compile_program(program)
    fn = compiled.step
    reference = rt.initial_state(compiled.init, fn, seed=3, float_dtype=np.float32)
    device = asyncio.run(WgpuDevice().compile(lowered(fn, Level.PROD)))
    for node in fn.inputs:
        if input_role(node) in (Role.PARAM, Role.STATE):
            name = input_name(node)
            device.write(name, reference.values[name].astype(DEVICE_DTYPES[node.dtype]).tobytes())
    losses = []
    for xb, yb in list(rt.batches(features / 16.0, labels, 64, 3, 0))[:STEPS]:
        batch = {"pixels": xb, "digit": yb}
        for name, value in batch.items():
            device.write(name, value.astype(DEVICE_DTYPES[fn.input(name).dtype]).tobytes())
        device.run()
        out = rt.step(fn, reference, batch, np.float32)
        losses.append((float(np.frombuffer(device.read("loss"), "<f4")[0]), float(out["loss"])))
    params = {
        input_name(n): np.frombuffer(device.read(f"param/{input_name(n)}"), "<f4").reshape(n.shape)
        for n in fn.inputs
        if input_role(n) is Role.PARAM
    }
    assert int(np.frombuffer(device.read("state/opt.step"), "<i4")[0]) == STEPS
    return losses, params, reference, fn


def test_momentum_steps_match_the_reference() -> None:
    losses, params, reference, _ = train_both({"kind": "momentum", "lr": 0.05, "momentum": 0.9})
    for got, want in losses:
        assert got == pytest.approx(want, rel=1e-5)
    assert losses[-1][1] < 0.8 * losses[0][1]  # it trains
    for name, got in params.items():
        np.testing.assert_allclose(got, reference.values[name], rtol=0, atol=2e-5)


def test_adam_steps_match_the_reference() -> None:
    losses, params, reference, _ = train_both({"kind": "adam", "lr": 3e-3})
    for got, want in losses:
        assert got == pytest.approx(want, rel=5e-7)
    for name, got in params.items():
        np.testing.assert_allclose(got, reference.values[name], rtol=0, atol=3e-7, err_msg=name)
