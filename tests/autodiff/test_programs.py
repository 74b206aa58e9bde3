"""Whole programs: gradients of the compiled backward IR against central finite differences (float64),
for an MLP, a small CNN, a transformer block and the character transformer example; and a digits MLP
trained on the reference."""

from __future__ import annotations

import numpy as np
import pytest

from scellis.examples import char_transformer
from scellis.graph import Program, Ref
from scellis.ir.function import input_name, input_role
from scellis.ops.defs import Role
from scellis.pipeline import Compiled, compile_program
from scellis.runtime.reference import train as rt
from scellis.runtime.reference.oracle import run

BATCH = 3


def finish(p: Program, logits: Ref, labels: Ref) -> dict:
    p.set_loss(p.cross_entropy(logits, labels))
    p.add_metric(p.accuracy(logits, labels))
    p.set_loop(epochs=1, batch_size=BATCH)
    return p.to_json()


def mlp() -> dict:
    p = Program("mlp")
    x, y = p.input("x", [6]), p.input("y", [], dtype="int32", role="labels")
    h = p.dropout(p.gelu(p.linear(x, 8), approximate="none"), 0.25)
    h = p.layer_norm(p.tanh(p.linear(h, 7)))
    return finish(p, p.linear(h, 4), y)


def cnn() -> dict:
    p = Program("cnn")
    x, y = p.input("x", [3, 8, 8]), p.input("y", [], dtype="int32", role="labels")
    h = p.max_pool2d(p.relu(p.batch_norm(p.conv2d(x, 4, 3, padding=1))), 2)
    h = p.avg_pool2d(p.leaky_relu(p.conv2d(h, 4, 3, padding=1, groups=2, dilation=1)), 2, padding=0)
    return finish(p, p.linear(p.flatten(h), 5), y)


def augmented() -> dict:
    """Augmentations between trainable layers: the gradient flows back through the crop and the flip."""
    p = Program("augmented")
    x, y = p.input("x", [2, 6, 5]), p.input("y", [], dtype="int32", role="labels")
    h = p.tanh(p.conv2d(p.gaussian_noise(x, std=0.3), 3, 3, padding=1))
    h = p.random_flip(p.random_crop(h, padding=[2, 1]), p=0.5)
    return finish(p, p.linear(p.flatten(h), 4), y)


