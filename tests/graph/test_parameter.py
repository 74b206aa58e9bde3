"""The `parameter` op: a learned tensor of its own shape, shared by every example of a batch (it
broadcasts over the batch axis), initialised as its `init` and `scale` say, frozen when not trainable."""

from __future__ import annotations

import numpy as np
import pytest

from scellis.graph import Program, ProgramError
from scellis.pipeline import Compiled, compile_program
from scellis.runtime.reference import train as rt
from scellis.runtime.reference.oracle import run

BATCH = 4


def summed(shape: list[int], **params: object) -> Compiled:
    """loss = sum over the batch of (x + parameter): sum(x) + BATCH * sum(parameter)."""
    p = Program("learned")
    x = p.input("x", shape)
    p.set_loss(p.sum(p.add(x, p.parameter(shape, id="bias", **params))))
    p.set_loop(epochs=1, batch_size=BATCH)
    return compile_program(p.to_json())


def test_a_parameter_is_added_to_every_example_and_learns_from_all_of_them() -> None:
    compiled = summed([2, 3], init="ones")
    state = rt.initial_state(compiled.init, compiled.step, seed=3)
    np.testing.assert_array_equal(state.values["bias.value"], np.ones((2, 3)))
    x = np.arange(BATCH * 6, dtype=np.float64).reshape(BATCH, 2, 3)
    out = run(compiled.backward, {"x": x, "bias.value": state.values["bias.value"]})
    assert float(out["loss"]) == x.sum() + BATCH * 6
    np.testing.assert_array_equal(out["grad/bias.value"], np.full((2, 3), float(BATCH)))


@pytest.mark.parametrize("init", ["normal", "uniform", "zeros"])
def test_a_parameter_starts_as_its_init_says(init: str) -> None:
    compiled = summed([64, 64], init=init, scale=0.5)
    value = rt.initial_state(compiled.init, compiled.step, seed=3).values["bias.value"]
    assert value.shape == (64, 64)
    if init == "normal":
        assert abs(value.std() - 0.5) < 0.03 and abs(value.mean()) < 0.03
    elif init == "uniform":
        assert -0.5 <= value.min() < -0.45 and 0.45 < value.max() <= 0.5
    else:
        assert not value.any()


def test_a_frozen_parameter_gets_no_gradient() -> None:
    assert "bias.value" in summed([3]).forward.trainable
    frozen = summed([3], trainable=False)
    assert "bias.value" not in frozen.forward.trainable
    assert "grad/bias.value" not in dict(frozen.backward.outputs)


def test_a_parameter_needs_positive_sizes() -> None:
    p = Program("bad")
    p.set_loss(p.sum(p.add(p.input("x", [2]), p.parameter([2, 0], id="bias"))))
    with pytest.raises(ProgramError, match="at least 1"):
        p.validate()
