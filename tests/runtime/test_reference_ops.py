"""The reference executor's less obvious ops against naive loop implementations, and its input checks."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scellis import rng as srng
from scellis.ir import Function
from scellis.ops import DType, Node, Op, make
from scellis.ops import defs as d
from scellis.ops.indices import IndexRangeError
from scellis.ops.node import input_node
from scellis.runtime.reference.oracle import ReferenceInputError, run

SETTINGS = settings(max_examples=25, deadline=None, derandomize=True, database=None)


def ir_dtype(value: np.ndarray) -> DType:
    return {"f": DType.F32, "i": DType.I32, "u": DType.U32, "b": DType.BOOL}[value.dtype.kind]


def inputs_for(*arrays: np.ndarray) -> tuple[list[Node], dict[str, np.ndarray]]:
    nodes = [input_node(f"x{i}", d.Role.DATA, ir_dtype(a), a.shape) for i, a in enumerate(arrays)]
    return nodes, {f"x{i}": a for i, a in enumerate(arrays)}


def run_op(op: Op, *arrays: np.ndarray, arg: object = None, float_dtype: type = np.float64) -> np.ndarray:
    """One op applied to input arrays, run by the reference."""
    nodes, feed = inputs_for(*arrays)
    fn = Function("t", tuple(nodes), (("y", make(op, *nodes, arg=arg)),))
    return run(fn, feed, float_dtype)["y"]


def out_size(size: int, kernel: int, stride: int, pad: int, dilation: int = 1) -> int:
    """How many window positions fit: starts 0, stride, ... with the last tap inside the padded input."""
    return len(range(0, size + 2 * pad - dilation * (kernel - 1), stride))


# -- convolution ------------------------------------------------------------------------------------


def naive_conv2d(x: np.ndarray, w: np.ndarray, arg: d.ConvArg) -> np.ndarray:
    n, _, h, wd = x.shape
    o, cg, kh, kw = w.shape
    (sh, sw), (ph, pw), (dh, dw) = arg.stride, arg.padding, arg.dilation
    oh, ow = out_size(h, kh, sh, ph, dh), out_size(wd, kw, sw, pw, dw)
    out = np.zeros((n, o, oh, ow))
    for b, oc, i, j in np.ndindex(out.shape):
        group = oc // (o // arg.groups)
        for ci, a, c in np.ndindex(cg, kh, kw):
            hi, wj = i * sh - ph + a * dh, j * sw - pw + c * dw
            if 0 <= hi < h and 0 <= wj < wd:
                out[b, oc, i, j] += x[b, group * cg + ci, hi, wj] * w[oc, ci, a, c]
    return out


def conv_case(data: st.DataObject) -> tuple[d.ConvArg, np.ndarray, np.ndarray]:
    groups, per_in, per_out, n = (data.draw(st.integers(1, 2)) for _ in range(4))
    kernel = (data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3)))
    stride = (data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3)))
    padding = (data.draw(st.integers(0, 2)), data.draw(st.integers(0, 2)))
    dilation = (data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3)))
    size = [
        max(1, dl * (k - 1) + 1 - 2 * p) + data.draw(st.integers(0, 4))
        for k, p, dl in zip(kernel, padding, dilation, strict=True)
    ]
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    x = rng.standard_normal((n, groups * per_in, *size))
    w = rng.standard_normal((groups * per_out, per_in, *kernel))
    return d.ConvArg(stride, padding, dilation, groups), x, w


@SETTINGS
@given(data=st.data())
def test_conv2d_matches_the_loop(data: st.DataObject) -> None:
    arg, x, w = conv_case(data)
    np.testing.assert_allclose(run_op(Op.CONV2D, x, w, arg=arg), naive_conv2d(x, w, arg), rtol=1e-12, atol=1e-12)


def test_conv2d_groups_keep_channels_apart() -> None:
    x = np.zeros((1, 4, 3, 3))
    x[0, 2] = 1.0  # only the second group's first channel is non-zero
    w = np.ones((2, 2, 1, 1))
    y = run_op(Op.CONV2D, x, w, arg=d.ConvArg((1, 1), (0, 0), (1, 1), 2))
    np.testing.assert_array_equal(y[0, 0], 0.0)
    np.testing.assert_array_equal(y[0, 1], 1.0)


@SETTINGS
@given(data=st.data())
def test_conv2d_gradients_are_adjoint_to_conv2d(data: st.DataObject) -> None:
    """<g, conv2d(x, w)> = <conv2d_grad_input(g, w), x> = <conv2d_grad_weight(x, g), w>."""
    arg, x, w = conv_case(data)
    y = naive_conv2d(x, w, arg)
    g = np.random.default_rng(7).standard_normal(y.shape)
    dx = run_op(Op.CONV2D_GRAD_INPUT, g, w, arg=d.ConvGradArg(arg, x.shape))
    dw = run_op(Op.CONV2D_GRAD_WEIGHT, x, g, arg=d.ConvGradArg(arg, w.shape))
    assert dx.shape == x.shape and dw.shape == w.shape
    expected = float(np.sum(g * y))
    assert math.isclose(float(np.sum(dx * x)), expected, rel_tol=1e-10, abs_tol=1e-10)
    assert math.isclose(float(np.sum(dw * w)), expected, rel_tol=1e-10, abs_tol=1e-10)


# -- pooling ----------------------------------------------------------------------------------------


def pool_case(data: st.DataObject) -> tuple[d.PoolArg, tuple[int, ...]]:
    kernel = (data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3)))
    stride = (data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3)))
    padding = (data.draw(st.integers(0, kernel[0] // 2)), data.draw(st.integers(0, kernel[1] // 2)))
    size = tuple(max(1, k - 2 * p) + data.draw(st.integers(0, 4)) for k, p in zip(kernel, padding, strict=True))
    n, c = data.draw(st.integers(1, 2)), data.draw(st.integers(1, 2))
    return d.PoolArg(kernel, stride, padding), (n, c, *size)


def windows(arg: d.PoolArg, shape: tuple[int, ...]) -> list[tuple[tuple[int, int], list[tuple[int, int]]]]:
    """Each output position with the input positions its window covers (row-major, padding left out)."""
    (kh, kw), (sh, sw), (ph, pw) = arg.kernel, arg.stride, arg.padding
    h, w = shape[2:]
    out = []
    for i in range(out_size(h, kh, sh, ph)):
        for j in range(out_size(w, kw, sw, pw)):
            taps = [(i * sh - ph + a, j * sw - pw + b) for a in range(kh) for b in range(kw)]
            out.append(((i, j), [(r, c) for r, c in taps if 0 <= r < h and 0 <= c < w]))
    return out


def naive_max_pool(x: np.ndarray, arg: d.PoolArg) -> np.ndarray:
    wins = windows(arg, x.shape)
    (oi, oj), _ = wins[-1]
    out = np.zeros((*x.shape[:2], oi + 1, oj + 1))
    for n, c in np.ndindex(x.shape[:2]):
        for (i, j), taps in wins:
            out[n, c, i, j] = max(x[n, c, r, s] for r, s in taps)  # padding (-inf) never wins
    return out


def naive_max_pool_grad(x: np.ndarray, g: np.ndarray, arg: d.PoolArg) -> np.ndarray:
    dx = np.zeros_like(x)
    for n, c in np.ndindex(x.shape[:2]):
        for (i, j), taps in windows(arg, x.shape):
            best = max(x[n, c, r, s] for r, s in taps)
            r, s = next((r, s) for r, s in taps if x[n, c, r, s] == best)
            dx[n, c, r, s] += g[n, c, i, j]
    return dx


def naive_avg_pool(x: np.ndarray, arg: d.PoolArg) -> np.ndarray:
    wins = windows(arg, x.shape)
    (oi, oj), _ = wins[-1]
    out = np.zeros((*x.shape[:2], oi + 1, oj + 1))
    for n, c in np.ndindex(x.shape[:2]):
        for (i, j), taps in wins:  # padding counts as zeros: divide by the whole kernel
            out[n, c, i, j] = sum(x[n, c, r, s] for r, s in taps) / (arg.kernel[0] * arg.kernel[1])
    return out


@SETTINGS
@given(data=st.data(), negative=st.booleans())
def test_max_pool2d_pads_with_minus_infinity(data: st.DataObject, negative: bool) -> None:
    arg, shape = pool_case(data)
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    x = -rng.uniform(1.0, 5.0, shape) if negative else rng.standard_normal(shape)
    np.testing.assert_array_equal(run_op(Op.MAX_POOL2D, x, arg=arg), naive_max_pool(x, arg))


def test_max_pool2d_border_window_of_negative_values_is_not_zero() -> None:
    x = np.full((1, 1, 2, 2), -3.0)
    y = run_op(Op.MAX_POOL2D, x, arg=d.PoolArg((2, 2), (2, 2), (1, 1)))
    np.testing.assert_array_equal(y, np.full((1, 1, 2, 2), -3.0))


@SETTINGS
@given(data=st.data())
def test_max_pool2d_grad_goes_to_the_first_maximum_of_each_window(data: st.DataObject) -> None:
    arg, shape = pool_case(data)
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    x = rng.integers(0, 3, shape).astype(np.float64)  # many ties
    g = rng.standard_normal(naive_max_pool(x, arg).shape)
    dx = run_op(Op.MAX_POOL2D_GRAD, x, g, arg=d.PoolGradArg(arg, shape))
    np.testing.assert_allclose(dx, naive_max_pool_grad(x, g, arg), rtol=1e-12, atol=1e-12)


def test_max_pool2d_grad_with_a_tied_window() -> None:
    x = np.array([[[[1.0, 5.0], [5.0, 5.0]]]])
    dx = run_op(
        Op.MAX_POOL2D_GRAD, x, np.array([[[[2.0]]]]), arg=d.PoolGradArg(d.PoolArg((2, 2), (1, 1), (0, 0)), x.shape)
    )
    np.testing.assert_array_equal(dx, [[[[0.0, 2.0], [0.0, 0.0]]]])


@SETTINGS
@given(data=st.data())
def test_avg_pool2d_counts_padding_as_zeros(data: st.DataObject) -> None:
    arg, shape = pool_case(data)
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    x = rng.standard_normal(shape)
    np.testing.assert_allclose(run_op(Op.AVG_POOL2D, x, arg=arg), naive_avg_pool(x, arg), rtol=1e-12, atol=1e-12)


@SETTINGS
@given(data=st.data())
def test_avg_pool2d_grad_is_adjoint_to_avg_pool2d(data: st.DataObject) -> None:
    arg, shape = pool_case(data)
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    x = rng.standard_normal(shape)
    y = naive_avg_pool(x, arg)
    g = rng.standard_normal(y.shape)
    dx = run_op(Op.AVG_POOL2D_GRAD, g, arg=d.PoolGradArg(arg, shape))
    assert dx.shape == shape
    assert math.isclose(float(np.sum(dx * x)), float(np.sum(g * y)), rel_tol=1e-10, abs_tol=1e-10)


# -- softmax ----------------------------------------------------------------------------------------

BIG = np.array([[1e4, 1e4 - 1, -1e4], [-1e4, -1e4, -1e4 + 2], [1e4, 1e4, 1e4]])


def big_log_softmax() -> np.ndarray:
    """BIG's log-softmax along axis 1, worked out by hand on small numbers."""
    lse0 = math.log1p(math.exp(-1))  # row 0 relative to its maximum: (0, -1, -2e4)
    lse1 = math.log1p(2 * math.exp(-2))  # row 1: (-2, -2, 0)
    return np.array(
        [[-lse0, -1 - lse0, -2e4 - lse0], [-2 - lse1, -2 - lse1, -lse1], [-math.log(3)] * 3],
    )


