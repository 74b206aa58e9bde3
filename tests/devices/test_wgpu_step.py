"""Whole training steps on lavapipe: the digits MLP's compiled step, 20 Adam steps, against the
reference executor from the same initial parameters and batches (float32 device vs float64 oracle;
declared tolerance: parameters within 2e-4 absolute, losses within 1e-4 relative)."""

from __future__ import annotations

import numpy as np
from sklearn.datasets import load_digits
from wgpu_harness import DEVICE_DTYPES

from scellis.examples import digits_mlp
from scellis.ir.function import input_name, input_role
from scellis.lower import lower
from scellis.ops.defs import Role
from scellis.pipeline import compile_program
from scellis.runtime import reference_train as rt
from scellis.runtime.wgpu_native import WgpuDevice

STEPS = 20


def test_digits_mlp_steps_match_the_reference() -> None:
    features, labels = load_digits(return_X_y=True)
    features = features / 16.0
    compiled = compile_program(digits_mlp())
    fn = compiled.step
    reference = rt.initial_state(compiled.init, fn, seed=3)
    device = WgpuDevice().compile(lower(fn))
    for node in fn.inputs:
        if input_role(node) in (Role.PARAM, Role.STATE):
            name = input_name(node)
            device.write(name, reference.values[name].astype(DEVICE_DTYPES[node.dtype]).tobytes())
    losses = []
    for xb, yb in list(rt.batches(features, labels, 64, 3, 0))[:STEPS]:
        batch = {"pixels": xb, "digit": yb}
        for name, value in batch.items():
            device.write(name, value.astype(DEVICE_DTYPES[fn.input(name).dtype]).tobytes())
        device.run()
        out = rt.step(fn, reference, batch)
        losses.append((np.frombuffer(device.read("loss"), "<f4")[0], float(out["loss"])))
    for got, want in losses:
        assert abs(got - want) <= 1e-4 * abs(want)
    assert losses[-1][1] < losses[0][1]  # it trains
    for node in fn.inputs:
        if input_role(node) is Role.PARAM:
            name = input_name(node)
            got = np.frombuffer(device.read(f"param/{name}"), "<f4").reshape(node.shape)
            np.testing.assert_allclose(got, reference.values[name], rtol=0, atol=2e-4)
    assert int(np.frombuffer(device.read("state/opt.step"), "<i4")[0]) == STEPS
