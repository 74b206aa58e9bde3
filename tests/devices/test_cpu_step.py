"""Whole training steps on the CPU path against the float64 reference: the digits MLP, a small CNN
(conv, both pools, batch norm, layer norm, GELU, dropout) and a program of indexing and movement ops
(embedding, concat, slice, permute, MSE), 20 Adam steps each from the same initial values, batches and
RNG positions; the CPU path's carry copies feed each step's parameters and
optimizer state to the next, the reference's `step` does the same in float64.

Declared tolerance after 20 steps (float32 against float64): every parameter and optimizer state within
2e-7 + 1e-5 |ref|, every step's loss within 3e-7 relative (measured: a quarter of that bound at most, and
7.2e-8; when the bias corrections were a float32 pow, values were up to 1.9e-6 off and losses 2.5e-6)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
from cpu_run import DEVICE, from_device, to_device

from scellis.examples import digits_mlp
from scellis.graph import Program
from scellis.ir.function import Function, input_name, input_role
from scellis.levels import Level
from scellis.ops.defs import Role
from scellis.pipeline import compile_program
from scellis.plan import lowered
from scellis.runtime.cpu.device import CompiledCpu, compile_schedule
from scellis.runtime.cpu.module import CpuPath
from scellis.runtime.reference import train as rt

STEPS = 20


def small_cnn() -> dict:
    p = Program("digits-cnn")
    x = p.input("pixels", [1, 8, 8])
    y = p.input("digit", [], dtype="int32", role="labels")
    h = p.max_pool2d(p.relu(p.conv2d(x, out_channels=6, kernel=3, padding=1, id="conv1")), kernel=2)
    # No bias before batch norm: its gradient is zero up to rounding, which Adam would amplify to
    # +-lr steps of noise on either device.
    h = p.conv2d(h, out_channels=8, kernel=3, padding=1, groups=2, bias=False, id="conv2")
    h = p.flatten(p.avg_pool2d(p.batch_norm(h, id="bn"), kernel=2))
    h = p.dropout(p.gelu(p.layer_norm(p.linear(h, 24, id="hidden"), id="ln")), p=0.25)
    logits = p.linear(h, 10, id="logits")
    p.set_loss(p.cross_entropy(logits, y, id="loss"))
    p.add_metric(p.accuracy(logits, y, id="accuracy"))
    p.set_optimizer("adam", lr=1e-3)
    p.set_loop(epochs=1, batch_size=16)
    return p.to_json()


def mixed_ops() -> dict:
    p = Program("mixed-ops")
    tokens, feats = p.input("tokens", [6], dtype="int32"), p.input("feats", [4, 5])
    rows = p.concat([p.embedding(tokens, num_embeddings=13, dim=5, id="emb"), p.leaky_relu(feats)], axis=1)
    picked = p.permute(p.slice(rows, starts=[1, 0], stops=[10, 5], steps=[2, 1]), perm=[1, 0])
    h = p.sigmoid(p.flatten(p.layer_norm(p.tanh(picked), id="ln")))
    out = p.linear(p.gelu(p.linear(h, 7, id="l1"), approximate="none"), 3, id="l2")
    p.set_loss(p.mse(out, p.input("target", [3]), id="loss"))
    p.set_optimizer("adam", lr=1e-2)
    p.set_loop(epochs=1, batch_size=8)
    return p.to_json()


# Each data input's values: digit-like pixels 0..16, class labels, token ids, or normal features.
DATA = {
    "pixels": lambda r, shape: r.integers(0, 17, shape).astype(np.float32),
    "digit": lambda r, shape: r.integers(0, 10, shape).astype(np.int32),
    "tokens": lambda r, shape: r.integers(0, 13, shape).astype(np.int32),
    "feats": lambda r, shape: r.standard_normal(shape).astype(np.float32),
    "target": lambda r, shape: r.standard_normal(shape).astype(np.float32),
}


def batches(fn: Function, seed: int) -> Iterator[dict[str, np.ndarray]]:
    r = np.random.default_rng(seed)
    data = [n for n in fn.inputs if input_role(n) in (Role.DATA, Role.LABEL)]
    while True:
        yield {input_name(n): DATA[input_name(n)](r, n.shape) for n in data}


def load_state(device: CompiledCpu, fn: Function, state: rt.TrainState) -> None:
    for node in fn.inputs:
        name = input_name(node)
        if input_role(node) in (Role.PARAM, Role.STATE):
            device.write(name, to_device(state.values[name], node.dtype))
    for name, key in rt.keys(fn, state.seed).items():
        device.write(name, key.tobytes())


@pytest.mark.parametrize("program", [digits_mlp, small_cnn, mixed_ops], ids=lambda f: f.__name__)
def test_training_steps_match_the_reference(cpu: CpuPath, program) -> None:
    compiled = compile_program(program())
    fn = compiled.step
    device = compile_schedule(cpu, lowered(fn, Level.PROD))
    state = rt.initial_state(compiled.init, fn, seed=5)
    load_state(device, fn, state)
    data = batches(fn, 11)
    for _ in range(STEPS):
        batch = next(data)
        for name, value in batch.items():
            device.write(name, to_device(value, fn.input(name).dtype))
        for name, value in rt.positions(fn, state).items():
            device.write(name, to_device(value, fn.input(name).dtype))
        device.run()
        report = rt.step(fn, state, batch)
        loss = from_device(device.read("loss"), fn.output("loss"))
        assert abs(float(loss) - float(report["loss"])) <= 3e-7 * abs(float(report["loss"]))
    checked = 0
    for node in fn.inputs:
        name = input_name(node)
        if input_role(node) in (Role.PARAM, Role.STATE):
            got = np.frombuffer(device.read(name), DEVICE[node.dtype]).reshape(node.shape)
            ref = state.values[name]
            assert np.all(np.abs(got - ref) <= 2e-7 + 1e-5 * np.abs(ref)), name
            checked += 1
    assert checked == len(fn.inputs_with(Role.PARAM)) + len(fn.inputs_with(Role.STATE))
    assert int(np.frombuffer(device.read("opt.step"), np.int32)[0]) == STEPS