@pytest.mark.parametrize("float_dtype", [np.float64, np.float32])
@pytest.mark.parametrize("axis", [0, 1])
def test_softmax_and_log_softmax_are_stable_with_large_inputs(float_dtype: type, axis: int) -> None:
    x = BIG if axis == 1 else BIG.T
    expected = big_log_softmax() if axis == 1 else big_log_softmax().T
    log_p = run_op(Op.LOG_SOFTMAX, x, arg=d.AxisArg(axis), float_dtype=float_dtype)
    p = run_op(Op.SOFTMAX, x, arg=d.AxisArg(axis), float_dtype=float_dtype)
    assert np.all(np.isfinite(log_p)) and np.all(np.isfinite(p))
    assert log_p.dtype == float_dtype and p.dtype == float_dtype
    tol = 1e-12 if float_dtype is np.float64 else 1e-6
    np.testing.assert_allclose(log_p, expected, rtol=tol, atol=tol)
    np.testing.assert_allclose(p, np.exp(expected), rtol=tol, atol=tol)
    np.testing.assert_allclose(np.sum(p, axis=axis), 1.0, rtol=tol)


# -- indexing ---------------------------------------------------------------------------------------


@SETTINGS
@given(data=st.data())
def test_scatter_add_sums_repeated_indices(data: st.DataObject) -> None:
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    rows = data.draw(st.integers(1, 3), label="rows")
    index_shape = tuple(data.draw(st.lists(st.integers(1, 4), max_size=2), label="index_shape"))
    rest = tuple(data.draw(st.lists(st.integers(1, 3), max_size=2), label="rest"))
    indices = rng.integers(0, rows, index_shape).astype(np.int32)
    g = rng.standard_normal(index_shape + rest)
    expected = np.zeros((rows, *rest))
    for pos in np.ndindex(index_shape):
        expected[indices[pos]] += g[pos]
    np.testing.assert_allclose(run_op(Op.SCATTER_ADD, indices, g, arg=d.RowsArg(rows)), expected, rtol=1e-12)


