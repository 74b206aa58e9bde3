"""The IR node (one shape for every stage) and each op's shape/dtype rule.

Nodes are immutable and compared by identity: a graph is the set of nodes reachable from its outputs.
`make` is the only way to build a computed node, so every node's type is the one its rule infers.
"""

from __future__ import annotations

import functools
import math
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from scellis.ops import defs, nf4
from scellis.ops.defs import BINARY, COMPARE, REDUCE, UNARY_FLOAT, Op
from scellis.ops.dtypes import DType

Shape = tuple[int, ...]


class ShapeError(ValueError):
    """An op applied to inputs of the wrong shape or dtype, or with an invalid argument.

    `port` is the index of the offending input, or None when the argument is at fault.
    """

    def __init__(self, message: str, port: int | None = None) -> None:
        super().__init__(message)
        self.port = port


class _Release:
    """Sources of released nodes, waiting to be released in turn (see Node.__del__)."""

    def __init__(self) -> None:
        self.pending: list[tuple[Node, ...]] = []
        self.running = False


_RELEASE = _Release()


@dataclass(frozen=True, eq=False, slots=True, weakref_slot=True, init=False)  # slots: quick to read and free
class Node:
    op: Op
    dtype: DType
    shape: Shape
    src: tuple[Node, ...] = ()
    arg: object = field(default_factory=defs.NoArg)

    def __init__(
        self, op: Op, dtype: DType, shape: Shape, src: tuple[Node, ...] = (), arg: object | None = None
    ) -> None:
        # Frozen, so each field is written through its slot's descriptor (bound once, below): dataclasses'
        # own __init__ looks up object.__setattr__ for each, and compiling builds tens of thousands of nodes.
        _set_op(self, op)
        _set_dtype(self, dtype)
        _set_shape(self, shape)
        _set_src(self, src)
        _set_arg(self, defs.NoArg() if arg is None else arg)

    def __repr__(self) -> str:
        return f"Node({self.op.value}, {self.type_str})"

    def __del__(self, release: _Release = _RELEASE) -> None:  # bound here: still there at exit
        # A graph is released one node at a time, not by recursion. Freeing a node frees its sources,
        # theirs, and so on, one C call deeper per node: a few thousand nodes deep, that overflows the
        # browser's stack under Pyodide (a fatal error, not an exception). So a dying node hands its
        # sources to a list, and the outermost release frees them in a loop.
        if self.src:
            release.pending.append(self.src)
            _set_src(self, ())  # this node no longer holds them: nothing cascades
        if not release.running:
            release.running = True
            try:
                while release.pending:
                    release.pending.pop()
            finally:
                release.running = False

    @property
    def type_str(self) -> str:
        return f"{self.dtype.short}[{','.join(map(str, self.shape))}]"

    @property
    def size(self) -> int:
        return math.prod(self.shape)


_set_op, _set_dtype, _set_shape, _set_src, _set_arg = (
    getattr(Node, name).__set__ for name in ("op", "dtype", "shape", "src", "arg")
)

Rule = Callable[[object, tuple[Node, ...]], tuple[DType, Shape]]


def input_node(name: str, role: defs.Role, dtype: DType, shape: Sequence[int]) -> Node:
    shape = tuple(map(int, shape))
    if shape and min(shape) < 1:
        raise ShapeError(f"input {name!r} has a non-positive dimension in {shape}")
    return Node(Op.INPUT, dtype, shape, (), defs.InputArg(name, role))


def const(value: float, dtype: DType = DType.F32) -> Node:
    """A scalar constant (shape ()); broadcasting spreads it. Equal constants are one node, so a
    function holds each constant once (keyed by the exact bits: 0.0 and -0.0 stay apart)."""
    if dtype is not _F32 and not float(value).is_integer():
        raise ShapeError(f"constant {value} is not an integer but the dtype is {dtype.value}")
    return _const(struct.pack("<d", float(value)), dtype)


