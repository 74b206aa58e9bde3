"""The reference device: numpy, float64 (or float32), straightforward code. The oracle every
other device is tested against. CPython only (numpy is not available in the browser).

An index outside its table (gather, scatter_add, one_hot) raises ops.indices.IndexRangeError before the
op runs, with the words the devices use; the op implementations themselves read no memory outside the
table (0 for such an index, as on the devices), so the schedule-level reference device reuses them."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import numpy as np

from scellis.ir.function import Function, input_name
from scellis.ops import DType, Op, nf4
from scellis.ops import defs as d
from scellis.ops.indices import IndexRangeError, index_use
from scellis.rng import MASK, PHILOX_M, PHILOX_W, ROUNDS

Array = np.ndarray
# (argument, input arrays, the node (only its .shape is read), the float dtype) -> output array
Impl = Callable[[Any, list[Array], Any, np.dtype], Any]


class ReferenceInputError(ValueError):
    """Inputs that do not fit the function, or values an op cannot take (e.g. a label out of range)."""


def numpy_dtype(dtype: DType, float_dtype: np.dtype) -> np.dtype:
    """float16 storage is float16 here too (numpy rounds to nearest even), whatever `float_dtype` is."""
    if dtype is DType.F32:
        return float_dtype
    types: dict[DType, np.dtype] = {DType.F16: np.dtype(np.float16), DType.I32: np.dtype(np.int32)}
    return types.get(dtype, np.dtype(np.uint32) if dtype is DType.U32 else np.dtype(np.bool_))


def run(fn: Function, inputs: Mapping[str, object], float_dtype: type = np.float64) -> dict[str, Array]:
    """Evaluate `fn` on named input arrays; floats computed in `float_dtype` (float64 or float32)."""
    fdt = np.dtype(float_dtype)
    values: dict[int, Array] = {}
    expected = {input_name(n): n for n in fn.inputs}
    unknown = sorted(set(inputs) - set(expected))
    missing = sorted(set(expected) - set(inputs))
    if unknown or missing:
        raise ReferenceInputError(f"{fn.name}: missing inputs {missing}, unknown inputs {unknown}")
    for name, node in expected.items():
        array = np.asarray(inputs[name])
        if array.shape != node.shape:
            raise ReferenceInputError(f"{fn.name}: input {name!r} has shape {array.shape}, expected {node.shape}")
        values[id(node)] = array.astype(numpy_dtype(node.dtype, fdt))
    # IEEE arithmetic is the contract (overflow gives inf, 0/0 gives NaN): numpy need not warn of it
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        for node in fn.nodes():
            if node.op is Op.INPUT:
                continue
            if node.op in INDEXING:
                check_indices(node, values[id(node.src[INDEXING[node.op]])])
            out = IMPLS[node.op](node.arg, [values[id(s)] for s in node.src], node, fdt)
            values[id(node)] = np.asarray(out, dtype=numpy_dtype(node.dtype, fdt)).reshape(node.shape)
    return {name: values[id(node)] for name, node in fn.outputs}


INDEXING = {Op.GATHER: 1, Op.SCATTER_ADD: 0, Op.ONE_HOT: 0}  # op -> the input holding its indices


def check_indices(node: Any, indices: Array) -> None:
    """IndexRangeError when an index of `node` (an op of INDEXING) lies outside [0, bound)."""
    use = index_use(node)
    assert use is not None
    flat = indices.reshape(-1)
    bad = np.flatnonzero((flat < 0) | (flat >= use.bound))
    if bad.size:
        raise IndexRangeError(use, int(bad.size), int(bad[0]), int(flat[bad[0]]))


# -- elementwise ----------------------------------------------------------------------------------

_erf = np.vectorize(math.erf, otypes=[np.float64])


def _gelu(arg: object, x: Array) -> Array:
    assert isinstance(arg, d.GeluArg)
    if arg.approximate == "tanh":
        return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))
    return 0.5 * x * (1 + _erf(x / math.sqrt(2)).astype(x.dtype))


def _sigmoid(x: Array) -> Array:
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e))


UNARY: dict[Op, Callable[[Any, Array], Array]] = {
    Op.NEG: lambda a, x: -x,
    Op.EXP: lambda a, x: np.exp(x),
    Op.EXPM1: lambda a, x: np.expm1(x),
    Op.LOG: lambda a, x: np.log(x),
    Op.SQRT: lambda a, x: np.sqrt(x),
    Op.RSQRT: lambda a, x: 1 / np.sqrt(x),
    Op.ABS: lambda a, x: np.abs(x),
    Op.SIGN: lambda a, x: np.sign(x),
    Op.RELU: lambda a, x: np.maximum(x, 0),
    Op.LEAKY_RELU: lambda a, x: np.where(x >= 0, x, a.alpha * x),
    Op.GELU: _gelu,
    Op.TANH: lambda a, x: np.tanh(x),
    Op.SIGMOID: lambda a, x: _sigmoid(x),
    Op.ERF: lambda a, x: _erf(x).astype(x.dtype),
    Op.COS: lambda a, x: np.cos(x),
    Op.SIN: lambda a, x: np.sin(x),
    Op.FLOOR: lambda a, x: np.floor(x),
    Op.IS_FINITE: lambda a, x: np.isfinite(x),
}
BINARY: dict[Op, Callable[[Array, Array], Array]] = {
    Op.ADD: np.add,
    Op.SUB: np.subtract,
    Op.MUL: np.multiply,
    Op.DIV: np.divide,
    Op.POW: np.power,
    Op.MAXIMUM: np.maximum,
    Op.MINIMUM: np.minimum,
    Op.LESS: np.less,
    Op.EQUAL: np.equal,
}


def _reduce(op: Op, arg: object, x: Array) -> Array:
    assert isinstance(arg, d.ReduceArg)
    if op is Op.VAR:
        return np.var(x, axis=arg.axes, keepdims=arg.keepdims, ddof=arg.correction)
    if op is Op.MAX:
        return np.max(x, axis=arg.axes, keepdims=arg.keepdims)
    reducer = np.sum if op is Op.SUM else np.mean
    return reducer(x, axis=arg.axes, keepdims=arg.keepdims)


# -- convolution and pooling ----------------------------------------------------------------------


Window = tuple[int, int, tuple[slice, slice]]


def _windows(
    shape: tuple[int, ...], k: tuple[int, int], s: tuple[int, int], p: tuple[int, int], dil: tuple[int, int] = (1, 1)
) -> Iterator[Window]:
    """For each kernel offset (kh, kw): the strided slices of the padded input it reads."""
    oh = (shape[2] + 2 * p[0] - dil[0] * (k[0] - 1) - 1) // s[0] + 1
    ow = (shape[3] + 2 * p[1] - dil[1] * (k[1] - 1) - 1) // s[1] + 1
    for kh in range(k[0]):
        for kw in range(k[1]):
            h0, w0 = kh * dil[0], kw * dil[1]
            yield kh, kw, (slice(h0, h0 + s[0] * (oh - 1) + 1, s[0]), slice(w0, w0 + s[1] * (ow - 1) + 1, s[1]))


def _pad(x: Array, p: tuple[int, int], value: float = 0.0) -> Array:
    return np.pad(x, ((0, 0), (0, 0), (p[0], p[0]), (p[1], p[1])), constant_values=value)


def _crop(x: Array, p: tuple[int, int]) -> Array:
    return x[:, :, p[0] : x.shape[2] - p[0], p[1] : x.shape[3] - p[1]]


def _conv2d(arg: d.ConvArg, x: Array, w: Array, out_shape: tuple[int, ...]) -> Array:
    g = arg.groups
    n, c = x.shape[:2]
    o, cg, kh_, kw_ = w.shape
    wg = w.reshape(g, o // g, cg, kh_, kw_)
    out = np.zeros((n, g, o // g, *out_shape[2:]), dtype=x.dtype)
    xp = _pad(x, arg.padding).reshape(n, g, c // g, x.shape[2] + 2 * arg.padding[0], -1)
    for kh, kw, (hs, ws) in _windows(x.shape, (kh_, kw_), arg.stride, arg.padding, arg.dilation):
        out += np.einsum("ngcij,goc->ngoij", xp[:, :, :, hs, ws], wg[:, :, :, kh, kw])
    return out.reshape(out_shape)


def _conv2d_grad_input(arg: d.ConvGradArg, g: Array, w: Array) -> Array:
    conv, shape = arg.conv, arg.shape
    groups, (n, c, h, wd) = conv.groups, shape
    o, cg, kh_, kw_ = w.shape
    wg = w.reshape(groups, o // groups, cg, kh_, kw_)
    gg = g.reshape(n, groups, o // groups, *g.shape[2:])
    dxp = np.zeros((n, groups, cg, h + 2 * conv.padding[0], wd + 2 * conv.padding[1]), dtype=g.dtype)
    for kh, kw, (hs, ws) in _windows(shape, (kh_, kw_), conv.stride, conv.padding, conv.dilation):
        dxp[:, :, :, hs, ws] += np.einsum("ngoij,goc->ngcij", gg, wg[:, :, :, kh, kw])
    return _crop(dxp.reshape(n, c, *dxp.shape[3:]), conv.padding)


def _conv2d_grad_weight(arg: d.ConvGradArg, x: Array, g: Array) -> Array:
    conv, (o, cg, kh_, kw_) = arg.conv, arg.shape
    groups, n = conv.groups, x.shape[0]
    xp = _pad(x, conv.padding).reshape(n, groups, cg, x.shape[2] + 2 * conv.padding[0], -1)
    gg = g.reshape(n, groups, o // groups, *g.shape[2:])
    dw = np.zeros((groups, o // groups, cg, kh_, kw_), dtype=g.dtype)
    for kh, kw, (hs, ws) in _windows(x.shape, (kh_, kw_), conv.stride, conv.padding, conv.dilation):
        dw[:, :, :, kh, kw] = np.einsum("ngcij,ngoij->goc", xp[:, :, :, hs, ws], gg)
    return dw.reshape(arg.shape)


def _max_pool(arg: d.PoolArg, x: Array) -> Array:
    xp = _pad(x, arg.padding, -np.inf)
    return np.max([xp[:, :, hs, ws] for _, _, (hs, ws) in _windows(x.shape, arg.kernel, arg.stride, arg.padding)], 0)


def _max_pool_grad(arg: d.PoolGradArg, x: Array, g: Array) -> Array:
    """Each window's gradient goes to its first maximum in row-major kernel order."""
    pool = arg.pool
    xp = _pad(x, pool.padding, -np.inf)
    best = _max_pool(pool, x)
    dxp = np.zeros_like(xp)
    taken = np.zeros(best.shape, dtype=bool)
    for _, _, (hs, ws) in _windows(x.shape, pool.kernel, pool.stride, pool.padding):
        take = (xp[:, :, hs, ws] == best) & ~taken
        dxp[:, :, hs, ws] += np.where(take, g, 0)
        taken |= take
    return _crop(dxp, pool.padding)


