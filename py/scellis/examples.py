"""Example programs, built with the same builder users have: the app opens them, tests and benchmarks
compile them."""

from __future__ import annotations

import math
from typing import Any

from scellis.datasets import CHARS_CONTEXT
from scellis.graph import Program, Ref
from scellis.ir import Function
from scellis.ops import DType, Op, const, make
from scellis.ops.defs import Distribution, RandomArg, Role
from scellis.ops.node import input_node


def digits_mlp() -> dict[str, Any]:
    """scikit-learn's 8x8 digits: 64 -> 128 (ReLU) -> 10, cross-entropy, Adam, batch 64."""
    p = Program("digits-mlp")
    x = p.input("pixels", [64])
    y = p.input("digit", [], dtype="int32", role="labels")
    logits = p.linear(p.relu(p.linear(x, 128, id="hidden"), id="relu"), 10, id="logits")
    p.set_loss(p.cross_entropy(logits, y, id="loss"))
    p.add_metric(p.accuracy(logits, y, id="accuracy"))
    p.set_optimizer("adam", lr=3e-3)
    p.set_loop(epochs=20, batch_size=64)
    return p.to_json()


def deep_chain(nodes: int, width: int = 32) -> dict[str, Any]:
    """A program of about `nodes` nodes: linear/ReLU pairs between an input and a loss (for benchmarks)."""
    p = Program(f"chain-{nodes}")
    h = p.input("x", [width])
    y = p.input("y", [], dtype="int32", role="labels")
    for _ in range(max(0, (nodes - 4) // 2)):
        h = p.relu(p.linear(h, width))
    logits = p.linear(h, 10)
    p.set_loss(p.cross_entropy(logits, y))
    p.set_loop(epochs=1, batch_size=32)
    return p.to_json()


def mlp(inputs: int, hidden: list[int], classes: int, batch: int) -> dict[str, Any]:
    """A plain ReLU MLP classifier (e.g. 784-512-512-10 for MNIST-sized data), Adam."""
    p = Program(f"mlp-{inputs}-{'-'.join(map(str, hidden))}-{classes}")
    h = p.input("x", [inputs])
    y = p.input("y", [], dtype="int32", role="labels")
    for width in hidden:
        h = p.relu(p.linear(h, width))
    logits = p.linear(h, classes)
    p.set_loss(p.cross_entropy(logits, y))
    p.add_metric(p.accuracy(logits, y))
    p.set_loop(epochs=1, batch_size=batch)
    return p.to_json()


def digits_cnn() -> dict[str, Any]:
    """The digits as 1x8x8 images: two conv / batch-norm / ReLU / max-pool blocks, dropout, Adam."""
    p = Program("digits-cnn")
    x = p.reshape(p.input("pixels", [64]), [1, 8, 8], id="image")
    y = p.input("digit", [], dtype="int32", role="labels")
    for i, channels in enumerate((16, 32), start=1):
        x = p.conv2d(x, channels, 3, padding=1, id=f"conv{i}")
        x = p.max_pool2d(p.relu(p.batch_norm(x, id=f"norm{i}")), 2, id=f"pool{i}")
    h = p.dropout(p.relu(p.linear(p.flatten(x), 64, id="hidden")), 0.25, id="drop")
    logits = p.linear(h, 10, id="logits")
    p.set_loss(p.cross_entropy(logits, y, id="loss"))
    p.add_metric(p.accuracy(logits, y, id="accuracy"))
    p.set_optimizer("adam", lr=3e-3)
    p.set_loop(epochs=20, batch_size=64)
    return p.to_json()


def char_transformer(
    vocab: int = 32, context: int = CHARS_CONTEXT, dim: int = 32, heads: int = 2, batch: int = 32
) -> dict[str, Any]:
    """The next character after `context` characters (the Zen of Python's alphabet has 32): token and
    learned positional embeddings, one pre-norm transformer block (multi-head self-attention over the
    window, a GELU MLP of 4 * dim, residuals), the last position's features to the logits; Adam."""
    if dim % heads:
        raise ValueError(f"heads={heads} must divide dim={dim}")
    width = dim // heads
    p = Program("char-transformer")
    tokens = p.input("context", [context], dtype="int32")
    y = p.input("next", [], dtype="int32", role="labels")
    x = p.add(p.embedding(tokens, vocab, dim, id="embed"), p.parameter([context, dim], id="position"), id="tokens")

    def split_heads(v: Ref, name: str) -> Ref:  # [context, dim] -> [heads, context, width]
        return p.permute(p.reshape(v, [context, heads, width], id=f"{name}_heads"), [1, 0, 2], id=f"{name}_split")

    h = p.layer_norm(x, id="norm1")
    q, k, v = (split_heads(p.linear(h, dim, id=name), name) for name in ("query", "key", "value"))
    scores = p.mul(p.matmul(q, p.permute(k, [0, 2, 1], id="key_t")), p.constant(1 / math.sqrt(width)), id="scores")
    attended = p.matmul(p.softmax(scores, -1, id="attention"), v, id="attended")
    merged = p.reshape(p.permute(attended, [1, 0, 2], id="merge"), [context, dim], id="merged")
    x = p.add(x, p.linear(merged, dim, id="project"), id="residual1")
    hidden = p.gelu(p.linear(p.layer_norm(x, id="norm2"), 4 * dim, id="expand"), id="gelu")
    x = p.add(x, p.linear(hidden, dim, id="contract"), id="residual2")
    last = p.reshape(p.slice(x, [context - 1, 0], [context, dim], id="last"), [dim], id="features")
    logits = p.linear(last, vocab, id="logits")
    p.set_loss(p.cross_entropy(logits, y, id="loss"))
    p.add_metric(p.accuracy(logits, y, id="accuracy"))
    p.set_optimizer("adam", lr=1e-3)
    p.set_loop(epochs=10, batch_size=batch)  # 856 characters of text: more epochs memorise it
    return p.to_json()


def random_draws(n: int, site: int = 3, position: int = 11) -> Function:
    """n uniform float32 draws of a `test` substream (its key is the input `rng.test`), one per element:
    the same bits on every device, which the tests compare by hash."""
    key = input_node("rng.test", Role.RNG, DType.U32, (2,))
    arg = RandomArg(Distribution.UNIFORM, "test", site, (n,))
    return Function("draws", (key,), (("u", make(Op.RANDOM, key, const(position, DType.U32), arg=arg)),))