@functools.cache
def _const(bits: bytes, dtype: DType) -> Node:
    return Node(Op.CONST, dtype, (), (), defs.ConstArg(struct.unpack("<d", bits)[0]))


def make(op: Op, *src: Node, arg: object = None) -> Node:
    """A node for `op` applied to `src`, its dtype and shape inferred (ShapeError if invalid)."""
    made = _MADE.get(op)
    if made is None:
        raise ShapeError(f"{op.value} nodes are not built with make()")
    rule, arg_type = made
    if arg is None:
        arg = _NO_ARG
    if type(arg) is not arg_type:
        raise ShapeError(f"{op.value} takes a {arg_type.__name__}, got {type(arg).__name__}")
    dtype, shape = rule(arg, src)
    return Node(op, dtype, shape, src, arg)


_F32 = DType.F32  # bound once: `const` runs per node, and a member's lookup on its class is slow
_NO_ARG = defs.NoArg()  # arguments are plain data: one NoArg serves every node that takes none


# -- helpers ------------------------------------------------------------------------------------


def _arity(op: Op, src: tuple[Node, ...], n: int) -> None:
    if len(src) != n:
        raise ShapeError(f"{op.value} takes {n} input(s), got {len(src)}")


def _float(op: Op, src: tuple[Node, ...], port: int) -> None:
    if not src[port].dtype.is_float:
        raise ShapeError(f"{op.value} needs a float32 input, got {src[port].dtype.value}", port)


def broadcast_shapes(*shapes: Shape) -> Shape:
    """numpy broadcasting; ShapeError names the first input that does not fit."""
    if len(shapes) == 2:
        return broadcast_pair(*shapes)
    return _broadcast(shapes)


def broadcast_pair(a: Shape, b: Shape) -> Shape:
    """`broadcast_shapes(a, b)`, the common cases (equal shapes, a scalar operand, a trailing match) first."""
    if b in (a, ()):
        return a
    if a == ():
        return b
    if len(b) < len(a) and a[-len(b) :] == b:  # b stretched along leading axes (a bias)
        return a
    return _broadcast((a, b))


def _broadcast(shapes: tuple[Shape, ...]) -> Shape:
    ndim = max(len(s) for s in shapes)
    out = [1] * ndim
    for port, shape in enumerate(shapes):
        for i, d in enumerate(shape, start=ndim - len(shape)):
            if d != out[i] and out[i] != 1 and d != 1:
                raise ShapeError(f"shapes {' and '.join(map(str, shapes))} do not broadcast", port)
            out[i] = max(out[i], d) if d != 1 else out[i]
    return tuple(out)


def _axis(axis: int, ndim: int) -> None:
    if not 0 <= axis < ndim:
        raise ShapeError(f"axis {axis} is out of range for {ndim} dimensions")


def _pair(name: str, values: tuple[int, int], low: int) -> None:
    if len(values) != 2 or any(v < low for v in values):
        raise ShapeError(f"{name} must be two integers >= {low}, got {values}")


def conv_out(size: int, kernel: int, stride: int, pad: int, dilation: int = 1) -> int:
    return (size + 2 * pad - dilation * (kernel - 1) - 1) // stride + 1


# -- rules --------------------------------------------------------------------------------------


def _cast(arg: object, src: tuple[Node, ...]) -> tuple[DType, Shape]:
    _arity(Op.CAST, src, 1)
    assert isinstance(arg, defs.CastArg)
    return arg.to, src[0].shape


def _unary(op: Op) -> Rule:
    gelu = op is Op.GELU

    def rule(arg: object, src: tuple[Node, ...]) -> tuple[DType, Shape]:
        _arity(op, src, 1)
        _float(op, src, 0)
        if gelu and getattr(arg, "approximate", None) not in ("tanh", "none"):
            raise ShapeError("gelu's approximate must be 'tanh' or 'none'")
        return src[0].dtype, src[0].shape

    return rule


