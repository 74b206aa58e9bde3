"""Small constructors over `make` that the builders, VJP rules and optimizers read naturally with."""

from __future__ import annotations

from scellis.ops import DType, Node, Op, const, make
from scellis.ops import defs as d

# bound once: these run for every node the builders, rules and optimizers make, and a member's lookup on its
# class is several times slower than a module global's
_ADD, _SUB, _MUL, _DIV = Op.ADD, Op.SUB, Op.MUL, Op.DIV


def add(a: Node, b: Node) -> Node:
    return make(_ADD, a, b)


def sub(a: Node, b: Node) -> Node:
    return make(_SUB, a, b)


def mul(a: Node, b: Node) -> Node:
    return make(_MUL, a, b)


def div(a: Node, b: Node) -> Node:
    return make(_DIV, a, b)


def scale(a: Node, factor: float) -> Node:
    return make(_MUL, a, const(factor))


def unary(op: Op, x: Node) -> Node:
    return make(op, x)


def where(cond: Node, a: Node, b: Node) -> Node:
    return make(Op.WHERE, cond, a, b)


def less(a: Node, b: Node) -> Node:
    return make(Op.LESS, a, b)


def cast(x: Node, to: DType) -> Node:
    return make(Op.CAST, x, arg=d.CastArg(to))


def reshape(x: Node, shape: tuple[int, ...]) -> Node:
    return x if x.shape == shape else make(Op.RESHAPE, x, arg=d.ShapeArg(shape))


def expand(x: Node, shape: tuple[int, ...]) -> Node:
    return x if x.shape == shape else make(Op.EXPAND, x, arg=d.ShapeArg(shape))


def reduce(op: Op, x: Node, axes: tuple[int, ...], keepdims: bool = False) -> Node:
    return make(op, x, arg=d.ReduceArg(tuple(axes), keepdims))


def total(x: Node) -> Node:
    """Sum of all elements, shape ()."""
    return reduce(Op.SUM, x, tuple(range(len(x.shape))))


def zeros(shape: tuple[int, ...]) -> Node:
    return expand(const(0.0), shape)


def unbroadcast(g: Node, shape: tuple[int, ...]) -> Node:
    """Sum `g` over the axes that broadcasting added or stretched, back to `shape`."""
    if g.shape == shape:
        return g
    lead = len(g.shape) - len(shape)
    axes = tuple(range(lead)) + tuple(lead + i for i, dim in enumerate(shape) if dim == 1 and g.shape[lead + i] != 1)
    summed = reduce(Op.SUM, g, axes, keepdims=True) if axes else g
    return reshape(summed, shape)


def keepdims_shape(x: Node, axes: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(1 if i in axes else dim for i, dim in enumerate(x.shape))
