"""One vector-Jacobian product rule per op: given the node, its output's cotangent `g` and which inputs
need a gradient, return each input's cotangent (None where not needed or not defined)."""

from __future__ import annotations

import math
from collections.abc import Callable

from scellis.ops import DType, Node, Op, const, make
from scellis.ops import defs as d
from scellis.ops.build import (
    add,
    cast,
    div,
    expand,
    keepdims_shape,
    less,
    mul,
    reduce,
    reshape,
    scale,
    sub,
    unary,
    unbroadcast,
    where,
)

Grads = tuple[Node | None, ...]
Rule = Callable[[Node, Node, tuple[bool, ...]], Grads]


class Unsupported(Exception):
    """The op has no gradient rule that this engine can build (e.g. second order of max pooling)."""


def _none(node: Node, g: Node, need: tuple[bool, ...]) -> Grads:
    """Piecewise-constant or integer-valued: the gradient is zero (no contribution)."""
    return tuple(None for _ in node.src)


def _unsupported(reason: str) -> Rule:
    def rule(node: Node, g: Node, need: tuple[bool, ...]) -> Grads:
        raise Unsupported(f"no gradient through {node.op.value}: {reason}")

    return rule


def _elementwise(derivative: Callable[[Node, Node], Node]) -> Rule:
    """Unary rule: g * f'(x), with f'(x) built from the input x and the output y."""
    return lambda node, g, need: (mul(g, derivative(node.src[0], node)),)


def _gelu_derivative(x: Node, y: Node) -> Node:
    assert isinstance(y.arg, d.GeluArg)
    if y.arg.approximate == "tanh":
        c = math.sqrt(2 / math.pi)
        x2 = mul(x, x)
        t = unary(Op.TANH, scale(add(x, scale(mul(x2, x), 0.044715)), c))
        one_minus_t2 = sub(const(1.0), mul(t, t))
        inner = scale(add(const(1.0), scale(x2, 3 * 0.044715)), c)
        return add(scale(add(const(1.0), t), 0.5), mul(scale(x, 0.5), mul(one_minus_t2, inner)))
    cdf = scale(add(const(1.0), unary(Op.ERF, scale(x, 1 / math.sqrt(2)))), 0.5)
    pdf = scale(unary(Op.EXP, scale(mul(x, x), -0.5)), 1 / math.sqrt(2 * math.pi))
    return add(cdf, mul(x, pdf))


UNARY_DERIVATIVES: dict[Op, Callable[[Node, Node], Node]] = {
    Op.NEG: lambda x, y: const(-1.0),
    Op.EXP: lambda x, y: y,
    Op.EXPM1: lambda x, y: unary(Op.EXP, x),
    Op.LOG: lambda x, y: div(const(1.0), x),
    Op.SQRT: lambda x, y: div(const(0.5), y),
    Op.RSQRT: lambda x, y: scale(mul(mul(y, y), y), -0.5),
    Op.ABS: lambda x, y: unary(Op.SIGN, x),
    Op.RELU: lambda x, y: cast(less(const(0.0), y), DType.F32),  # the output: x itself need not be kept
    Op.LEAKY_RELU: lambda x, y: where(less(x, const(0.0)), const(y.arg.alpha), const(1.0)),  # type: ignore[attr-defined]
    Op.GELU: _gelu_derivative,
    Op.TANH: lambda x, y: sub(const(1.0), mul(y, y)),
    Op.SIGMOID: lambda x, y: mul(y, sub(const(1.0), y)),
    Op.ERF: lambda x, y: scale(unary(Op.EXP, unary(Op.NEG, mul(x, x))), 2 / math.sqrt(math.pi)),
    Op.COS: lambda x, y: unary(Op.NEG, unary(Op.SIN, x)),
    Op.SIN: lambda x, y: unary(Op.COS, x),
}


def _max_parts(b_wins: Node, g: Node) -> tuple[Node, Node]:
    """Ties go to the first operand."""
    return where(b_wins, const(0.0), g), where(b_wins, g, const(0.0))


# (output y, cotangent g, a, b) -> the cotangents of a and b before unbroadcasting
BINARY_PARTS: dict[Op, Callable[[Node, Node, Node, Node], tuple[Node, Node]]] = {
    Op.ADD: lambda y, g, a, b: (g, g),
    Op.SUB: lambda y, g, a, b: (g, unary(Op.NEG, g)),
    Op.MUL: lambda y, g, a, b: (mul(g, b), mul(g, a)),
    Op.DIV: lambda y, g, a, b: (div(g, b), unary(Op.NEG, div(mul(g, y), b))),
    Op.POW: lambda y, g, a, b: (
        mul(g, mul(b, make(Op.POW, a, sub(b, const(1.0))))),
        mul(g, mul(y, unary(Op.LOG, a))),
    ),
    Op.MAXIMUM: lambda y, g, a, b: _max_parts(less(a, b), g),
    Op.MINIMUM: lambda y, g, a, b: _max_parts(less(b, a), g),
}