def _is_finite(arg: object, src: tuple[Node, ...]) -> tuple[DType, Shape]:
    _arity(Op.IS_FINITE, src, 1)
    _float(Op.IS_FINITE, src, 0)
    return DType.BOOL, src[0].shape


def _binary(op: Op) -> Rule:
    floats_only = op in (Op.DIV, Op.POW)
    compares = op in COMPARE

    boolean, f32 = DType.BOOL, DType.F32  # bound once: a member's lookup on its class is slow, and this runs per node

    def rule(arg: object, src: tuple[Node, ...]) -> tuple[DType, Shape]:
        if len(src) != 2:
            _arity(op, src, 2)
        a, b = src
        dtype = a.dtype
        if dtype is not b.dtype:
            raise ShapeError(f"{op.value} needs inputs of one dtype, got {dtype.value} and {b.dtype.value}", 1)
        if dtype is boolean or (floats_only and dtype is not f32):
            raise ShapeError(f"{op.value} is not defined for {dtype.value}", 0)
        return (boolean if compares else dtype), broadcast_pair(a.shape, b.shape)

    return rule


def _where(arg: object, src: tuple[Node, ...]) -> tuple[DType, Shape]:
    _arity(Op.WHERE, src, 3)
    cond, a, b = src
    if cond.dtype is not DType.BOOL:
        raise ShapeError(f"where's condition must be bool, got {cond.dtype.value}", 0)
    if a.dtype is not b.dtype:
        raise ShapeError(f"where's branches differ in dtype: {a.dtype.value} and {b.dtype.value}", 2)
    return a.dtype, broadcast_shapes(cond.shape, a.shape, b.shape)


def _reduce(op: Op) -> Rule:
    def rule(arg: object, src: tuple[Node, ...]) -> tuple[DType, Shape]:
        _arity(op, src, 1)
        _float(op, src, 0)
        assert isinstance(arg, defs.ReduceArg)
        shape = src[0].shape
        if list(arg.axes) != sorted(set(arg.axes)) or any(not 0 <= a < len(shape) for a in arg.axes):
            raise ShapeError(f"axes {arg.axes} must be sorted, unique and within {len(shape)} dimensions")
        count = math.prod(shape[a] for a in arg.axes)
        if op is Op.VAR and not 0 <= arg.correction < count:
            raise ShapeError(f"var's correction {arg.correction} must be below the {count} values reduced")
        if arg.keepdims:
            return src[0].dtype, tuple(1 if i in arg.axes else d for i, d in enumerate(shape))
        return src[0].dtype, tuple(d for i, d in enumerate(shape) if i not in arg.axes)

    return rule


def _argmax(arg: object, src: tuple[Node, ...]) -> tuple[DType, Shape]:
    _arity(Op.ARGMAX, src, 1)
    _float(Op.ARGMAX, src, 0)
    assert isinstance(arg, defs.AxisArg)
    _axis(arg.axis, len(src[0].shape))
    return DType.I32, tuple(d for i, d in enumerate(src[0].shape) if i != arg.axis)


def _expand(arg: object, src: tuple[Node, ...]) -> tuple[DType, Shape]:
    _arity(Op.EXPAND, src, 1)
    assert isinstance(arg, defs.ShapeArg)
    shape, lead = src[0].shape, len(arg.shape) - len(src[0].shape)
    if lead < 0 or any(t < 1 for t in arg.shape) or any(d not in (1, arg.shape[lead + i]) for i, d in enumerate(shape)):
        raise ShapeError(f"cannot expand {shape} to {arg.shape}", 0)
    return src[0].dtype, arg.shape


def _reshape(arg: object, src: tuple[Node, ...]) -> tuple[DType, Shape]:
    _arity(Op.RESHAPE, src, 1)
    assert isinstance(arg, defs.ShapeArg)
    if any(d < 1 for d in arg.shape) or math.prod(arg.shape) != src[0].size:
        raise ShapeError(f"cannot reshape {src[0].shape} ({src[0].size} values) to {arg.shape}", 0)
    return src[0].dtype, arg.shape