def test_scatter_add_repeats_in_a_fixed_example() -> None:
    indices = np.array([1, 0, 1, 1], dtype=np.int32)
    g = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0], [7.0, 8.0]])
    y = run_op(Op.SCATTER_ADD, indices, g, arg=d.RowsArg(3))
    np.testing.assert_array_equal(y, [[3.0, 4.0], [13.0, 16.0], [0.0, 0.0]])


def test_one_hot_and_gather_in_range() -> None:
    labels = np.array([[2, 0], [1, 2]], dtype=np.int32)
    y = run_op(Op.ONE_HOT, labels, arg=d.ClassesArg(3))
    for pos in np.ndindex(labels.shape):
        assert list(y[pos]) == [float(k == labels[pos]) for k in range(3)]
    table = np.arange(6.0).reshape(3, 2)
    np.testing.assert_array_equal(run_op(Op.GATHER, table, labels), [[[4, 5], [0, 1]], [[2, 3], [4, 5]]])


@pytest.mark.parametrize("bad", [3, -1])
def test_one_hot_rejects_labels_out_of_range(bad: int) -> None:
    words = rf"one_hot of 'x0' \(3 classes\): index {bad} at \[1\] lies outside \[0, 3\)$"
    with pytest.raises(IndexRangeError, match=words):
        run_op(Op.ONE_HOT, np.array([0, bad, 1], dtype=np.int32), arg=d.ClassesArg(3))