def _binary(op: Op) -> Rule:
    def rule(node: Node, g: Node, need: tuple[bool, ...]) -> Grads:
        a, b = node.src
        ga, gb = BINARY_PARTS[op](node, g, a, b)
        return (unbroadcast(ga, a.shape) if need[0] else None, unbroadcast(gb, b.shape) if need[1] else None)

    return rule


def _where(node: Node, g: Node, need: tuple[bool, ...]) -> Grads:
    cond, a, b = node.src
    zero = const(0.0)
    return (
        None,
        unbroadcast(where(cond, g, zero), a.shape) if need[1] else None,
        unbroadcast(where(cond, zero, g), b.shape) if need[2] else None,
    )


def _spread(node: Node, g: Node) -> Node:
    """A reduction's cotangent broadcast back over the reduced axes."""
    x = node.src[0]
    assert isinstance(node.arg, d.ReduceArg)
    return expand(reshape(g, keepdims_shape(x, node.arg.axes)), x.shape)


def _reduce(op: Op) -> Rule:
    def rule(node: Node, g: Node, need: tuple[bool, ...]) -> Grads:
        x = node.src[0]
        assert isinstance(node.arg, d.ReduceArg)
        spread = _spread(node, g)
        count = math.prod(x.shape[a] for a in node.arg.axes)
        if op is Op.SUM:
            return (spread,)
        if op is Op.MEAN:
            return (scale(spread, 1 / count),)
        if op is Op.VAR:
            mean = reduce(Op.MEAN, x, node.arg.axes, keepdims=True)
            return (mul(spread, scale(sub(x, mean), 2 / (count - node.arg.correction))),)
        # MAX: shared equally by tied maxima
        top = expand(reshape(node, keepdims_shape(x, node.arg.axes)), x.shape)
        hits = cast(make(Op.EQUAL, x, top), DType.F32)
        ties = reduce(Op.SUM, hits, node.arg.axes, keepdims=True)
        return (mul(spread, div(hits, ties)),)

    return rule


def _matmul(node: Node, g: Node, need: tuple[bool, ...]) -> Grads:
    a, b = node.src
    assert isinstance(node.arg, d.MatmulArg)
    ta, tb = node.arg.transpose_a, node.arg.transpose_b
    mm = lambda x, y, t1, t2: make(Op.MATMUL, x, y, arg=d.MatmulArg(t1, t2))  # noqa: E731
    if not ta and not tb:
        da, db = mm(g, b, False, True), mm(a, g, True, False)
    elif ta and not tb:
        da, db = mm(b, g, False, True), mm(a, g, False, False)
    elif tb and not ta:
        da, db = mm(g, b, False, False), mm(g, a, True, False)
    else:
        da, db = mm(b, g, True, True), mm(g, a, True, True)
    if need[1] and len(b.shape) == 2 and len(a.shape) > 2 and not ta:
        db = _shared_weight_grad(a, g, tb)
    return (unbroadcast(da, a.shape) if need[0] else None, unbroadcast(db, b.shape) if need[1] else None)


def _shared_weight_grad(a: Node, g: Node, tb: bool) -> Node:
    """The gradient of a 2-D matrix b that every batch of `a` [..., M, K] is multiplied by (a linear
    layer on a sequence): the batch axes folded into the rows, one matmul sums the products of every
    batch, instead of a [batch, K, N] stack of per-batch products summed afterwards."""
    rows = math.prod(a.shape[:-1])
    a2, g2 = reshape(a, (rows, a.shape[-1])), reshape(g, (rows, g.shape[-1]))
    arg = d.MatmulArg(True, False)
    return make(Op.MATMUL, g2, a2, arg=arg) if tb else make(Op.MATMUL, a2, g2, arg=arg)


def _solve(node: Node, g: Node, need: tuple[bool, ...]) -> Grads:
    """x = a^-1 b: gb = a^-T g, and ga = -gb x^T (both need gb)."""
    a, _ = node.src
    swap = d.PermuteArg((*range(len(a.shape) - 2), len(a.shape) - 1, len(a.shape) - 2))
    gb = make(Op.SOLVE, make(Op.PERMUTE, a, arg=swap), g)
    ga = unary(Op.NEG, make(Op.MATMUL, gb, node, arg=d.MatmulArg(transpose_b=True))) if need[0] else None
    return (ga, gb if need[1] else None)


