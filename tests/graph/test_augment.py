"""The augmentation ops of the catalog: the identity in evaluation; in training, draws from the `augment`
substream only, by the documented recipes (checked against scellis.rng in pure Python), independent of
every other substream and repeating for one seed and position."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from scellis import rng as srng
from scellis.graph import CATALOG, Program, ProgramError, validate
from scellis.graph.building import Builder, Mode
from scellis.graph.params import check
from scellis.ir import Function
from scellis.ir.from_program import forward
from scellis.ops import DType, Op
from scellis.ops.defs import Role
from scellis.runtime.reference import train as rt
from scellis.runtime.reference.oracle import run

AUGMENTATIONS = ("random_crop", "random_flip", "gaussian_noise")
SEED, POSITION = 11, 6


def lowered(op: str, mode: Mode, shape: tuple[int, ...], **params: Any) -> Function:
    """`op` applied to a batch input x of `shape` (batch axis first), as its builder makes it."""
    spec = CATALOG[op]
    values = {p.name: check(p, params.get(p.name, p.default))[0] for p in spec.params}
    ctx = Builder(shape[0], mode)
    out = spec.build(ctx, op, values, {"x": ctx.data("x", Role.DATA, DType.F32, shape[1:])})
    return Function(op, tuple(ctx.inputs), (("out", out),))


def augmented(fn: Function, x: np.ndarray, seed: int = SEED, position: int = POSITION) -> np.ndarray:
    inputs = {"x": x, **rt.keys(fn, seed), "rng.augment.position": np.array(position, np.uint32)}
    return run(fn, inputs)["out"]


@pytest.mark.parametrize("op", AUGMENTATIONS)
def test_evaluation_leaves_the_input_as_it_is(op: str) -> None:
    fn = lowered(op, Mode.EVAL, (3, 2, 5, 4))
    assert fn.outputs[0][1] is fn.inputs[0] and len(fn.inputs) == 1


@pytest.mark.parametrize("op", AUGMENTATIONS)
def test_training_draws_from_the_augment_substream_only(op: str) -> None:
    fn = lowered(op, Mode.TRAIN, (16, 2, 5, 4))
    assert {n.arg.name for n in fn.inputs} == {"x", "rng.augment", "rng.augment.position"}  # type: ignore[attr-defined]
    draws = [n for n in fn.nodes() if n.op is Op.RANDOM]
    assert draws and all(n.arg.substream == "augment" for n in draws)  # type: ignore[attr-defined]
    assert len({n.arg.site for n in draws}) == len(draws), "every draw has a site of its own"  # type: ignore[attr-defined]
    x = np.random.default_rng(0).standard_normal((16, 2, 5, 4))
    first = augmented(fn, x)
    np.testing.assert_array_equal(first, augmented(fn, x))
    assert not np.array_equal(first, augmented(fn, x, position=POSITION + 1))
    assert not np.array_equal(first, augmented(fn, x, seed=SEED + 1))


@pytest.mark.parametrize("op", AUGMENTATIONS)
def test_nothing_to_draw_is_the_identity_in_training_too(op: str) -> None:
    params = {"random_crop": {"padding": 0}, "random_flip": {"p": 0.0}, "gaussian_noise": {"std": 0.0}}[op]
    fn = lowered(op, Mode.TRAIN, (3, 2, 5, 4), **params)
    assert fn.outputs[0][1] is fn.inputs[0]


def test_random_crop_shifts_each_example_by_integer_draws() -> None:
    """Example n is shifted by (integer(2 py + 1) - py, integer(2 px + 1) - px), drawn at sites 0 and 1."""
    batch, (py, px) = 40, (2, 1)
    fn = lowered("random_crop", Mode.TRAIN, (batch, 3, 5, 4), padding=[py, px])
    x = np.random.default_rng(1).standard_normal((batch, 3, 5, 4))
    out = augmented(fn, x)
    key = srng.substream_key(SEED, "augment")
    seen = set()
    for n in range(batch):
        sy = srng.integer(2 * py + 1, srng.counter(n, 0, POSITION), key) - py
        sx = srng.integer(2 * px + 1, srng.counter(n, 1, POSITION), key) - px
        seen.add((sy, sx))
        padded = np.pad(x[n], ((0, 0), (py, py), (px, px)))  # torchvision's pad-and-crop
        np.testing.assert_array_equal(out[n], padded[:, py + sy : py + sy + 5, px + sx : px + sx + 4])
    assert len(seen) == (2 * py + 1) * (2 * px + 1), "every shift turns up"


def test_random_flip_mirrors_each_example_with_probability_p() -> None:
    batch, p = 4000, 0.3
    fn = lowered("random_flip", Mode.TRAIN, (batch, 1, 3), p=p)
    x = np.tile(np.arange(3.0), (batch, 1, 1))
    out = augmented(fn, x)
    key = srng.substream_key(SEED, "augment")
    u = np.array([srng.uniform(srng.philox4x32(srng.counter(n, 0, POSITION), key)[0]) for n in range(batch)])
    flipped = out[:, 0, 0] == 2.0
    np.testing.assert_array_equal(flipped, u >= 1 - p)
    np.testing.assert_array_equal(out[flipped], x[flipped][..., ::-1])
    np.testing.assert_array_equal(out[~flipped], x[~flipped])
    assert abs(flipped.mean() - p) < 0.03  # 4 standard deviations
    always = lowered("random_flip", Mode.TRAIN, (batch, 1, 3), p=1.0)
    np.testing.assert_array_equal(augmented(always, x), x[..., ::-1])


def test_gaussian_noise_adds_std_times_normal_draws() -> None:
    std = 0.25
    fn = lowered("gaussian_noise", Mode.TRAIN, (50, 40), std=std)
    x = np.random.default_rng(2).standard_normal((50, 40))
    noise = (augmented(fn, x) - x) / std
    assert abs(noise.mean()) < 0.06 and abs(noise.std() - 1) < 0.05
    shift = augmented(fn, x + 1.0) - augmented(fn, x)
    np.testing.assert_allclose(shift, 1.0, atol=1e-12)  # the same draws, whatever the input


def augmented_program() -> dict:
    """The loss depends on the augmentations only; the metric on a dropout only."""
    p = Program("augmented")
    x, t = p.input("x", [2, 6, 5]), p.input("t", [2, 6, 5], role="labels")
    h = p.gaussian_noise(p.random_flip(p.random_crop(x, padding=2)), std=0.5)
    p.set_loss(p.mse(h, t))
    p.add_metric(p.mean(p.dropout(x, 0.5)))
    p.set_loop(epochs=1, batch_size=3)
    return p.to_json()


def test_other_substreams_do_not_move_the_augmentations() -> None:
    fn = forward(validate(augmented_program()), Mode.TRAIN).fn
    rng = np.random.default_rng(3)
    data = {"x": rng.standard_normal((3, 2, 6, 5)), "t": rng.standard_normal((3, 2, 6, 5))}
    positions = {"rng.augment.position": np.array(4, np.uint32), "rng.dropout.position": np.array(4, np.uint32)}
    base = run(fn, {**data, **rt.keys(fn, SEED), **positions})
    other = {
        **rt.keys(fn, SEED),
        "rng.dropout": rt.keys(fn, SEED + 1)["rng.dropout"],
        "rng.dropout.position": np.array(9, np.uint32),
    }
    moved = run(fn, {**data, **positions, **other})
    assert moved["loss"] == base["loss"]
    assert moved["metric/mean1"] != base["metric/mean1"], "the dropout did draw anew"
    later = run(fn, {**data, **rt.keys(fn, SEED), **positions, "rng.augment.position": np.array(5, np.uint32)})
    assert later["loss"] != base["loss"] and later["metric/mean1"] == base["metric/mean1"]


def test_evaluation_needs_no_random_inputs() -> None:
    fn = forward(validate(augmented_program()), Mode.EVAL).fn
    assert not [n for n in fn.nodes() if n.op in (Op.RANDOM, Op.SHIFT2D, Op.FLIP_LAST)]
    assert {n.arg.name for n in fn.inputs} == {"x", "t"}  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("op", "shape", "message"),
    [
        ("random_crop", [5], "random_crop shifts the last two axes (height, width) of each example, got (64, 5)"),
        ("random_flip", [], "random_flip reverses the last axis of each example, got (64,)"),
    ],
)
def test_too_few_axes_are_reported_at_the_input_port(op: str, shape: list[int], message: str) -> None:
    p = Program()
    p.set_loss(p.sum(p.node(op, p.input("x", shape), id="aug")))
    with pytest.raises(ProgramError) as caught:
        validate(p.to_json())
    [issue] = caught.value.issues
    assert (issue.node, issue.port, issue.message) == ("aug", "x", message)


def test_padding_beyond_what_int32_draws_hold_is_refused() -> None:
    p = Program()
    p.set_loss(p.sum(p.random_crop(p.input("x", [1, 4, 4]), padding=2**30, id="crop")))
    with pytest.raises(ProgramError, match="must be at most 1073741823"):
        validate(p.to_json())
