"""The reference device runs kernel schedules in float64; on whole programs it must agree with the IR
reference to the rounding of the float32 wire format (outputs are read as float32). That checks the
lowering (fusion, views, epilogues, carry) independently of any GPU or WebAssembly code."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from scellis.examples import digits_cnn, digits_mlp
from scellis.levels import Level
from scellis.pipeline import compile_program
from scellis.plan import lowered
from scellis.runtime.reference import train as rt
from scellis.runtime.reference.device import WIRE, ReferenceDevice
from scellis.runtime.reference.oracle import run


def transformer() -> dict:
    from scellis.graph import Program

    p = Program("block")
    tokens, y = p.input("tokens", [6], dtype="int32"), p.input("y", [], dtype="int32", role="labels")
    x = p.embedding(tokens, 11, 8)
    q = p.permute(p.reshape(p.linear(p.layer_norm(x), 8), [6, 2, 4]), [1, 0, 2])
    k = p.permute(p.reshape(p.linear(x, 8), [6, 2, 4]), [1, 2, 0])
    attended = p.matmul(p.softmax(p.mul(p.matmul(q, k), p.constant(0.5)), -1), q)
    x = p.add(x, p.reshape(p.permute(attended, [1, 0, 2]), [6, 8]))
    logits = p.linear(p.mean(p.gelu(x), [1]), 3)
    p.set_loss(p.cross_entropy(logits, y))
    p.set_loop(epochs=1, batch_size=5)
    return p.to_json()


@pytest.mark.parametrize("program", [digits_mlp(), digits_cnn(), transformer()], ids=["mlp", "cnn", "transformer"])
def test_schedule_on_the_reference_device_equals_the_ir(program: dict) -> None:
    compiled = compile_program(program)
    fn = compiled.step
    # the device's wire format is float32: give both sides the same float32-representable inputs
    given = rt.example_inputs(fn, compiled.init, 4, classes=3)
    inputs = {k: np.asarray(v).astype(WIRE[fn.input(k).dtype]) for k, v in given.items()}
    want = run(fn, inputs)
    device = asyncio.run(ReferenceDevice().compile(lowered(fn, Level.PROD)))
    for name, value in inputs.items():
        device.write(name, value.tobytes())
    device.run()
    for name, node in fn.outputs:
        got = np.frombuffer(device.read(name), WIRE[node.dtype]).reshape(node.shape)
        expected = want[name].astype(WIRE[node.dtype])
        np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-7, err_msg=name)


def test_reference_device_trains_like_the_others() -> None:
    import asyncio

    from scellis.datasets import digits_csv, read_digits
    from scellis.session import Session

    train, test = read_digits(digits_csv().read_bytes())
    session = Session(digits_mlp(), ReferenceDevice(), seed=1, level=Level.DEBUG, eval_batch=test.n)
    results = asyncio.run(session.fit(train, test, epochs=3))
    assert results[-1].metrics["metric/accuracy"] > 0.85