def _permute(arg: object, src: tuple[Node, ...]) -> tuple[DType, Shape]:
    _arity(Op.PERMUTE, src, 1)
    assert isinstance(arg, defs.PermuteArg)
    if sorted(arg.perm) != list(range(len(src[0].shape))):
        raise ShapeError(f"{arg.perm} is not a permutation of {len(src[0].shape)} axes")
    return src[0].dtype, tuple(src[0].shape[p] for p in arg.perm)


def _concat(arg: object, src: tuple[Node, ...]) -> tuple[DType, Shape]:
    if not src:
        raise ShapeError("concat needs at least one input")
    assert isinstance(arg, defs.AxisArg)
    first = src[0]
    _axis(arg.axis, len(first.shape))
    for port, x in enumerate(src):
        if x.dtype is not first.dtype:
            raise ShapeError(f"concat inputs differ in dtype: {first.dtype.value} and {x.dtype.value}", port)
        if len(x.shape) != len(first.shape) or any(
            d != e for i, (d, e) in enumerate(zip(x.shape, first.shape, strict=True)) if i != arg.axis
        ):
            raise ShapeError(f"concat along axis {arg.axis}: {x.shape} does not fit {first.shape}", port)
    total = sum(x.shape[arg.axis] for x in src)
    return first.dtype, first.shape[: arg.axis] + (total,) + first.shape[arg.axis + 1 :]