def _avg_pool(arg: d.PoolArg, x: Array) -> Array:
    xp = _pad(x, arg.padding)
    windows = [xp[:, :, hs, ws] for _, _, (hs, ws) in _windows(x.shape, arg.kernel, arg.stride, arg.padding)]
    return np.sum(windows, 0) / (arg.kernel[0] * arg.kernel[1])


def _avg_pool_grad(arg: d.PoolGradArg, g: Array) -> Array:
    pool, shape = arg.pool, arg.shape
    dxp = np.zeros((*shape[:2], shape[2] + 2 * pool.padding[0], shape[3] + 2 * pool.padding[1]), dtype=g.dtype)
    for _, _, (hs, ws) in _windows(shape, pool.kernel, pool.stride, pool.padding):
        dxp[:, :, hs, ws] += g / (pool.kernel[0] * pool.kernel[1])
    return _crop(dxp, pool.padding)


# -- the rest -------------------------------------------------------------------------------------


def _log_softmax(x: Array, axis: int) -> Array:
    shifted = x - np.max(x, axis=axis, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))


def _matmul(arg: d.MatmulArg, a: Array, b: Array) -> Array:
    # contiguous operands, and one product where b is one matrix for every batch: numpy then runs BLAS
    a = np.ascontiguousarray(np.swapaxes(a, -1, -2) if arg.transpose_a else a)
    b = np.ascontiguousarray(np.swapaxes(b, -1, -2) if arg.transpose_b else b)
    if a.ndim > 2 and b.ndim >= 2 and all(n == 1 for n in b.shape[:-2]) and b.ndim <= a.ndim:
        rows = np.matmul(a.reshape(-1, a.shape[-1]), b.reshape(b.shape[-2:]))
        return rows.reshape(*a.shape[:-1], b.shape[-1])
    return np.matmul(a, b)


