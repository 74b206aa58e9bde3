"""NF4, defined once (scellis.ops.nf4): the levels are QLoRA's, each value takes the nearest level, the float16
scale rounds to nearest even (as numpy does) and saturates, the packing's bits are pinned by a known
answer, and the pure-Python definition and the float64 reference's vectorised one give the same words."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import norm

from scellis.ir import Function
from scellis.ops import DType, Op, make, nf4
from scellis.ops import defs as d
from scellis.ops.node import ShapeError, input_node
from scellis.runtime.reference.oracle import run


def test_levels_are_qlora_normal_float_quantiles() -> None:
    """QLoRA's construction: 8 positive and 7 negative quantiles of N(0, 1) at offset 0.9677, normalised to
    [-1, 1], and 0."""
    offset = 0.9677083
    positive = norm.ppf(np.linspace(offset, 0.5, 9)[:-1])
    negative = -norm.ppf(np.linspace(offset, 0.5, 8)[:-1])
    levels = np.sort(np.concatenate([positive, [0.0], negative]))
    levels /= np.max(np.abs(levels))
    assert np.allclose(levels, nf4.LEVELS, atol=1e-6)
    assert list(nf4.MIDPOINTS) == sorted(nf4.MIDPOINTS) and len(nf4.MIDPOINTS) == 15


def test_each_value_takes_the_nearest_level() -> None:
    rng = np.random.default_rng(0)
    w = rng.normal(size=(4, 128)).astype(np.float32)
    got = np.array(nf4.dequantize(nf4.quantize(w.reshape(-1).tolist(), 4, 128), 4, 128)).reshape(4, 128)
    blocks = w.reshape(-1, 64).astype(np.float64)
    absmax = np.abs(blocks).max(axis=1, keepdims=True)
    nearest = np.argmin(np.abs(blocks[:, :, None] / absmax[:, :, None] - np.array(nf4.LEVELS)), axis=2)
    scales = absmax.astype(np.float16).astype(np.float64)
    want = np.array(nf4.LEVELS)[nearest] * scales
    assert np.allclose(got.reshape(-1, 64), want, rtol=0, atol=1e-7)


def test_float16_scales_round_to_nearest_even_and_saturate() -> None:
    rng = np.random.default_rng(1)
    values = np.concatenate([
        np.abs(rng.normal(size=2000)).astype(np.float32) * np.float32(10.0) ** rng.integers(-9, 5, 2000),
        np.float32([0, 2**-24, 2**-25, 2**-25 * 1.5, 2**-14, 2**-14 * (1 - 2**-11), 1 + 2**-11, 1 + 3 * 2**-11,
                    65504, 65519, 65520, 1e30]),
    ]).astype(np.float32)  # fmt: skip
    with np.errstate(over="ignore"):  # beyond float16: inf, which the scale saturates to 65504
        want = np.minimum(values.astype(np.float16).view(np.uint16), nf4.F16_MAX_BITS)
    assert [nf4.f16_bits(float(v)) for v in values] == want.tolist()
    assert all(nf4.f16_value(b) == np.uint16(b).view(np.float16) for b in range(0, 0x7C00, 97))


def test_known_answer_packing() -> None:
    block = [1.0, -1.0, 0.0, 0.5, 0.50167, -0.05, 0.03, 0.9] + [0.0] * 56
    words = nf4.quantize(block * 2, 1, 128)
    # codes 15, 0, 7, 12 (0.5 lies below the midpoint 0.50166 of 0.4407 and 0.5626), 13, 6, 7, 15
    assert words[0] == 0xF76DC70F
    assert words[1:16] == [0x77777777] * 7 + [0xF76DC70F] + [0x77777777] * 7
    assert words[16:] == [0x3C003C00]  # two scales of 1.0 in float16
    assert nf4.words(1, 128) == 17


def test_the_reference_packs_as_the_definition_does() -> None:
    rng = np.random.default_rng(2)
    w = (rng.normal(size=(6, 192)) * rng.uniform(0.001, 3, size=(6, 1))).astype(np.float32)
    w[0, :64] = 0.0  # a block of zeros: absmax 0, every code the level 0
    words = np.array(nf4.quantize(w.reshape(-1).tolist(), 6, 192), dtype=np.uint64)
    x = input_node("w", d.Role.PARAM, DType.F32, (6, 192))
    packed = make(Op.NF4_PACK, x, arg=d.Nf4Arg(6, 192))
    fn = Function("pack", (x,), (("packed", packed), ("back", make(Op.NF4_UNPACK, packed, arg=d.Nf4Arg(6, 192)))))
    out = run(fn, {"w": w.astype(np.float64)})
    assert np.array_equal(np.asarray(out["packed"], dtype=np.uint64), words)
    assert np.array_equal(
        out["back"].astype(np.float32).reshape(-1), np.float32(nf4.dequantize(words.tolist(), 6, 192))
    )
    assert np.all(out["back"][0, :64] == 0.0)


@pytest.mark.parametrize(
    ("op", "arg", "src", "message"),
    [
        (Op.NF4_PACK, d.Nf4Arg(2, 100), (DType.F32, (2, 100)), "100 columns is no whole number of blocks"),
        (Op.NF4_PACK, d.Nf4Arg(2, 64), (DType.F32, (2, 128)), "needs a float32 [2, 64] weight"),
        (Op.NF4_UNPACK, d.Nf4Arg(2, 64), (DType.U32, (18,)), "needs the packed u32 (17,) of a [2, 64] weight"),
    ],
)
def test_shapes_that_do_not_fit_are_named(op: Op, arg: object, src: tuple, message: str) -> None:
    with pytest.raises(ShapeError) as caught:
        make(op, input_node("x", d.Role.PARAM, *src), arg=arg)
    assert message in str(caught.value)


def test_matmul_reads_the_packed_weight_both_ways() -> None:
    rng = np.random.default_rng(3)
    w = rng.normal(size=(3, 64)).astype(np.float32)
    words = np.array(nf4.quantize(w.reshape(-1).tolist(), 3, 64), dtype=np.int64)
    deq = np.array(nf4.dequantize(words.tolist(), 3, 64)).reshape(3, 64)
    packed = input_node("p", d.Role.PARAM, DType.U32, (nf4.words(3, 64),))
    x = input_node("x", d.Role.DATA, DType.F32, (5, 64))
    g = input_node("g", d.Role.DATA, DType.F32, (5, 3))
    forward = make(Op.NF4_MATMUL, x, packed, arg=d.Nf4MatmulArg(3, 64))
    backward = make(Op.NF4_MATMUL, g, packed, arg=d.Nf4MatmulArg(3, 64, transpose=True))
    assert forward.shape == (5, 3) and backward.shape == (5, 64)
    xs, gs = rng.normal(size=(5, 64)), rng.normal(size=(5, 3))
    out = run(Function("mm", (x, g, packed), (("y", forward), ("dx", backward))), {"x": xs, "g": gs, "p": words})
    assert np.allclose(out["y"], xs @ deq.T) and np.allclose(out["dx"], gs @ deq)
    with pytest.raises(ShapeError, match=r"needs x \[\.\.\., 64\]"):
        make(Op.NF4_MATMUL, g, packed, arg=d.Nf4MatmulArg(3, 64))