@pytest.mark.parametrize("bad", [2, -1])
def test_gather_rejects_indices_out_of_range(bad: int) -> None:
    words = rf"gather from 'x0' by 'x1': index {bad} at \[1, 0\] lies outside \[0, 2\)$"
    with pytest.raises(IndexRangeError, match=words):
        run_op(Op.GATHER, np.ones((2, 3)), np.array([[0], [bad]], dtype=np.int32))


# -- randomness -------------------------------------------------------------------------------------

KEY = srng.substream_key(1234, "dropout")


def draw(
    distribution: d.Distribution,
    shape: tuple[int, ...],
    *,
    site: int = 0,
    position: int = 5,
    p: float = 0.0,
    n: int = 0,
) -> np.ndarray:
    """Draws of the RANDOM op; integers lie in [0, n), or [0, 1000) when n is not given."""
    key = np.array(KEY, dtype=np.uint32)
    if distribution is d.Distribution.INTEGER:
        n = n or 1000
    arg = d.RandomArg(distribution, "dropout", site, shape, p, n)
    return run_op(Op.RANDOM, key, np.array(position, dtype=np.uint32), arg=arg)


def test_bernoulli_keeps_with_probability_one_minus_p() -> None:
    mask = draw(d.Distribution.BERNOULLI, (100, 100), p=0.3)
    assert mask.dtype == np.bool_ and mask.shape == (100, 100)
    assert abs(mask.mean() - 0.7) < 0.02  # 4.4 standard deviations
    np.testing.assert_array_equal(mask, draw(d.Distribution.UNIFORM, (100, 100)) >= 0.3)


def test_uniform_lies_in_zero_one_on_a_float32_grid() -> None:
    u = draw(d.Distribution.UNIFORM, (100, 100))
    assert u.min() >= 0.0 and u.max() < 1.0
    assert abs(u.mean() - 0.5) < 0.012 and abs(u.var() - 1 / 12) < 0.005
    np.testing.assert_array_equal(u * 2**24, np.floor(u * 2**24))