def sliced_shape(shape: Shape, starts: Shape, stops: Shape, steps: Shape) -> Shape:
    if not len(starts) == len(stops) == len(steps) == len(shape):
        raise ShapeError(f"slice needs a start, stop and step for each of {len(shape)} axes")
    out = []
    for axis, (d, a, b, s) in enumerate(zip(shape, starts, stops, steps, strict=True)):
        if s < 1 or not 0 <= a < b <= d:
            raise ShapeError(f"axis {axis}: slice {a}:{b}:{s} is not within 0..{d} with a positive step")
        out.append(-(-(b - a) // s))
    return tuple(out)


def _slice(arg: object, src: tuple[Node, ...]) -> tuple[DType, Shape]:
    _arity(Op.SLICE, src, 1)
    assert isinstance(arg, defs.SliceArg)
    return src[0].dtype, sliced_shape(src[0].shape, arg.starts, arg.stops, arg.steps)


def _slice_grad(arg: object, src: tuple[Node, ...]) -> tuple[DType, Shape]:
    _arity(Op.SLICE_GRAD, src, 1)
    assert isinstance(arg, defs.SliceGradArg)
    if sliced_shape(arg.shape, arg.starts, arg.stops, arg.steps) != src[0].shape:
        raise ShapeError(f"gradient of shape {src[0].shape} does not match the slice of {arg.shape}", 0)
    return src[0].dtype, arg.shape


def _matmul(arg: object, src: tuple[Node, ...]) -> tuple[DType, Shape]:
    _arity(Op.MATMUL, src, 2)
    assert isinstance(arg, defs.MatmulArg)
    a, b = src
    for port in (0, 1):
        _float(Op.MATMUL, src, port)
        if len(src[port].shape) < 2:
            raise ShapeError(f"matmul needs at least 2 dimensions, got {src[port].shape}", port)
    m, k = a.shape[-1:-3:-1] if arg.transpose_a else a.shape[-2:]
    k2, n = b.shape[-1:-3:-1] if arg.transpose_b else b.shape[-2:]
    if k != k2:
        raise ShapeError(f"matmul: inner dimensions differ ({a.shape} @ {b.shape}, k={k} vs {k2})", 1)
    return a.dtype, broadcast_pair(a.shape[:-2], b.shape[:-2]) + (m, n)


def _solve(arg: object, src: tuple[Node, ...]) -> tuple[DType, Shape]:
    _arity(Op.SOLVE, src, 2)
    a, b = src
    for port in (0, 1):
        _float(Op.SOLVE, src, port)
        if len(src[port].shape) < 2:
            raise ShapeError(f"solve needs at least 2 dimensions, got {src[port].shape}", port)
    if a.shape[-1] != a.shape[-2]:
        raise ShapeError(f"solve: a must be square in its last two axes, got {a.shape}", 0)
    if b.shape[-2] != a.shape[-1]:
        raise ShapeError(f"solve: b {b.shape} must have the {a.shape[-1]} rows of a {a.shape}", 1)
    if a.shape[:-2] != b.shape[:-2]:
        raise ShapeError(f"solve: a {a.shape} and b {b.shape} must have equal batch axes (no broadcasting)", 1)
    return b.dtype, b.shape


def _check_conv(arg: defs.ConvArg, x: Shape, w: Shape) -> Shape:
    _pair("stride", arg.stride, 1)
    _pair("padding", arg.padding, 0)
    _pair("dilation", arg.dilation, 1)
    if len(x) != 4:
        raise ShapeError(f"conv2d input must be NCHW (4 dimensions), got {x}", 0)
    if len(w) != 4:
        raise ShapeError(f"conv2d weight must be OIHW (4 dimensions), got {w}", 1)
    g = arg.groups
    if g < 1 or x[1] % g or w[0] % g or w[1] != x[1] // g:
        raise ShapeError(f"conv2d: {x[1]} input channels, weight {w} and groups={g} do not fit", 1)
    oh, ow = (conv_out(x[2 + i], w[2 + i], arg.stride[i], arg.padding[i], arg.dilation[i]) for i in (0, 1))
    if oh < 1 or ow < 1:
        raise ShapeError(f"conv2d: a {w[2]}x{w[3]} kernel does not fit the padded {x[2]}x{x[3]} input", 0)
    return (x[0], w[0], oh, ow)


def _conv2d(arg: object, src: tuple[Node, ...]) -> tuple[DType, Shape]:
    _arity(Op.CONV2D, src, 2)
    _float(Op.CONV2D, src, 0)
    _float(Op.CONV2D, src, 1)
    assert isinstance(arg, defs.ConvArg)
    return src[0].dtype, _check_conv(arg, src[0].shape, src[1].shape)


def _conv_grad(op: Op) -> Rule:
    def rule(arg: object, src: tuple[Node, ...]) -> tuple[DType, Shape]:
        _arity(op, src, 2)
        _float(op, src, 0)
        _float(op, src, 1)
        assert isinstance(arg, defs.ConvGradArg)
        # _check_conv numbers its ports (x=0, w=1); here one of them comes from the argument.
        if op is Op.CONV2D_GRAD_INPUT:
            g, w = src
            ports = {0: None, 1: 1}
            shapes = (arg.shape, w.shape)
        else:
            x, g = src
            ports = {0: 0, 1: None}
            shapes = (x.shape, arg.shape)
        try:
            expected = _check_conv(arg.conv, *shapes)
        except ShapeError as err:
            raise ShapeError(str(err), ports.get(err.port) if err.port is not None else None) from err
        g_port = 0 if op is Op.CONV2D_GRAD_INPUT else 1
        if g.shape != expected:
            raise ShapeError(f"{op.value}: gradient shape {g.shape}, expected {expected}", g_port)
        return g.dtype, arg.shape

    return rule


def pooled_shape(arg: defs.PoolArg, x: Shape) -> Shape:
    _pair("kernel", arg.kernel, 1)
    _pair("stride", arg.stride, 1)
    _pair("padding", arg.padding, 0)
    if len(x) != 4:
        raise ShapeError(f"pooling input must be NCHW (4 dimensions), got {x}", 0)
    if any(2 * p > k for p, k in zip(arg.padding, arg.kernel, strict=True)):
        raise ShapeError(f"padding {arg.padding} must be at most half the kernel {arg.kernel}")
    oh, ow = (conv_out(x[2 + i], arg.kernel[i], arg.stride[i], arg.padding[i]) for i in (0, 1))
    if oh < 1 or ow < 1:
        raise ShapeError(f"a {arg.kernel} window does not fit the padded {x[2]}x{x[3]} input", 0)
    return (x[0], x[1], oh, ow)


def _pool(op: Op) -> Rule:
    def rule(arg: object, src: tuple[Node, ...]) -> tuple[DType, Shape]:
        _arity(op, src, 1)
        _float(op, src, 0)
        assert isinstance(arg, defs.PoolArg)
        return src[0].dtype, pooled_shape(arg, src[0].shape)

    return rule


def _pool_grad(op: Op) -> Rule:
    def rule(arg: object, src: tuple[Node, ...]) -> tuple[DType, Shape]:
        _arity(op, src, 2 if op is Op.MAX_POOL2D_GRAD else 1)
        for port in range(len(src)):
            _float(op, src, port)
        assert isinstance(arg, defs.PoolGradArg)
        g = src[-1]
        if op is Op.MAX_POOL2D_GRAD and src[0].shape != arg.shape:
            raise ShapeError(f"max_pool2d_grad: input {src[0].shape} differs from {arg.shape}", 0)
        if g.shape != pooled_shape(arg.pool, arg.shape):
            raise ShapeError(f"{op.value}: gradient {g.shape} does not match pooling {arg.shape}", len(src) - 1)
        return g.dtype, arg.shape

    return rule


def _softmax(op: Op) -> Rule:
    def rule(arg: object, src: tuple[Node, ...]) -> tuple[DType, Shape]:
        _arity(op, src, 1)
        _float(op, src, 0)
        assert isinstance(arg, defs.AxisArg)
        _axis(arg.axis, len(src[0].shape))
        return src[0].dtype, src[0].shape

    return rule


def _int_indices(op: Op, node: Node, port: int) -> None:
    if node.dtype is not DType.I32:
        raise ShapeError(f"{op.value} needs int32 indices, got {node.dtype.value}", port)


def _gather(arg: object, src: tuple[Node, ...]) -> tuple[DType, Shape]:
    _arity(Op.GATHER, src, 2)
    table, indices = src
    _int_indices(Op.GATHER, indices, 1)
    if table.dtype not in (DType.F32, DType.I32):  # rows are copied: floats, or int32 labels and tokens
        raise ShapeError(f"gather needs a float32 or int32 table, got {table.dtype.value}", 0)
    if not table.shape:
        raise ShapeError("gather's table needs at least one dimension", 0)
    return table.dtype, indices.shape + table.shape[1:]


def _scatter_add(arg: object, src: tuple[Node, ...]) -> tuple[DType, Shape]:
    _arity(Op.SCATTER_ADD, src, 2)
    assert isinstance(arg, defs.RowsArg)
    indices, g = src
    _int_indices(Op.SCATTER_ADD, indices, 0)
    _float(Op.SCATTER_ADD, src, 1)
    if arg.rows < 1:
        raise ShapeError(f"scatter_add needs at least one row, got {arg.rows}")
    if g.shape[: len(indices.shape)] != indices.shape:
        raise ShapeError(f"scatter_add: values {g.shape} must start with the indices' shape {indices.shape}", 1)
    return g.dtype, (arg.rows,) + g.shape[len(indices.shape) :]


def _one_hot(arg: object, src: tuple[Node, ...]) -> tuple[DType, Shape]:
    _arity(Op.ONE_HOT, src, 1)
    assert isinstance(arg, defs.ClassesArg)
    _int_indices(Op.ONE_HOT, src[0], 0)
    if arg.classes < 1:
        raise ShapeError(f"one_hot needs at least one class, got {arg.classes}")
    return DType.F32, src[0].shape + (arg.classes,)


def _sort(op: Op) -> Rule:
    """SORT (x) and SORT_GRAD (x, g): float32 inputs of one shape, ordered along an axis of it."""

    def rule(arg: object, src: tuple[Node, ...]) -> tuple[DType, Shape]:
        _arity(op, src, 1 if op is Op.SORT else 2)
        for port in range(len(src)):
            _float(op, src, port)
        assert isinstance(arg, defs.AxisArg)
        _axis(arg.axis, len(src[0].shape))
        if op is Op.SORT_GRAD and src[1].shape != src[0].shape:
            raise ShapeError(f"sort_grad: gradient {src[1].shape} must have the shape of x {src[0].shape}", 1)
        return src[0].dtype, src[0].shape

    return rule


def _random(arg: object, src: tuple[Node, ...]) -> tuple[DType, Shape]:
    _arity(Op.RANDOM, src, 2)
    assert isinstance(arg, defs.RandomArg)
    key, position = src
    if key.dtype is not DType.U32 or key.shape != (2,):
        raise ShapeError(f"random's key must be u32[2], got {key.type_str}", 0)
    if position.dtype is not DType.U32 or position.shape != ():
        raise ShapeError(f"random's position must be a u32 scalar, got {position.type_str}", 1)
    if any(d < 1 for d in arg.shape) or not 0 <= arg.p < 1 or not 0 <= arg.site < 2**32:
        raise ShapeError(f"random: shape {arg.shape}, p={arg.p} and site={arg.site} must be valid")
    if arg.distribution is defs.Distribution.INTEGER:
        if not 1 <= arg.n <= 2**31:
            raise ShapeError(f"random integers in [0, n) need 1 <= n <= 2**31 (int32), got n={arg.n}")
        return DType.I32, arg.shape
    return (DType.BOOL if arg.distribution is defs.Distribution.BERNOULLI else DType.F32), arg.shape


def _per_example(op: Op, src: tuple[Node, ...], axes: int, dtype: DType, columns: Shape) -> tuple[DType, Shape]:
    """The per-example movement ops: x, a float tensor of at least `axes` axes whose first is the batch,
    and a `dtype` control input of shape [N, *columns]; the output has x's type."""
    _arity(op, src, 2)
    _float(op, src, 0)
    x, control = src
    if len(x.shape) < axes:
        raise ShapeError(f"{op.value} needs a batch axis and {axes - 1} more, got {x.shape}", 0)
    expected = (x.shape[0], *columns)
    if control.dtype is not dtype or control.shape != expected:
        wanted = f"{dtype.short}[{','.join(map(str, expected))}]"
        raise ShapeError(f"{op.value}'s second input must be {wanted} (one row per example), got {control.type_str}", 1)
    return x.dtype, x.shape


def _nf4_shape(op: Op, arg: object) -> tuple[int, int]:
    assert isinstance(arg, defs.Nf4Arg | defs.Nf4MatmulArg)
    problem = nf4.check_shape(arg.rows, arg.cols)
    if problem:
        raise ShapeError(f"{op.value}: {problem}")
    return arg.rows, arg.cols


def _packed(op: Op, src: tuple[Node, ...], port: int, rows: int, cols: int) -> None:
    want = (nf4.words(rows, cols),)
    if src[port].dtype is not DType.U32 or src[port].shape != want:
        got = f"{src[port].dtype.value} {src[port].shape}"
        raise ShapeError(f"{op.value} needs the packed u32 {want} of a [{rows}, {cols}] weight, got {got}", port)


def _nf4_pack(arg: object, src: tuple[Node, ...]) -> tuple[DType, Shape]:
    _arity(Op.NF4_PACK, src, 1)
    rows, cols = _nf4_shape(Op.NF4_PACK, arg)
    if src[0].dtype is not DType.F32 or src[0].shape != (rows, cols):
        raise ShapeError(
            f"nf4_pack needs a float32 [{rows}, {cols}] weight, got {src[0].dtype.value} {src[0].shape}", 0
        )
    return DType.U32, (nf4.words(rows, cols),)


def _nf4_unpack(arg: object, src: tuple[Node, ...]) -> tuple[DType, Shape]:
    _arity(Op.NF4_UNPACK, src, 1)
    rows, cols = _nf4_shape(Op.NF4_UNPACK, arg)
    _packed(Op.NF4_UNPACK, src, 0, rows, cols)
    return DType.F32, (rows, cols)


def _nf4_matmul(arg: object, src: tuple[Node, ...]) -> tuple[DType, Shape]:
    _arity(Op.NF4_MATMUL, src, 2)
    rows, cols = _nf4_shape(Op.NF4_MATMUL, arg)
    assert isinstance(arg, defs.Nf4MatmulArg)
    _float(Op.NF4_MATMUL, src, 0)
    _packed(Op.NF4_MATMUL, src, 1, rows, cols)
    x = src[0]
    k, n = (rows, cols) if arg.transpose else (cols, rows)
    if not x.shape or x.shape[-1] != k:
        raise ShapeError(f"nf4_matmul needs x [..., {k}] for a [{rows}, {cols}] weight, got {x.shape}", 0)
    return DType.F32, (*x.shape[:-1], n)


RULES: dict[Op, Rule] = {
    Op.CAST: _cast,
    **{op: _unary(op) for op in UNARY_FLOAT},
    Op.IS_FINITE: _is_finite,
    **{op: _binary(op) for op in BINARY},
    Op.WHERE: _where,
    **{op: _reduce(op) for op in REDUCE},
    Op.ARGMAX: _argmax,
    Op.EXPAND: _expand,
    Op.RESHAPE: _reshape,
    Op.PERMUTE: _permute,
    Op.CONCAT: _concat,
    Op.SLICE: _slice,
    Op.SLICE_GRAD: _slice_grad,
    Op.MATMUL: _matmul,
    Op.SOLVE: _solve,
    Op.CONV2D: _conv2d,
    Op.CONV2D_GRAD_INPUT: _conv_grad(Op.CONV2D_GRAD_INPUT),
    Op.CONV2D_GRAD_WEIGHT: _conv_grad(Op.CONV2D_GRAD_WEIGHT),
    Op.MAX_POOL2D: _pool(Op.MAX_POOL2D),
    Op.AVG_POOL2D: _pool(Op.AVG_POOL2D),
    Op.MAX_POOL2D_GRAD: _pool_grad(Op.MAX_POOL2D_GRAD),
    Op.AVG_POOL2D_GRAD: _pool_grad(Op.AVG_POOL2D_GRAD),
    Op.SOFTMAX: _softmax(Op.SOFTMAX),
    Op.LOG_SOFTMAX: _softmax(Op.LOG_SOFTMAX),
    Op.GATHER: _gather,
    Op.SCATTER_ADD: _scatter_add,
    Op.ONE_HOT: _one_hot,
    Op.SORT: _sort(Op.SORT),
    Op.SORT_GRAD: _sort(Op.SORT_GRAD),
    Op.RANDOM: _random,
    Op.SHIFT2D: lambda arg, src: _per_example(Op.SHIFT2D, src, 3, DType.I32, (2,)),
    Op.FLIP_LAST: lambda arg, src: _per_example(Op.FLIP_LAST, src, 2, DType.BOOL, ()),
    Op.NF4_PACK: _nf4_pack,
    Op.NF4_UNPACK: _nf4_unpack,
    Op.NF4_MATMUL: _nf4_matmul,
}

_MADE: dict[Op, tuple[Rule, type]] = {op: (rule, defs.ARG_TYPES[op]) for op, rule in RULES.items()}  # `make`'s
