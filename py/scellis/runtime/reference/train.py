"""Whole training runs on the reference device: init, epochs of steps, evaluation. The oracle that
device runs are compared with; CPython only. The step's outputs feed the next step's inputs:
`param/<p>` -> `<p>`, `state/<s>` -> `<s>`."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from scellis.ir.function import Function, input_name, input_role
from scellis.ops import DType
from scellis.ops.defs import Role
from scellis.rng import RngState, position_substream, substream_key
from scellis.runtime.reference.oracle import philox, run


@dataclass
class TrainState:
    """Everything a step reads besides the batch: parameters, states, and the RNG state."""

    values: dict[str, np.ndarray] = field(default_factory=dict)
    rng: RngState = field(default_factory=lambda: RngState(0))

    @property
    def seed(self) -> int:
        return self.rng.seed


def positions(fn: Function, state: TrainState) -> dict[str, np.ndarray]:
    """The position inputs of `fn` for its next call (without using them up)."""
    out = {}
    for node in fn.inputs:
        substream = position_substream(input_name(node))
        if substream is not None:
            out[input_name(node)] = np.array(state.rng.peek(substream), dtype=np.uint32)
    return out


def keys(fn: Function, seed: int) -> dict[str, np.ndarray]:
    """The key input of every substream `fn` draws from."""
    out = {}
    for node in fn.inputs:
        if input_role(node) is Role.RNG:
            name = input_name(node)
            out[name] = np.array(substream_key(seed, name.removeprefix("rng.")), dtype=np.uint32)
    return out


def initial_state(init: Function, step_fn: Function, seed: int, float_dtype: type = np.float64) -> TrainState:
    """Parameters and states from `init`, optimizer state zero, for training with `step_fn`."""
    values = run(init, keys(init, seed), float_dtype)
    state = TrainState({name.split("/", 1)[1]: value for name, value in values.items()}, RngState(seed))
    state.rng.take("init")
    for node in step_fn.inputs:
        name = input_name(node)
        if input_role(node) is Role.STATE and name not in state.values:
            state.values[name] = np.zeros(node.shape, dtype=np.int32 if node.dtype is DType.I32 else float_dtype)
    return state


def example_inputs(
    fn: Function,
    init: Function,
    seed: int,
    classes: int = 10,
    float_dtype: type = np.float64,
    *,
    pretrained: dict[str, np.ndarray] | None = None,
) -> dict[str, np.ndarray]:
    """Every input of one call of the training step `fn`: parameters and state from `init` (and the
    pretrained ones, which init leaves to the host, from `pretrained`), RNG keys and positions, and a random
    batch from `seed` (floats uniform in [0, 1); integers, such as classes, tokens or example indices, in
    [0, classes))."""
    state = initial_state(init, fn, seed, float_dtype)
    r = np.random.default_rng(seed)
    values = {**keys(fn, seed), **positions(fn, state)}
    for node in fn.inputs:
        name, role = input_name(node), input_role(node)
        if role in (Role.PARAM, Role.STATE):
            values[name] = state.values[name] if name in state.values else (pretrained or {})[name]
        elif role in (Role.DATA, Role.LABEL, Role.DATASET):
            values[name] = (
                r.integers(0, classes, node.shape) if node.dtype is DType.I32 else r.uniform(0, 1, node.shape)
            )
    return values


def permutation(n: int, seed: int, epoch: int) -> np.ndarray:
    """`scellis.rng.permutation`, vectorised: argsort of Philox draws of the `shuffle` substream."""
    i = np.arange(n, dtype=np.uint64)
    words = philox([i, np.zeros_like(i), np.full_like(i, epoch), np.zeros_like(i)], substream_key(seed, "shuffle"))
    return np.argsort(words[0], kind="stable")


def batches(features: np.ndarray, labels: np.ndarray, size: int, seed: int, epoch: int) -> Iterator[tuple]:
    """Full batches of one epoch in shuffled order (a last partial batch is left out)."""
    order = permutation(len(features), seed, epoch)
    for start in range(0, len(order) - size + 1, size):
        chosen = order[start : start + size]
        yield features[chosen], labels[chosen]


def step(fn: Function, state: TrainState, data: dict[str, np.ndarray], float_dtype: type = np.float64) -> dict:
    """One training step; updates `state` in place and returns the step's other outputs (loss, metrics, lr)."""
    inputs = {**data, **keys(fn, state.seed), **positions(fn, state)}
    for node in fn.inputs:
        name = input_name(node)
        if input_role(node) in (Role.PARAM, Role.STATE):
            inputs[name] = state.values[name]
        substream = position_substream(name)
        if substream is not None:
            state.rng.take(substream)
    outputs = run(fn, inputs, float_dtype)
    report = {}
    for name, value in outputs.items():
        kind, _, target = name.partition("/")
        if kind in ("param", "state"):
            state.values[target] = value
        else:
            report[name] = value
    return report


def evaluate(fn: Function, state: TrainState, data: dict[str, np.ndarray], float_dtype: type = np.float64) -> dict:
    """Loss and metrics of the evaluation function on `data` (the eval batch size must match)."""
    inputs = {name: state.values[name] for name in (input_name(n) for n in fn.inputs) if name in state.values}
    return run(fn, {**inputs, **data}, float_dtype)