def eliminate(a: Array, b: Array) -> Array:
    """SOLVE's elimination on every matrix of the batch at once: the augmented [..., n, n + k] matrix after
    Gaussian elimination with partial pivoting (the first row of largest |value| in the column, NaN never
    chosen) and back substitution, both in the devices' order; its last k columns are x. A zero pivot
    divides by zero: inf or NaN, as on the devices."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return _eliminate(a, b)


def _eliminate(a: Array, b: Array) -> Array:
    n = a.shape[-1]
    work = np.concatenate([a, b], axis=-1).reshape(-1, n, n + b.shape[-1])
    rows = np.arange(work.shape[0])
    for j in range(n):
        size = np.abs(work[:, j:, j])
        pivot = j + np.argmax(np.where(np.isnan(size), -1.0, size), axis=1)
        top = work[rows, pivot, j:]  # a copy (fancy indexing): then the swap
        work[rows, pivot, j:] = work[:, j, j:]
        work[:, j, j:] = top
        factor = work[:, j + 1 :, j] / work[:, j, j][:, None]
        work[:, j + 1 :, j + 1 :] -= factor[:, :, None] * work[:, j, None, j + 1 :]
    for i in range(n - 1, -1, -1):
        work[:, i, n:] /= work[:, i, i][:, None]
        work[:, :i, n:] -= work[:, :i, i, None] * work[:, i, None, n:]
    return work.reshape(*a.shape[:-1], work.shape[-1])


def _ranks(x: Array, axis: int) -> Array:
    """Each element's rank along `axis`: ascending, stable, NaN last (numpy's stable sort orders NaN after
    +inf and -0.0 equal to 0.0, as the devices' keys do)."""
    order = np.argsort(x, axis=axis, kind="stable")
    positions = np.arange(x.shape[axis]).reshape([-1 if i == axis else 1 for i in range(x.ndim)])
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, np.broadcast_to(positions, order.shape), axis)
    return rank