def _conv2d(node: Node, g: Node, need: tuple[bool, ...]) -> Grads:
    x, w = node.src
    assert isinstance(node.arg, d.ConvArg)
    return (
        make(Op.CONV2D_GRAD_INPUT, g, w, arg=d.ConvGradArg(node.arg, x.shape)) if need[0] else None,
        make(Op.CONV2D_GRAD_WEIGHT, x, g, arg=d.ConvGradArg(node.arg, w.shape)) if need[1] else None,
    )


def _conv2d_grad_input(node: Node, g: Node, need: tuple[bool, ...]) -> Grads:
    g0, w = node.src  # node = A_w^T g0: bilinear in (g0, w)
    assert isinstance(node.arg, d.ConvGradArg)
    return (
        make(Op.CONV2D, g, w, arg=node.arg.conv) if need[0] else None,
        make(Op.CONV2D_GRAD_WEIGHT, g, g0, arg=d.ConvGradArg(node.arg.conv, w.shape)) if need[1] else None,
    )


def _conv2d_grad_weight(node: Node, g: Node, need: tuple[bool, ...]) -> Grads:
    x, g0 = node.src
    assert isinstance(node.arg, d.ConvGradArg)
    return (
        make(Op.CONV2D_GRAD_INPUT, g0, g, arg=d.ConvGradArg(node.arg.conv, x.shape)) if need[0] else None,
        make(Op.CONV2D, x, g, arg=node.arg.conv) if need[1] else None,
    )


def _pool(op: Op) -> Rule:
    def rule(node: Node, g: Node, need: tuple[bool, ...]) -> Grads:
        x = node.src[0]
        assert isinstance(node.arg, d.PoolArg)
        arg = d.PoolGradArg(node.arg, x.shape)
        if op is Op.MAX_POOL2D:
            return (make(Op.MAX_POOL2D_GRAD, x, g, arg=arg),)
        return (make(Op.AVG_POOL2D_GRAD, g, arg=arg),)

    return rule


def _avg_pool_grad(node: Node, g: Node, need: tuple[bool, ...]) -> Grads:
    assert isinstance(node.arg, d.PoolGradArg)
    return (make(Op.AVG_POOL2D, g, arg=node.arg.pool),)


def _softmax(node: Node, g: Node, need: tuple[bool, ...]) -> Grads:
    assert isinstance(node.arg, d.AxisArg)
    inner = reduce(Op.SUM, mul(g, node), (node.arg.axis,), keepdims=True)
    return (mul(node, sub(g, inner)),)


def _log_softmax(node: Node, g: Node, need: tuple[bool, ...]) -> Grads:
    assert isinstance(node.arg, d.AxisArg)
    total = reduce(Op.SUM, g, (node.arg.axis,), keepdims=True)
    return (sub(g, mul(unary(Op.EXP, node), total)),)


def _movement(node: Node, g: Node, need: tuple[bool, ...]) -> Grads:
    x = node.src[0]
    arg = node.arg
    if node.op is Op.EXPAND:
        return (unbroadcast(g, x.shape),)
    if node.op is Op.RESHAPE:
        return (reshape(g, x.shape),)
    if node.op is Op.PERMUTE:
        assert isinstance(arg, d.PermuteArg)
        inverse = tuple(sorted(range(len(arg.perm)), key=lambda i: arg.perm[i]))
        return (make(Op.PERMUTE, g, arg=d.PermuteArg(inverse)),)
    if node.op is Op.SLICE:
        assert isinstance(arg, d.SliceArg)
        return (make(Op.SLICE_GRAD, g, arg=d.SliceGradArg(x.shape, arg.starts, arg.stops, arg.steps)),)
    assert isinstance(arg, d.SliceGradArg)
    return (make(Op.SLICE, g, arg=d.SliceArg(arg.starts, arg.stops, arg.steps)),)


def _concat(node: Node, g: Node, need: tuple[bool, ...]) -> Grads:
    assert isinstance(node.arg, d.AxisArg)
    axis, start = node.arg.axis, 0
    out: list[Node | None] = []
    for x, wanted in zip(node.src, need, strict=True):
        stop = start + x.shape[axis]
        if wanted:
            starts = tuple(start if i == axis else 0 for i in range(len(g.shape)))
            stops = tuple(stop if i == axis else dim for i, dim in enumerate(g.shape))
            out.append(make(Op.SLICE, g, arg=d.SliceArg(starts, stops, (1,) * len(g.shape))))
        else:
            out.append(None)
        start = stop
    return tuple(out)


