"""Activation checkpointing (autodiff.checkpoint): the same gradients on the float64 reference for the digits
MLP, the digits CNN (dropout, batch norm) and a deep chain; where the forward is cut; copies instead of
kept activations; running statistics updated once; the backward walking the segments from the loss back;
and lower planned bytes."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from scellis.autodiff import grad
from scellis.autodiff.checkpoint import ordered_like, segments
from scellis.examples import char_transformer, deep_chain, digits_cnn, digits_mlp, mlp
from scellis.ir import Function, verify
from scellis.ir.function import toposort
from scellis.levels import Level
from scellis.ops import Op
from scellis.pipeline import Compiled, compile_program
from scellis.plan.remedies import apply
from scellis.runtime.reference import train as rt
from scellis.runtime.reference.oracle import run

PROGRAMS: dict[str, Callable[[], dict[str, Any]]] = {
    "digits MLP": digits_mlp,
    "digits CNN": digits_cnn,
    "deep chain": lambda: deep_chain(40),
    "char transformer": char_transformer,
}
KEPT = "activations kept for backward"


def both(data: dict[str, Any]) -> tuple[Compiled, Compiled]:
    return compile_program(apply(data, {"checkpoint": False})), compile_program(apply(data, {"checkpoint": True}))


def inputs(fn: Function, init: Function, seed: int) -> dict[str, np.ndarray]:
    """Initial parameters and states, a batch of random data, RNG keys and positions for `fn` (classes and
    tokens below 10: every example has at least 10)."""
    return rt.example_inputs(fn, init, seed)


def forward_ids(compiled: Compiled) -> set[int]:
    return {id(n) for n in compiled.forward.fn.nodes()}


@pytest.mark.parametrize("name", PROGRAMS)
def test_gradients_equal_on_the_reference(name: str) -> None:
    plain, cut = both(PROGRAMS[name]())
    pairs = {
        "backward": (plain.backward, cut.backward, plain.init),
        "scaled backward": (plain.loss_scaled.backward, cut.loss_scaled.backward, plain.loss_scaled.init),
        "step": (plain.step, cut.step, plain.init),
    }
    for attr, (a, b, init) in pairs.items():
        verify(b)
        values = inputs(a, init, seed=3)
        want, got = run(a, values), run(b, values)
        assert list(got) == list(want)
        for output in want:  # the same float64 operations in the same order: equal, not just close
            np.testing.assert_array_equal(got[output], want[output], err_msg=f"{attr} {output}")


def test_the_backward_reads_copies_and_state_is_updated_once() -> None:
    plain, cut = both(digits_cnn())
    own = forward_ids(cut)
    added = [n for n in cut.backward.nodes() if id(n) not in own]
    assert len(added) > len(plain.backward.nodes()) - len(forward_ids(plain))  # the recomputation
    draws = [n for n in cut.backward.nodes() if n.op is Op.RANDOM]
    assert len(draws) == 2 and draws[0].arg == draws[1].arg and draws[0].src == draws[1].src  # the mask, redrawn
    read = {id(s) for n in added for s in n.src}
    assert not any(id(d) in read for d in draws if id(d) in own)  # no backward node keeps the forward's mask
    for name, node in cut.forward.fn.outputs:  # loss, metric, running statistics: the forward's own nodes
        assert cut.backward.output(name) is node and cut.step.output(name) is node
    convs = [n for n in cut.backward.nodes() if n.op is Op.CONV2D]
    assert len(convs) > sum(n.op is Op.CONV2D for n in cut.forward.fn.nodes())  # conv1 runs again


def test_a_deep_chain_is_cut_into_about_sqrt_n_even_segments() -> None:
    compiled = compile_program(deep_chain(40))
    fn = compiled.forward.fn
    cut = segments(fn, grad(fn, "loss", compiled.forward.trainable), "loss")
    at = [cut.order.index(b) for b in cut.boundaries]
    assert 4 <= cut.count <= 8  # 18 layers, 2 activations each that the backward reads
    assert len({b - a for a, b in itertools.pairwise(at)}) == 1  # equal layers between boundaries
    assert all(b.op is Op.RELU for b in cut.boundaries)
    recomputed = [n for n in cut.order if id(n) in cut.recomputed]
    assert recomputed and max(cut.order.index(n) for n in recomputed) < at[-1]  # the last segment is kept


def test_segments_are_recomputed_from_the_loss_back() -> None:
    """The first backward node to read each boundary comes later the earlier the boundary: the segment
    nearest the loss is recomputed first, and each one only when the backward reaches it."""
    compiled = compile_program(apply(deep_chain(40), {"checkpoint": True}))
    step, fwd = compiled.step, compiled.forward.fn
    cut = segments(fwd, grad(fwd, "loss", compiled.forward.trainable), "loss")
    order = step.nodes()
    own = forward_ids(compiled)
    loss_at = order.index(fwd.output("loss"))
    first_read = []
    for boundary in cut.boundaries:
        readers = [i for i, n in enumerate(order) if id(n) not in own and any(s is boundary for s in n.src)]
        first_read.append(min(readers))
    assert loss_at < min(first_read)
    assert first_read == sorted(first_read, reverse=True)


def test_every_step_is_ordered_from_the_loss_back_and_clipping_keeps_its_values() -> None:
    data = deep_chain(12)
    data["optimizer"] = {"kind": "sgd", "lr": 0.1, "clip_norm": 1.0}
    plain, cut = both(data)
    assert plain.step.first and plain.backward.first and cut.step.first and cut.backward.first
    assert plain.forward.fn.first == () and plain.evaluate.first == ()  # only training steps are ordered
    values = inputs(plain.step, plain.init, seed=5)
    want, got = run(plain.step, values), run(cut.step, values)
    for name in want:
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)


def test_ordered_like_puts_each_output_after_the_last_node_it_needs() -> None:
    compiled = compile_program(apply(digits_mlp(), {"checkpoint": True}))
    step, backward = compiled.step, compiled.backward
    again = ordered_like(step, backward)
    assert again.first == step.first
    position = {id(n): i for i, n in enumerate(step.first)}
    for p in compiled.forward.trainable:
        g = backward.output(f"grad/{p}")
        update = step.output(f"param/{p}")
        assert position[id(g)] < position[id(update)]
        assert id(g) in {id(n) for n in toposort([update])}


@pytest.mark.parametrize(
    "data", [deep_chain(40), mlp(784, [512] * 6, 10, 256), digits_cnn()], ids=["deep chain", "MLP 6x512", "digits CNN"]
)
def test_checkpointing_plans_fewer_bytes(data: dict[str, Any]) -> None:
    plain, cut = (c.at(Level.PROD, frozenset()).plan for c in both(data))
    assert cut.step.bytes[KEPT] < plain.step.bytes[KEPT]
    assert cut.total < plain.total
    assert cut.functions[0].kernels > plain.functions[0].kernels  # the recomputation's price