def _one_hot(arg: d.ClassesArg, labels: Array, fdt: np.dtype) -> Array:
    return (labels[..., None] == np.arange(arg.classes)).astype(fdt)


def _gather(table: Array, indices: Array) -> Array:
    inside = (indices >= 0) & (indices < table.shape[0])
    if not table.shape[0]:
        return np.zeros(indices.shape + table.shape[1:], table.dtype)
    rows = table[np.where(inside, indices, 0)]
    return np.where(inside.reshape(inside.shape + (1,) * (table.ndim - 1)), rows, np.zeros((), table.dtype))


def _scatter_add(arg: d.RowsArg, indices: Array, g: Array) -> Array:
    out = np.zeros((arg.rows, *g.shape[indices.ndim :]), dtype=g.dtype)
    inside = (indices >= 0) & (indices < arg.rows)
    np.add.at(out, indices[inside], g[inside])
    return out


def philox(c: list[Array], key: tuple[int, int]) -> list[Array]:
    """Philox4x32-10 over arrays of counters (uint64 holding 32-bit words)."""
    c0, c1, c2, c3 = (np.asarray(w, dtype=np.uint64) for w in c)
    k0, k1 = np.uint64(key[0]), np.uint64(key[1])
    mask, shift = np.uint64(MASK), np.uint64(32)
    for r in range(ROUNDS):
        if r:
            k0, k1 = (k0 + np.uint64(PHILOX_W[0])) & mask, (k1 + np.uint64(PHILOX_W[1])) & mask
        p0, p1 = np.uint64(PHILOX_M[0]) * c0, np.uint64(PHILOX_M[1]) * c2
        c0, c1, c2, c3 = (p1 >> shift) ^ c1 ^ k0, p1 & mask, (p0 >> shift) ^ c3 ^ k1, p0 & mask
    return [c0, c1, c2, c3]


def _integers(n: int, counters: list[Array], key: tuple[int, int]) -> Array:
    """`rng.integer` for every element: the first of its four words that is at most 2**32 - 1 - (2**32
    mod n), taken mod n; elements whose four words are all rejected draw again at counter word 3 + 1."""
    last, c3 = np.uint64(2**32 - 1 - 2**32 % n), counters[3].copy()
    out = np.zeros(c3.shape, dtype=np.uint64)
    todo = np.arange(out.size)
    while todo.size:
        words = np.stack(philox([*(c[todo] for c in counters[:3]), c3[todo]], key))
        accepted = words <= last
        done = accepted.any(axis=0)
        out[todo[done]] = words[np.argmax(accepted, axis=0)[done], np.flatnonzero(done)] % np.uint64(n)
        todo = todo[~done]
        c3[todo] = (c3[todo] + np.uint64(1)) & np.uint64(MASK)
    return out.astype(np.int64)