def test_normal_has_mean_zero_and_variance_one() -> None:
    z = draw(d.Distribution.NORMAL, (100, 100))
    assert z.dtype == np.float64 and np.all(np.isfinite(z))
    assert abs(z.mean()) < 0.04 and abs(z.var() - 1) < 0.06


@pytest.mark.parametrize("distribution", list(d.Distribution), ids=lambda x: x.value)
def test_draws_repeat_for_one_site_and_position_and_differ_otherwise(distribution: d.Distribution) -> None:
    a = draw(distribution, (8, 16), site=1, position=5, p=0.5)
    np.testing.assert_array_equal(a, draw(distribution, (8, 16), site=1, position=5, p=0.5))
    assert not np.array_equal(a, draw(distribution, (8, 16), site=2, position=5, p=0.5))
    assert not np.array_equal(a, draw(distribution, (8, 16), site=1, position=6, p=0.5))


def test_uniform_element_i_is_philox_of_its_counter() -> None:
    site, position = 3, 2**32 - 1
    u = draw(d.Distribution.UNIFORM, (5, 7, 3), site=site, position=position).reshape(-1)
    for i in range(u.size):
        word = srng.philox4x32(srng.counter(i, site, position), KEY)[0]
        assert u[i] == srng.uniform(word), i


def rejected(n: int, site: int, position: int, count: int) -> int:
    """How many of elements 0..count-1 have all four words of their first counter rejected."""
    last = 2**32 - 1 - 2**32 % n
    return sum(min(srng.philox4x32(srng.counter(i, site, position), KEY)) > last for i in range(count))


# n = 2**31: no rejection; 1431655766 (just above 2**32 / 3): a third of the words rejected, all four of
# them for about one element in 81, so some draws continue at the next counter
INTEGER_RANGES = [1, 2, 6, 7, 1000, 2**31 - 1, 2**31, 1_431_655_766]


@pytest.mark.parametrize("n", INTEGER_RANGES)
def test_integer_element_i_is_rng_integer_of_its_counter(n: int) -> None:
    site, position, count = 2, 2**32 - 1, 2000
    got = draw(d.Distribution.INTEGER, (count,), site=site, position=position, n=n)
    assert got.dtype == np.int32 and got.min() >= 0 and got.max() < n
    assert got.tolist() == [srng.integer(n, srng.counter(i, site, position), KEY) for i in range(count)]
    if n == 1_431_655_766:
        assert rejected(n, site, position, count) >= 5, "the continuation must be exercised"


def test_integers_are_uniform_over_a_small_range() -> None:
    counts = np.bincount(draw(d.Distribution.INTEGER, (60_000,), n=6).reshape(-1), minlength=6)
    chi2 = float(np.sum((counts - 10_000) ** 2 / 10_000))
    assert chi2 < 20.5, counts  # 5 degrees of freedom: p < 0.001


def naive_shift2d(x: np.ndarray, shift: np.ndarray) -> np.ndarray:
    out = np.zeros_like(x)
    h, w = x.shape[-2:]
    for index in np.ndindex(x.shape):
        i, j = index[-2] + shift[index[0], 0], index[-1] + shift[index[0], 1]
        if 0 <= i < h and 0 <= j < w:
            out[index] = x[(*index[:-2], i, j)]
    return out


@SETTINGS
@given(data=st.data())
def test_shift2d_matches_the_loop(data: st.DataObject) -> None:
    shape = tuple(data.draw(st.integers(1, 5)) for _ in range(data.draw(st.integers(3, 4), label="ndim")))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    shift = rng.integers(-6, 7, (shape[0], 2)).astype(np.int32)
    x = rng.standard_normal(shape)
    np.testing.assert_array_equal(run_op(Op.SHIFT2D, x, shift), naive_shift2d(x, shift))


def test_flip_last_reverses_the_flagged_examples_only() -> None:
    x = np.arange(24.0).reshape(3, 2, 4)
    out = run_op(Op.FLIP_LAST, x, np.array([True, False, True]))
    np.testing.assert_array_equal(out, [x[0, :, ::-1], x[1], x[2, :, ::-1]])


def test_philox_known_answer() -> None:
    """Random123's published Philox4x32-10 vectors, so the reference and rng agree with the standard."""
    assert srng.philox4x32((0, 0, 0, 0), (0, 0)) == (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)
    ones = 0xFFFFFFFF
    assert srng.philox4x32((ones,) * 4, (ones, ones)) == (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)
    pi = srng.philox4x32((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0))
    assert pi == (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)