def _gather(node: Node, g: Node, need: tuple[bool, ...]) -> Grads:
    table, indices = node.src
    return (make(Op.SCATTER_ADD, indices, g, arg=d.RowsArg(table.shape[0])), None)


def _scatter_add(node: Node, g: Node, need: tuple[bool, ...]) -> Grads:
    indices, _ = node.src
    return (None, make(Op.GATHER, g, indices))


def _nf4_matmul(node: Node, g: Node, need: tuple[bool, ...]) -> Grads:
    """x's gradient is g times the same packed weight the other way round; the packed weight is frozen
    (integer words): it gets none."""
    arg = node.arg
    assert isinstance(arg, d.Nf4MatmulArg)
    other = d.Nf4MatmulArg(arg.rows, arg.cols, not arg.transpose)
    return (make(Op.NF4_MATMUL, g, node.src[1], arg=other) if need[0] else None, None)


def _sort(node: Node, g: Node, need: tuple[bool, ...]) -> Grads:
    """out[rank(i)] = x[i]: x[i] gets g[rank(i)], the ranks held fixed (they change only where keys tie)."""
    assert isinstance(node.arg, d.AxisArg)
    return (make(Op.SORT_GRAD, node.src[0], g, arg=node.arg),)


def _sort_grad(node: Node, g: Node, need: tuple[bool, ...]) -> Grads:
    """gx[i] = g0[rank(i)] is linear in g0 with ranks piecewise constant in x: x gets nothing. g0 would get
    h[r] = g[rank^-1(r)], g arranged in x's sorted order; no op builds that permutation."""
    if need[1]:
        raise Unsupported("no gradient through sort_grad: second-order gradients of sort are not supported")
    return (None, None)


def _shift2d(node: Node, g: Node, need: tuple[bool, ...]) -> Grads:
    """out[i, j] reads x[i + s]: x[i, j] gets g[i - s], the shift the other way (none for the shift)."""
    _, shift = node.src
    return (make(Op.SHIFT2D, g, sub(const(0, DType.I32), shift)) if need[0] else None, None)


def _flip_last(node: Node, g: Node, need: tuple[bool, ...]) -> Grads:
    """Reversing is its own adjoint."""
    return (make(Op.FLIP_LAST, g, node.src[1]) if need[0] else None, None)


def _cast(node: Node, g: Node, need: tuple[bool, ...]) -> Grads:
    x = node.src[0]
    return (g if x.dtype.is_float and node.dtype.is_float else None,)


VJP: dict[Op, Rule] = {
    Op.INPUT: _none,
    Op.CONST: _none,
    Op.CAST: _cast,
    **{op: _elementwise(f) for op, f in UNARY_DERIVATIVES.items()},
    Op.SIGN: _none,
    Op.FLOOR: _none,
    Op.IS_FINITE: _none,
    **{op: _binary(op) for op in BINARY_PARTS},
    Op.LESS: _none,
    Op.EQUAL: _none,
    Op.WHERE: _where,
    **{op: _reduce(op) for op in d.REDUCE},
    Op.ARGMAX: _none,
    Op.EXPAND: _movement,
    Op.RESHAPE: _movement,
    Op.PERMUTE: _movement,
    Op.SLICE: _movement,
    Op.SLICE_GRAD: _movement,
    Op.CONCAT: _concat,
    Op.MATMUL: _matmul,
    Op.SOLVE: _solve,
    Op.CONV2D: _conv2d,
    Op.CONV2D_GRAD_INPUT: _conv2d_grad_input,
    Op.CONV2D_GRAD_WEIGHT: _conv2d_grad_weight,
    Op.MAX_POOL2D: _pool(Op.MAX_POOL2D),
    Op.AVG_POOL2D: _pool(Op.AVG_POOL2D),
    Op.MAX_POOL2D_GRAD: _unsupported("second-order gradients of max pooling are not supported"),
    Op.AVG_POOL2D_GRAD: _avg_pool_grad,
    Op.SOFTMAX: _softmax,
    Op.LOG_SOFTMAX: _log_softmax,
    Op.GATHER: _gather,
    Op.SCATTER_ADD: _scatter_add,
    Op.ONE_HOT: _none,
    Op.SORT: _sort,
    Op.SORT_GRAD: _sort_grad,
    Op.RANDOM: _none,
    Op.SHIFT2D: _shift2d,
    Op.FLIP_LAST: _flip_last,
    Op.NF4_MATMUL: _nf4_matmul,
    Op.NF4_PACK: _unsupported("quantising is no step of training: a packed weight is frozen"),
    Op.NF4_UNPACK: _none,  # of integer words
}