def _random(arg: d.RandomArg, key: Array, position: Array, fdt: np.dtype) -> Array:
    i = np.arange(math.prod(arg.shape), dtype=np.uint64)
    counters = [i & np.uint64(MASK), np.full_like(i, arg.site), np.full_like(i, int(position)), i >> np.uint64(32)]
    k = (int(key[0]), int(key[1]))
    if arg.distribution is d.Distribution.INTEGER:
        return _integers(arg.n, counters, k).reshape(arg.shape)
    words = philox(counters, k)
    u = (words[0] >> np.uint64(8)).astype(np.float64) * 2.0**-24
    if arg.distribution is d.Distribution.UNIFORM:
        return u.astype(fdt).reshape(arg.shape)
    if arg.distribution is d.Distribution.BERNOULLI:
        return (u >= arg.p).reshape(arg.shape)
    u1 = ((words[0] >> np.uint64(8)).astype(np.float64) + 1) * 2.0**-24
    u2 = (words[1] >> np.uint64(8)).astype(np.float64) * 2.0**-24
    return (np.sqrt(-2 * np.log(u1)) * np.cos(2 * np.pi * u2)).astype(fdt).reshape(arg.shape)


def _window(size: int, shift: int) -> tuple[slice, slice]:
    """Along one axis of SHIFT2D: the output positions i with 0 <= i + shift < size, and those i + shift."""
    return slice(max(0, -shift), max(0, min(size, size - shift))), slice(max(0, shift), max(0, min(size, size + shift)))


def _shift2d(x: Array, shift: Array) -> Array:
    out = np.zeros_like(x)
    for n, (sy, sx) in enumerate(shift.tolist()):
        (rows, from_rows), (cols, from_cols) = _window(x.shape[-2], sy), _window(x.shape[-1], sx)
        out[n, ..., rows, cols] = x[n, ..., from_rows, from_cols]
    return out


def _flip_last(x: Array, flip: Array) -> Array:
    return np.where(flip.reshape(-1, *(1,) * (x.ndim - 1)), x[..., ::-1], x)


def _slice_grad(arg: d.SliceGradArg, g: Array) -> Array:
    out = np.zeros(arg.shape, dtype=g.dtype)
    out[tuple(slice(a, b, s) for a, b, s in zip(arg.starts, arg.stops, arg.steps, strict=True))] = g
    return out


def _unary_impl(op: Op) -> Impl:
    return lambda a, x, n, f: UNARY[op](a, x[0])


def _binary_impl(op: Op) -> Impl:
    return lambda a, x, n, f: BINARY[op](x[0], x[1])


def _reduce_impl(op: Op) -> Impl:
    return lambda a, x, n, f: _reduce(op, a, x[0])


def _slices(a: Any) -> tuple[slice, ...]:
    return tuple(slice(*t) for t in zip(a.starts, a.stops, a.steps, strict=True))


def _nf4_pack(arg: d.Nf4Arg, w: Array) -> Array:
    """scellis.ops.nf4's packing, in float32 where it is defined in float32 (every device's bits)."""
    blocks = np.asarray(w, dtype=np.float32).reshape(-1, nf4.BLOCK)
    absmax = np.max(np.abs(blocks), axis=1, keepdims=True)
    thresholds = np.asarray(nf4.MIDPOINTS, dtype=np.float32)[None, None, :] * absmax[:, :, None]
    codes = np.sum(blocks[:, :, None] > thresholds, axis=2).astype(np.uint64).reshape(-1, nf4.CODES_PER_WORD)
    words = np.bitwise_or.reduce(codes << (4 * np.arange(nf4.CODES_PER_WORD, dtype=np.uint64)), axis=1)
    halves = np.minimum(absmax.reshape(-1).astype(np.float16).view(np.uint16), nf4.F16_MAX_BITS).astype(np.uint64)
    halves = np.concatenate([halves, np.zeros(len(halves) % 2, dtype=np.uint64)]).reshape(-1, 2)
    return np.concatenate([words, halves[:, 0] | (halves[:, 1] << 16)])