# -- float32 mode and the inputs of run ---------------------------------------------------------------


def test_float32_mode_returns_float32_arrays() -> None:
    rng = np.random.default_rng(0)
    x_val, w_val = rng.standard_normal((1, 2, 4, 4)), rng.standard_normal((3, 2, 3, 3))
    labels = np.array([0, 2], dtype=np.int32)
    key, position = np.array(KEY, dtype=np.uint32), np.array(1, dtype=np.uint32)
    (x, w, lab, k, pos), feed = inputs_for(x_val, w_val, labels, key, position)
    conv_arg = d.ConvArg((1, 1), (1, 1), (1, 1), 1)
    conv = make(Op.CONV2D, x, w, arg=conv_arg)
    outputs = {
        "erf": make(Op.ERF, x),
        "gelu": make(Op.GELU, x, arg=d.GeluArg("none")),
        "mean": make(Op.MEAN, x, arg=d.ReduceArg((2, 3), False)),
        "var": make(Op.VAR, x, arg=d.ReduceArg((1,), True, 1)),
        "conv": conv,
        "dx": make(Op.CONV2D_GRAD_INPUT, conv, w, arg=d.ConvGradArg(conv_arg, x.shape)),
        "pool": make(Op.AVG_POOL2D, x, arg=d.PoolArg((2, 2), (2, 2), (1, 1))),
        "softmax": make(Op.SOFTMAX, x, arg=d.AxisArg(3)),
        "one_hot": make(Op.ONE_HOT, lab, arg=d.ClassesArg(3)),
        "normal": make(Op.RANDOM, k, pos, arg=d.RandomArg(d.Distribution.NORMAL, "dropout", 0, (4,))),
        "uniform": make(Op.RANDOM, k, pos, arg=d.RandomArg(d.Distribution.UNIFORM, "dropout", 0, (4,))),
        "argmax": make(Op.ARGMAX, x, arg=d.AxisArg(1)),
        "mask": make(Op.RANDOM, k, pos, arg=d.RandomArg(d.Distribution.BERNOULLI, "dropout", 0, (4,), 0.5)),
    }
    fn = Function("f32", (x, w, lab, k, pos), tuple(outputs.items()))
    single, double = run(fn, feed, np.float32), run(fn, feed)
    for name, node in outputs.items():
        expected = {DType.F32: np.float32, DType.I32: np.int32, DType.BOOL: np.bool_}[node.dtype]
        assert single[name].dtype == expected, name
        assert double[name].dtype == (np.float64 if node.dtype is DType.F32 else expected), name
        np.testing.assert_allclose(single[name], double[name], rtol=1e-4, atol=1e-5, err_msg=name)


def small_function() -> Function:
    x = input_node("x", d.Role.DATA, DType.F32, (2, 3))
    y = input_node("y", d.Role.PARAM, DType.F32, (3,))
    return Function("small", (x, y), (("out", make(Op.ADD, x, y)),))


def test_run_rejects_missing_unknown_and_misshapen_inputs() -> None:
    fn = small_function()
    x, y = np.ones((2, 3)), np.ones(3)
    np.testing.assert_array_equal(run(fn, {"x": x, "y": y})["out"], np.full((2, 3), 2.0))
    with pytest.raises(ReferenceInputError, match=r"missing inputs \['y'\]"):
        run(fn, {"x": x})
    with pytest.raises(ReferenceInputError, match=r"unknown inputs \['z'\]"):
        run(fn, {"x": x, "y": y, "z": y})
    with pytest.raises(ReferenceInputError, match=r"input 'y' has shape \(1, 3\), expected \(3,\)"):
        run(fn, {"x": x, "y": np.ones((1, 3))})
    with pytest.raises(ReferenceInputError, match=r"input 'x' has shape \(\), expected \(2, 3\)"):
        run(fn, {"x": 1.0, "y": y})


def test_shuffle_permutation_is_the_same_in_pure_python_and_numpy() -> None:
    from scellis.rng import permutation
    from scellis.runtime.reference.train import permutation as vectorised

    for n, seed, epoch in [(1, 0, 0), (97, 5, 3), (1400, 1, 0)]:
        order = permutation(n, seed, epoch)
        assert sorted(order) == list(range(n))
        assert order == vectorised(n, seed, epoch).tolist()
    assert permutation(50, 1, 0) != permutation(50, 1, 1)