def transformer() -> dict:
    """Embedding, pre-norm self-attention with two heads, a GELU MLP, residuals, mean pooling."""
    t, dim, heads = 5, 8, 2
    p = Program("transformer")
    tokens, y = p.input("tokens", [t], dtype="int32"), p.input("y", [], dtype="int32", role="labels")
    x = p.embedding(tokens, 11, dim)
    h = p.layer_norm(x)

    def split(v: Ref) -> Ref:  # [B, T, D] -> [B, H, T, D/H]
        return p.permute(p.reshape(v, [t, heads, dim // heads]), [1, 0, 2])

    q, k, v = (split(p.linear(h, dim)) for _ in range(3))
    scores = p.mul(p.matmul(q, p.permute(k, [0, 2, 1])), p.constant(1 / np.sqrt(dim // heads)))
    attended = p.matmul(p.softmax(scores, -1), v)
    merged = p.reshape(p.permute(attended, [1, 0, 2]), [t, dim])
    x = p.add(x, p.linear(merged, dim))
    x = p.add(x, p.linear(p.gelu(p.linear(p.layer_norm(x), 16)), dim))
    return finish(p, p.linear(p.mean(x, [1]), 3), y)


def char_block() -> dict:
    """The character transformer example, shrunk: a learned positional parameter, four heads, the last
    position sliced out."""
    return char_transformer(vocab=11, context=5, dim=8, heads=4, batch=BATCH)


def random_inputs(compiled: Compiled, rng: np.random.Generator) -> dict:
    values = {}
    state = rt.initial_state(compiled.init, compiled.step, seed=7)
    for node in compiled.backward.inputs:
        name, role = input_name(node), input_role(node)
        if role is Role.LABEL:
            values[name] = rng.integers(0, 3, node.shape)
        elif role is Role.DATA and node.dtype.value == "int32":
            values[name] = rng.integers(0, 11, node.shape)
        elif role is Role.DATA:
            values[name] = rng.standard_normal(node.shape)
        elif role in (Role.PARAM, Role.STATE):
            values[name] = state.values[name] + 0.1 * rng.standard_normal(node.shape)
        elif role is Role.RNG:
            values[name] = rt.keys(compiled.backward, 7)[name]
        else:
            values[name] = np.array(3, dtype=np.uint32)
    return values


@pytest.mark.parametrize("build", [mlp, cnn, augmented, transformer, char_block], ids=lambda f: f.__name__)
def test_program_gradients_match_finite_differences(build) -> None:
    compiled = compile_program(build())
    rng = np.random.default_rng(0)
    inputs = random_inputs(compiled, rng)
    grads = run(compiled.backward, inputs)
    forward = compiled.forward.fn
    checked = 0
    for name in compiled.forward.trainable:
        analytic = grads[f"grad/{name}"]
        assert analytic.shape == inputs[name].shape
        for flat in rng.choice(analytic.size, size=min(4, analytic.size), replace=False):
            index = np.unravel_index(flat, analytic.shape)
            eps = 1e-6
            plus, minus = inputs[name].copy(), inputs[name].copy()
            plus[index] += eps
            minus[index] -= eps
            numeric = (run(forward, {**inputs, name: plus})["loss"] - run(forward, {**inputs, name: minus})["loss"]) / (
                2 * eps
            )
            assert analytic[index] == pytest.approx(numeric, rel=1e-4, abs=1e-7), (name, index)
            checked += 1
    assert checked >= 4 * 3


def test_digits_mlp_reaches_95_percent_on_the_reference() -> None:
    """scikit-learn's digits, 64-128-10, Adam, batch 64, float32 on the reference executor."""
    from sklearn.datasets import load_digits

    features, labels = load_digits(return_X_y=True)
    order = np.random.default_rng(0).permutation(len(features))
    features, labels = features[order] / 16.0, labels[order]
    train_x, train_y, test_x, test_y = features[:1400], labels[:1400], features[1400:], labels[1400:]
    p = Program("digits-mlp")
    x, y = p.input("x", [64]), p.input("y", [], dtype="int32", role="labels")
    logits = p.linear(p.relu(p.linear(x, 128)), 10)
    p.set_loss(p.cross_entropy(logits, y))
    p.add_metric(p.accuracy(logits, y))
    p.set_optimizer("adam", lr=2e-3)
    p.set_loop(epochs=12, batch_size=64)
    compiled = compile_program(p.to_json(), eval_batch=len(test_x))
    state = rt.initial_state(compiled.init, compiled.step, seed=1, float_dtype=np.float32)
    for epoch in range(12):
        for xb, yb in rt.batches(train_x, train_y, 64, 1, epoch):
            rt.step(compiled.step, state, {"x": xb, "y": yb}, np.float32)
    result = rt.evaluate(compiled.evaluate, state, {"x": test_x, "y": test_y}, np.float32)
    assert float(result["metric/accuracy1"]) >= 0.95
    assert float(result["loss"]) < 0.3


def test_frozen_parts_get_no_gradient_work() -> None:
    """With the first layer frozen, nothing flows back into it: no d(hidden) is ever computed."""

    def two_layers(trainable: bool) -> Compiled:
        p = Program("frozen")
        x, y = p.input("x", [6]), p.input("y", [], dtype="int32", role="labels")
        h = p.relu(p.linear(x, 8, id="first", trainable=trainable))
        p.set_loss(p.cross_entropy(p.linear(h, 3, id="second"), y))
        return compile_program(p.to_json())

    frozen, free = two_layers(False), two_layers(True)
    assert frozen.forward.trainable == ("second.weight", "second.bias")
    grads = [name for name, _ in frozen.backward.outputs if name.startswith("grad/")]
    assert grads == ["grad/second.weight", "grad/second.bias"]
    back_into_hidden = [
        n for n in frozen.backward.nodes() if n.op.value == "matmul" and getattr(n.arg, "transpose_b", False)
    ]
    assert back_into_hidden == []
    assert len(frozen.backward.nodes()) < len(free.backward.nodes())
    assert "opt.m/first.weight" not in {input_name(n) for n in frozen.step.inputs}