def _nf4_values(rows: int, cols: int, packed: Array) -> Array:
    """The values packed words stand for, exactly (in float64)."""
    n = rows * cols
    words = np.asarray(packed, dtype=np.uint64)
    codes = (words[: n // nf4.CODES_PER_WORD, None] >> (4 * np.arange(nf4.CODES_PER_WORD, dtype=np.uint64))) & 0xF
    halves = (words[n // nf4.CODES_PER_WORD :, None] >> np.array([0, 16], dtype=np.uint64)) & 0xFFFF
    scales = halves.reshape(-1)[: n // nf4.BLOCK].astype(np.uint16).view(np.float16).astype(np.float64)
    levels = np.asarray(nf4.LEVELS32, dtype=np.float64)[codes.reshape(-1).astype(np.int64)]
    return (levels.reshape(-1, nf4.BLOCK) * scales[:, None]).reshape(rows, cols)


def _nf4_matmul(arg: d.Nf4MatmulArg, x: Array, packed: Array) -> Array:
    w = _nf4_values(arg.rows, arg.cols, packed)
    return np.matmul(x, w if arg.transpose else w.T)


IMPLS: dict[Op, Impl] = {
    Op.CONST: lambda a, x, n, f: np.array(a.value),
    Op.CAST: lambda a, x, n, f: x[0].astype(numpy_dtype(a.to, f)),
    **{op: _unary_impl(op) for op in UNARY},
    **{op: _binary_impl(op) for op in BINARY},
    Op.WHERE: lambda a, x, n, f: np.where(*x),
    **{op: _reduce_impl(op) for op in d.REDUCE},
    Op.ARGMAX: lambda a, x, n, f: np.argmax(x[0], axis=a.axis),
    Op.EXPAND: lambda a, x, n, f: np.broadcast_to(x[0], n.shape).copy(),
    Op.RESHAPE: lambda a, x, n, f: x[0].reshape(n.shape),
    Op.PERMUTE: lambda a, x, n, f: np.transpose(x[0], a.perm),
    Op.CONCAT: lambda a, x, n, f: np.concatenate(x, axis=a.axis),
    Op.SLICE: lambda a, x, n, f: x[0][_slices(a)],
    Op.SLICE_GRAD: lambda a, x, n, f: _slice_grad(a, x[0]),
    Op.MATMUL: lambda a, x, n, f: _matmul(a, *x),
    Op.SOLVE: lambda a, x, n, f: eliminate(*x)[..., x[0].shape[-1] :],
    Op.CONV2D: lambda a, x, n, f: _conv2d(a, x[0], x[1], n.shape),
    Op.CONV2D_GRAD_INPUT: lambda a, x, n, f: _conv2d_grad_input(a, *x),
    Op.CONV2D_GRAD_WEIGHT: lambda a, x, n, f: _conv2d_grad_weight(a, *x),
    Op.MAX_POOL2D: lambda a, x, n, f: _max_pool(a, x[0]),
    Op.MAX_POOL2D_GRAD: lambda a, x, n, f: _max_pool_grad(a, *x),
    Op.AVG_POOL2D: lambda a, x, n, f: _avg_pool(a, x[0]),
    Op.AVG_POOL2D_GRAD: lambda a, x, n, f: _avg_pool_grad(a, x[0]),
    Op.SOFTMAX: lambda a, x, n, f: np.exp(_log_softmax(x[0], a.axis)),
    Op.LOG_SOFTMAX: lambda a, x, n, f: _log_softmax(x[0], a.axis),
    Op.GATHER: lambda a, x, n, f: _gather(*x),
    Op.SCATTER_ADD: lambda a, x, n, f: _scatter_add(a, *x),
    Op.ONE_HOT: lambda a, x, n, f: _one_hot(a, x[0], f),
    Op.SORT: lambda a, x, n, f: np.sort(x[0], axis=a.axis, kind="stable"),
    Op.SORT_GRAD: lambda a, x, n, f: np.take_along_axis(x[1], _ranks(x[0], a.axis), axis=a.axis),
    Op.RANDOM: lambda a, x, n, f: _random(a, x[0], x[1], f),
    Op.SHIFT2D: lambda a, x, n, f: _shift2d(*x),
    Op.FLIP_LAST: lambda a, x, n, f: _flip_last(*x),
    Op.NF4_PACK: lambda a, x, n, f: _nf4_pack(a, x[0]),
    Op.NF4_UNPACK: lambda a, x, n, f: _nf4_values(a.rows, a.cols, x[0]),
    Op.NF4_MATMUL: lambda a, x, n, f: _nf4_matmul(a, *x),
}
