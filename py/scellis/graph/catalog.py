"""The drawn ops: their ports, their parameters and how each lowers to IR. One source of truth: the
validator checks against it, the IR is built from it, and the app's node palette is generated from it.

Conventions: every op has one output port, `out`. Programs describe one example; the batch axis is
axis 0 of every tensor, in front of the shapes a program states. `axis`/`axes` parameters count all
axes, batch included (negative counts from the end); reshape, flatten, permute and slice act on the
axes of one example and keep the batch axis.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from scellis.graph.building import Builder, Init, Mode
from scellis.graph.params import REQUIRED, Param
from scellis.ops import DType, Node, Op, ShapeError, const, make, nf4
from scellis.ops import defs as d
from scellis.ops.build import add, cast, expand, mul, reduce, reshape, scale, sub, unary, where

Inputs = dict[str, Any]  # port -> Node, or list[Node] for ports taking several edges
Build = Callable[[Builder, str, dict[str, Any], Inputs], Node]


@dataclass(frozen=True)
class Port:
    name: str
    kind: str  # "float", "int", "bool" or "any"
    multiple: bool = False  # takes one or more edges, in edge order


@dataclass(frozen=True)
class OpSpec:
    name: str
    category: str
    doc: str
    inputs: tuple[Port, ...]
    params: tuple[Param, ...]
    build: Build

    def describe(self) -> dict[str, Any]:
        """JSON-ready, for the app's palette."""
        return {
            "name": self.name,
            "category": self.category,
            "doc": self.doc,
            "inputs": [{"name": p.name, "kind": p.kind, "multiple": p.multiple} for p in self.inputs],
            "outputs": [{"name": "out"}],
            "params": [p.describe() for p in self.params],
        }


def _axis(axis: int, ndim: int) -> int:
    if not -ndim <= axis < ndim:
        raise ShapeError(f"axis {axis} is out of range for a tensor of {ndim} dimensions")
    return axis % ndim


def _batched(op: str, inp: Node) -> Node:
    """`inp`, checked to have the batch axis that the shape ops keep (a constant is a scalar: it has none)."""
    if not inp.shape:
        raise ShapeError(f"{op} acts on the axes of each example, but its input is a scalar without a batch axis", 0)
    return inp


def _axes(axes: tuple[int, ...] | None, ndim: int) -> tuple[int, ...]:
    if axes is None:
        return tuple(range(ndim))
    normal = sorted({_axis(a, ndim) for a in axes})
    if len(normal) != len(axes):
        raise ShapeError(f"axes {list(axes)} name one axis twice")
    return tuple(normal)


# -- parameters shared by several ops ------------------------------------------------------------

TRAINABLE = Param("trainable", "bool", True, doc="false freezes the node's parameters: no gradient work")
BIAS = Param("bias", "bool", True, doc="add a learned bias")
AXIS = Param("axis", "int", -1, doc="axis, batch axis included; negative counts from the end")
REDUCTION = Param("reduction", "str", "mean", choices=("mean", "sum"), doc="mean or sum over the batch")


def _fan_in_uniform(fan_in: int) -> Init:
    return Init("uniform", 1 / math.sqrt(fan_in))


# -- builders ------------------------------------------------------------------------------------


def _input(ctx: Builder, nid: str, p: dict[str, Any], x: Inputs) -> Node:
    dtype = DType(p["dtype"])
    role = d.Role.LABEL if p["role"] == "labels" else d.Role.DATA
    return ctx.data(nid, role, dtype, p["shape"])


def _linear(ctx: Builder, nid: str, p: dict[str, Any], x: Inputs) -> Node:
    inp = x["x"]
    if len(inp.shape) < 2:
        raise ShapeError(f"linear needs at least one feature axis after the batch axis, got {inp.shape}", 0)
    fan_in = inp.shape[-1]
    init = _fan_in_uniform(fan_in)
    w = ctx.param(nid, "weight", (fan_in, p["features"]), init, p["trainable"])
    out = make(Op.MATMUL, inp, w, arg=d.MatmulArg())
    if p["bias"]:
        out = add(out, ctx.param(nid, "bias", (p["features"],), init, p["trainable"]))
    return out


def _pretrained_linear(ctx: Builder, nid: str, p: dict[str, Any], x: Inputs) -> Node:
    """x W^T for a pretrained W [features, in] (a torch Linear's layout), kept as float32 or as NF4 words
    (frozen: the product reads the words, nothing unpacks the weight)."""
    inp, rows = x["x"], p["features"]
    if len(inp.shape) < 2:
        raise ShapeError(f"pretrained_linear needs a feature axis after the batch axis, got {inp.shape}", 0)
    cols = inp.shape[-1]
    if p["storage"] == "float32":
        w = ctx.param(nid, "weight", (rows, cols), Init("pretrained", tensor=p["tensor"]), p["trainable"])
        return make(Op.MATMUL, inp, w, arg=d.MatmulArg(transpose_b=True))
    if p["trainable"]:
        raise ShapeError("an NF4 weight is frozen: storage nf4 needs trainable false (adapters learn beside it)")
    problem = nf4.check_shape(rows, cols)
    if problem:
        raise ShapeError(problem, 0)
    init = Init("pretrained", tensor=p["tensor"], nf4=(rows, cols))
    packed = ctx.param(nid, "weight", (nf4.words(rows, cols),), init, False, dtype=DType.U32)
    return make(Op.NF4_MATMUL, inp, packed, arg=d.Nf4MatmulArg(rows, cols))


def _conv2d(ctx: Builder, nid: str, p: dict[str, Any], x: Inputs) -> Node:
    inp = x["x"]
    if len(inp.shape) != 4:
        raise ShapeError(f"conv2d needs NCHW input (batch, channels, height, width), got {inp.shape}", 0)
    channels, groups = inp.shape[1], p["groups"]
    if channels % groups or p["out_channels"] % groups:
        raise ShapeError(f"groups={groups} must divide in_channels={channels} and out_channels={p['out_channels']}")
    shape = (p["out_channels"], channels // groups, *p["kernel"])
    init = _fan_in_uniform(math.prod(shape[1:]))
    w = ctx.param(nid, "weight", shape, init, p["trainable"])
    out = make(Op.CONV2D, inp, w, arg=d.ConvArg(p["stride"], p["padding"], p["dilation"], groups))
    if p["bias"]:
        b = ctx.param(nid, "bias", (p["out_channels"],), init, p["trainable"])
        out = add(out, reshape(b, (1, p["out_channels"], 1, 1)))
    return out


def _pool(op: Op) -> Build:
    def build(ctx: Builder, nid: str, p: dict[str, Any], x: Inputs) -> Node:
        stride = p["stride"] if p["stride"] is not None else p["kernel"]
        return make(op, x["x"], arg=d.PoolArg(p["kernel"], stride, p["padding"]))

    return build


def _unary(op: Op, arg: Callable[[dict[str, Any]], object] | None = None) -> Build:
    return lambda ctx, nid, p, x: make(op, x["x"], arg=arg(p) if arg else None)


def _binary(op: Op) -> Build:
    return lambda ctx, nid, p, x: make(op, x["a"], x["b"])


def _softmax(op: Op) -> Build:
    return lambda ctx, nid, p, x: make(op, x["x"], arg=d.AxisArg(_axis(p["axis"], len(x["x"].shape))))


def _reduction(op: Op) -> Build:
    def build(ctx: Builder, nid: str, p: dict[str, Any], x: Inputs) -> Node:
        axes = _axes(p["axes"], len(x["x"].shape))
        return make(op, x["x"], arg=d.ReduceArg(axes, p["keepdims"], p.get("correction", 0)))

    return build


def _normalize(x: Node, mean: Node, var: Node, eps: float) -> Node:
    return mul(sub(x, mean), unary(Op.RSQRT, add(var, const(eps))))


def _layer_norm(ctx: Builder, nid: str, p: dict[str, Any], x: Inputs) -> Node:
    inp, k = x["x"], p["normalized_dims"]
    if k >= len(inp.shape):
        raise ShapeError(f"normalized_dims={k} must leave the batch axis of {inp.shape}", 0)
    axes = tuple(range(len(inp.shape) - k, len(inp.shape)))
    mean = reduce(Op.MEAN, inp, axes, keepdims=True)
    var = make(Op.VAR, inp, arg=d.ReduceArg(axes, True))
    out = _normalize(inp, mean, var, p["eps"])
    if p["affine"]:
        shape = inp.shape[-k:]
        out = mul(out, ctx.param(nid, "weight", shape, Init("ones"), p["trainable"]))
        out = add(out, ctx.param(nid, "bias", shape, Init("zeros"), p["trainable"]))
    return out


def _batch_norm(ctx: Builder, nid: str, p: dict[str, Any], x: Inputs) -> Node:
    inp = x["x"]
    if len(inp.shape) < 2:
        raise ShapeError(f"batch_norm needs a channel axis (axis 1), got {inp.shape}", 0)
    channels = inp.shape[1]
    axes = tuple(i for i in range(len(inp.shape)) if i != 1)
    stat_shape = tuple(channels if i == 1 else 1 for i in range(len(inp.shape)))
    running_mean = ctx.state(nid, "running_mean", (channels,), Init("zeros"))
    running_var = ctx.state(nid, "running_var", (channels,), Init("ones"))
    if ctx.mode is Mode.TRAIN:
        mean = reduce(Op.MEAN, inp, axes, keepdims=True)
        var = make(Op.VAR, inp, arg=d.ReduceArg(axes, True))
        count = math.prod(inp.shape[a] for a in axes)
        m = p["momentum"]
        unbiased = scale(reshape(var, (channels,)), count / max(count - 1, 1))
        ctx.update_state(running_mean, add(scale(running_mean, 1 - m), scale(reshape(mean, (channels,)), m)))
        ctx.update_state(running_var, add(scale(running_var, 1 - m), scale(unbiased, m)))
    else:
        mean, var = reshape(running_mean, stat_shape), reshape(running_var, stat_shape)
    out = _normalize(inp, mean, var, p["eps"])
    if p["affine"]:
        gamma = ctx.param(nid, "weight", (channels,), Init("ones"), p["trainable"])
        beta = ctx.param(nid, "bias", (channels,), Init("zeros"), p["trainable"])
        out = add(mul(out, reshape(gamma, stat_shape)), reshape(beta, stat_shape))
    return out


def _dropout(ctx: Builder, nid: str, p: dict[str, Any], x: Inputs) -> Node:
    inp = x["x"]
    if ctx.mode is Mode.EVAL or p["p"] == 0:
        return inp
    key, position, site = ctx.rng("dropout")
    arg = d.RandomArg(d.Distribution.BERNOULLI, "dropout", site, inp.shape, p["p"])
    keep = make(Op.RANDOM, key, position, arg=arg)
    return where(keep, scale(inp, 1 / (1 - p["p"])), const(0.0))


def _augment(ctx: Builder, distribution: d.Distribution, shape: tuple[int, ...], p: float = 0.0, n: int = 0) -> Node:
    """A draw from the `augment` substream, at a site of its own."""
    key, position, site = ctx.rng("augment")
    return make(Op.RANDOM, key, position, arg=d.RandomArg(distribution, "augment", site, shape, p, n))


def _random_crop(ctx: Builder, nid: str, p: dict[str, Any], x: Inputs) -> Node:
    inp = x["x"]
    if len(inp.shape) < 3:
        raise ShapeError(f"random_crop shifts the last two axes (height, width) of each example, got {inp.shape}", 0)
    if ctx.mode is Mode.EVAL or p["padding"] == (0, 0):
        return inp
    # one int32 column per axis, uniform in [-pad, pad]
    rows, cols = (
        sub(_augment(ctx, d.Distribution.INTEGER, (inp.shape[0], 1), n=2 * pad + 1), const(pad, DType.I32))
        for pad in p["padding"]
    )
    return make(Op.SHIFT2D, inp, make(Op.CONCAT, rows, cols, arg=d.AxisArg(1)))


def _random_flip(ctx: Builder, nid: str, p: dict[str, Any], x: Inputs) -> Node:
    inp = x["x"]
    if len(inp.shape) < 2:
        raise ShapeError(f"random_flip reverses the last axis of each example, got {inp.shape}", 0)
    if ctx.mode is Mode.EVAL or p["p"] == 0:
        return inp
    flip = _augment(ctx, d.Distribution.BERNOULLI, inp.shape[:1], p=1 - p["p"])  # True with probability p
    return make(Op.FLIP_LAST, inp, flip)


def _gaussian_noise(ctx: Builder, nid: str, p: dict[str, Any], x: Inputs) -> Node:
    inp = x["x"]
    if ctx.mode is Mode.EVAL or p["std"] == 0:
        return inp
    return add(inp, scale(_augment(ctx, d.Distribution.NORMAL, inp.shape), p["std"]))


def _parameter(ctx: Builder, nid: str, p: dict[str, Any], x: Inputs) -> Node:
    """A batch axis of size 1 in front: the shape ops see one example, and arithmetic broadcasts it."""
    shape, tensor = tuple(p["shape"]), p.get("tensor")
    if (p["init"] == "pretrained") != (tensor is not None):
        raise ShapeError("init pretrained names its `tensor`, and only it does")
    value = ctx.param(nid, "value", shape, Init(p["init"], p["scale"], tensor or ""), p["trainable"])
    return reshape(value, (1, *shape))


def _gather(ctx: Builder, nid: str, p: dict[str, Any], x: Inputs) -> Node:
    table = x["table"]
    if len(table.shape) < 2 or table.shape[0] != 1:
        raise ShapeError(f"the table must be one tensor for every example (a parameter), got shape {table.shape}", 0)
    return make(Op.GATHER, reshape(table, table.shape[1:]), x["indices"])


def _embedding(ctx: Builder, nid: str, p: dict[str, Any], x: Inputs) -> Node:
    table = ctx.param(nid, "weight", (p["num_embeddings"], p["dim"]), Init("normal", 1.0), p["trainable"])
    return make(Op.GATHER, table, x["indices"])


def _reshape(ctx: Builder, nid: str, p: dict[str, Any], x: Inputs) -> Node:
    inp, shape = _batched("reshape", x["x"]), list(p["shape"])
    per_example = math.prod(inp.shape[1:])
    if shape.count(-1) > 1 or any(s == 0 or s < -1 for s in shape):
        raise ShapeError(f"shape {shape} may hold one -1 and otherwise positive sizes")
    if -1 in shape:
        known = math.prod(s for s in shape if s != -1)
        shape[shape.index(-1)] = per_example // known if per_example % known == 0 else 0
    if math.prod(shape) != per_example or 0 in shape:
        raise ShapeError(f"cannot reshape an example of shape {inp.shape[1:]} to {p['shape']}", 0)
    return reshape(inp, (inp.shape[0], *shape))


def _flatten(ctx: Builder, nid: str, p: dict[str, Any], x: Inputs) -> Node:
    inp = _batched("flatten", x["x"])
    return reshape(inp, (inp.shape[0], math.prod(inp.shape[1:])))


def _permute(ctx: Builder, nid: str, p: dict[str, Any], x: Inputs) -> Node:
    perm = p["perm"]
    _batched("permute", x["x"])
    if sorted(perm) != list(range(len(x["x"].shape) - 1)):
        raise ShapeError(f"perm {list(perm)} must order the {len(x['x'].shape) - 1} axes of one example")
    return make(Op.PERMUTE, x["x"], arg=d.PermuteArg((0, *(a + 1 for a in perm))))


def _slice(ctx: Builder, nid: str, p: dict[str, Any], x: Inputs) -> Node:
    inp = _batched("slice", x["x"])
    n = len(inp.shape) - 1
    steps = p["steps"] if p["steps"] is not None else (1,) * n
    if not len(p["starts"]) == len(p["stops"]) == len(steps) == n:
        raise ShapeError(f"starts, stops and steps need one entry per axis of an example ({n})")
    arg = d.SliceArg((0, *p["starts"]), (inp.shape[0], *p["stops"]), (1, *steps))
    return make(Op.SLICE, inp, arg=arg)


def _concat(ctx: Builder, nid: str, p: dict[str, Any], x: Inputs) -> Node:
    parts = x["xs"]
    return make(Op.CONCAT, *parts, arg=d.AxisArg(_axis(p["axis"], len(parts[0].shape))))


def _labels_fit(logits: Node, labels: Node) -> None:
    if len(logits.shape) < 2 or labels.shape != logits.shape[:-1]:
        raise ShapeError(
            f"labels {labels.shape} must have the shape of logits {logits.shape} without the class axis", 1
        )


def _cross_entropy(ctx: Builder, nid: str, p: dict[str, Any], x: Inputs) -> Node:
    logits, labels = x["logits"], x["labels"]
    _labels_fit(logits, labels)
    last = len(logits.shape) - 1
    log_p = make(Op.LOG_SOFTMAX, logits, arg=d.AxisArg(last))
    hot = make(Op.ONE_HOT, labels, arg=d.ClassesArg(logits.shape[-1]))
    picked = reduce(Op.SUM, mul(log_p, hot), (last,))
    everything = tuple(range(len(picked.shape)))
    return unary(Op.NEG, reduce(Op.MEAN if p["reduction"] == "mean" else Op.SUM, picked, everything))


def _mse(ctx: Builder, nid: str, p: dict[str, Any], x: Inputs) -> Node:
    pred, target = x["pred"], x["target"]
    if pred.shape != target.shape:
        raise ShapeError(f"target {target.shape} must have the shape of pred {pred.shape}", 1)
    diff = sub(pred, target)
    return reduce(Op.MEAN if p["reduction"] == "mean" else Op.SUM, mul(diff, diff), tuple(range(len(pred.shape))))


def _accuracy(ctx: Builder, nid: str, p: dict[str, Any], x: Inputs) -> Node:
    logits, labels = x["logits"], x["labels"]
    _labels_fit(logits, labels)
    predicted = make(Op.ARGMAX, logits, arg=d.AxisArg(len(logits.shape) - 1))
    hits = cast(make(Op.EQUAL, predicted, labels), DType.F32)
    return reduce(Op.MEAN, hits, tuple(range(len(hits.shape))))


# -- simulation and statistics -------------------------------------------------------------------

RESERVED_SUBSTREAMS = ("init", "shuffle")  # drawn by the engine itself (parameter init, epoch orders)
PER = Param(
    "per",
    "str",
    "step",
    choices=("step", "run"),
    doc="new draws at every step, or the same draws at every step of the run",
)


def _full_shape(ctx: Builder, p: dict[str, Any]) -> tuple[int, ...]:
    return (ctx.batch, *p["shape"]) if p["batched"] else tuple(p["shape"])


def _state(ctx: Builder, nid: str, p: dict[str, Any], x: Inputs) -> Node:
    return ctx.state(nid, "value", _full_shape(ctx, p), Init(p["init"], p["value"]))


def _update(ctx: Builder, nid: str, p: dict[str, Any], x: Inputs) -> Node:
    state, value = x["state"], x["value"]
    if value.shape != state.shape or value.dtype is not state.dtype:
        raise ShapeError(f"the next value {value.type_str} must have the state's type {state.type_str}", 1)
    if ctx.mode is Mode.TRAIN:  # evaluation reads the state and changes nothing
        ctx.update_state(state, value)
    return value


def _draw_site(ctx: Builder, substream: str, per: str) -> tuple[Node, Node, int]:
    if substream in RESERVED_SUBSTREAMS:
        raise ShapeError(
            f"the substream {substream!r} is the engine's own ({', '.join(RESERVED_SUBSTREAMS)} are): name another"
        )
    return ctx.rng(substream) if per == "step" else ctx.rng_fixed(substream)


def _random(ctx: Builder, nid: str, p: dict[str, Any], x: Inputs) -> Node:
    key, position, site = _draw_site(ctx, p["substream"], p["per"])
    dist = d.Distribution(p["distribution"])
    high = p["high"] if dist is d.Distribution.INTEGER else 0
    arg = d.RandomArg(dist, p["substream"], site, _full_shape(ctx, p), n=high)
    return make(Op.RANDOM, key, position, arg=arg)


def _constant(ctx: Builder, nid: str, p: dict[str, Any], x: Inputs) -> Node:
    return expand(const(p["value"]), _full_shape(ctx, p))


def _sliced(inp: Node, axis: int, start: int, stop: int, step: int = 1) -> Node:
    """`inp` cut to [start:stop:step] along `axis`, whole along the others."""
    starts = tuple(start if i == axis else 0 for i in range(len(inp.shape)))
    stops = tuple(stop if i == axis else size for i, size in enumerate(inp.shape))
    steps = tuple(step if i == axis else 1 for i in range(len(inp.shape)))
    return make(Op.SLICE, inp, arg=d.SliceArg(starts, stops, steps))


def _roll(ctx: Builder, nid: str, p: dict[str, Any], x: Inputs) -> Node:
    inp = x["x"]
    if not inp.shape:
        raise ShapeError("roll shifts along an axis, but its input is a scalar", 0)
    axis = _axis(p["axis"], len(inp.shape))
    size = inp.shape[axis]
    k = p["shift"] % size
    if k == 0:
        return inp
    tail, head = _sliced(inp, axis, size - k, size), _sliced(inp, axis, 0, size - k)
    return make(Op.CONCAT, tail, head, arg=d.AxisArg(axis))


def _tiled(period: Node, length: int) -> Node:
    """The first `length` rows (axis 0) of `period` repeated: a constant pattern built on the device."""
    k, rest = period.shape[0], period.shape[1:]
    repeats = -(-length // k)
    flat = reshape(expand(reshape(period, (1, k, *rest)), (repeats, k, *rest)), (repeats * k, *rest))
    return _sliced(flat, 0, 0, length) if repeats * k != length else flat


def _pair(a: Node, b: Node) -> Node:
    """[a, b] along a new axis 0 (a and b of one shape)."""
    return make(Op.CONCAT, reshape(a, (1, *a.shape)), reshape(b, (1, *b.shape)), arg=d.AxisArg(0))


def _alternating(length: int) -> Node:
    """[0, 1, 0, 1, ...] of `length` float32: the second of two classes, one-hot, read row by row. It is
    computed from coordinates (no constant tensor is assembled on the device)."""
    pairs = -(-length // 2)
    second = make(Op.ONE_HOT, expand(const(1, DType.I32), (pairs,)), arg=d.ClassesArg(2))
    flat = reshape(second, (2 * pairs,))
    return _sliced(flat, 0, 0, length) if 2 * pairs != length else flat


def _checkerboard(ctx: Builder, nid: str, p: dict[str, Any], x: Inputs) -> Node:
    height, width = p["shape"]
    down = _alternating(height)
    across = down if width == height else _alternating(width)
    rows = expand(reshape(down, (height, 1)), (height, width))
    cols = expand(reshape(across, (1, width)), (height, width))
    odd = unary(Op.ABS, sub(rows, cols))  # 1 where row + column is odd
    board = odd if p["parity"] == 1 else sub(const(1.0), odd)
    return reshape(board, (1, height, width))


def _std_error(ctx: Builder, nid: str, p: dict[str, Any], x: Inputs) -> Node:
    inp = x["x"]
    axes = _axes(p["axes"], len(inp.shape))
    count = math.prod(inp.shape[a] for a in axes)
    if count < 2:
        raise ShapeError(f"a standard error needs at least 2 values, the axes {list(axes)} hold {count}", 0)
    var = make(Op.VAR, inp, arg=d.ReduceArg(axes, p["keepdims"], 1))
    return unary(Op.SQRT, scale(var, 1 / count))


def _element(ctx: Builder, nid: str, p: dict[str, Any], x: Inputs) -> Node:
    inp, index = x["x"], p["index"]
    if len(index) != len(inp.shape):
        raise ShapeError(f"index {list(index)} needs one entry per axis of {inp.shape}, batch axis included", 0)
    at = []
    for i, size in zip(index, inp.shape, strict=True):
        if not -size <= i < size:
            raise ShapeError(f"index {list(index)} is out of range for shape {inp.shape}", 0)
        at.append(i % size)
    arg = d.SliceArg(tuple(at), tuple(i + 1 for i in at), (1,) * len(at))
    return reshape(make(Op.SLICE, inp, arg=arg), ())


def _square(op: str, inp: Node) -> int:
    if len(inp.shape) < 2 or inp.shape[-1] != inp.shape[-2]:
        raise ShapeError(f"{op} needs square matrices in its last two axes, got {inp.shape}", 0)
    return inp.shape[-1]


def eye(n: int) -> Node:
    """The n x n identity, built from constants: n + 1 values [1, 0, ..., 0] repeated hold a 1 at every
    flat index i * (n + 1), which is (i, i) in the first n * n values."""
    period = make(Op.CONCAT, reshape(const(1.0), (1,)), expand(const(0.0), (n,)), arg=d.AxisArg(0))
    return reshape(_tiled(period, n * n), (n, n))


def _inverse(ctx: Builder, nid: str, p: dict[str, Any], x: Inputs) -> Node:
    inp = x["x"]
    n = _square("inverse", inp)
    return make(Op.SOLVE, inp, expand(eye(n), inp.shape))


def _diagonal(ctx: Builder, nid: str, p: dict[str, Any], x: Inputs) -> Node:
    inp = x["x"]
    n = _square("diagonal", inp)
    lead = inp.shape[:-2]
    flat = reshape(inp, (*lead, n * n))
    return _sliced(flat, len(lead), 0, n * n, n + 1)


def _sort(ctx: Builder, nid: str, p: dict[str, Any], x: Inputs) -> Node:
    inp = x["x"]
    if not inp.shape:
        raise ShapeError("sort orders values along an axis, but its input is a scalar", 0)
    return make(Op.SORT, inp, arg=d.AxisArg(_axis(p["axis"], len(inp.shape))))


def _quantile(ctx: Builder, nid: str, p: dict[str, Any], x: Inputs) -> Node:
    """numpy's default (linear) quantile: between the sorted values at floor and ceil of q * (n - 1)."""
    inp = x["x"]
    if not inp.shape:
        raise ShapeError("quantile looks along an axis, but its input is a scalar", 0)
    axis = _axis(p["axis"], len(inp.shape))
    ordered = make(Op.SORT, inp, arg=d.AxisArg(axis))
    n = inp.shape[axis]
    at = p["q"] * (n - 1)
    low = min(math.floor(at), n - 1)
    high, frac = min(low + 1, n - 1), at - low
    out_shape = tuple(s for i, s in enumerate(inp.shape) if i != axis)
    below = reshape(_sliced(ordered, axis, low, low + 1), out_shape)
    if frac == 0 or high == low:
        return below
    above = reshape(_sliced(ordered, axis, high, high + 1), out_shape)
    return add(below, scale(sub(above, below), frac))


def _bootstrap(ctx: Builder, nid: str, p: dict[str, Any], x: Inputs) -> Node:
    inp = x["x"]
    if not inp.shape:
        raise ShapeError("bootstrap resamples the rows of axis 0, but its input is a scalar", 0)
    rows = inp.shape[0]
    key, position, site = _draw_site(ctx, p["substream"], p["per"])
    arg = d.RandomArg(d.Distribution.INTEGER, p["substream"], site, (p["resamples"], rows), n=rows)
    return make(Op.GATHER, inp, make(Op.RANDOM, key, position, arg=arg))


def _matmul(ctx: Builder, nid: str, p: dict[str, Any], x: Inputs) -> Node:
    return make(Op.MATMUL, x["a"], x["b"], arg=d.MatmulArg(p["transpose_a"], p["transpose_b"]))


# -- the catalog ---------------------------------------------------------------------------------

X = (Port("x", "float"),)
ANY = (Port("x", "any"),)  # values of any kind, moved: the output is of the input's kind
AB = (Port("a", "float"), Port("b", "float"))
KERNEL = Param("kernel", "pair", REQUIRED, low=1, doc="window size: an integer or [height, width]")


UNARY_DOCS = {
    Op.NEG: "-x",
    Op.EXP: "e to the x",
    Op.LOG: "natural logarithm",
    Op.SQRT: "square root",
    Op.RSQRT: "1 / square root",
    Op.ABS: "absolute value",
    Op.RELU: "max(x, 0)",
    Op.TANH: "hyperbolic tangent",
    Op.SIGMOID: "1 / (1 + e^-x)",
}
BINARY_DOCS = {
    Op.ADD: "a + b",
    Op.SUB: "a - b",
    Op.MUL: "a * b",
    Op.DIV: "a / b",
    Op.POW: "a to the power b",
    Op.MAXIMUM: "larger of a and b",
    Op.MINIMUM: "smaller of a and b",
}
SHAPE_OPTIONAL = Param("shape", "ints", [], low=1, doc="shape, without the batch axis ([] for a scalar)")
BATCHED = Param("batched", "bool", True, doc="put the batch axis (the batch size, or replicas) in front of shape")
REDUCE_PARAMS = (
    Param("axes", "axes", None, optional=True, doc="axes to reduce, batch axis included; null reduces all"),
    Param("keepdims", "bool", False, doc="keep reduced axes with size 1"),
)

SPECS: tuple[OpSpec, ...] = (
    OpSpec("input", "data", "a batch of the data set: features or labels", (), (
        Param("shape", "ints", REQUIRED, low=1, doc="shape of one example (without the batch axis)"),
        Param("dtype", "str", "float32", choices=("float32", "int32")),
        Param("role", "str", "features", choices=("features", "labels")),
    ), _input),
    OpSpec("constant", "math", "a constant: value at every element (a scalar unless a shape is given)", (), (
        Param("value", "float", REQUIRED), SHAPE_OPTIONAL,
        Param("batched", "bool", False, doc="put the batch axis in front of shape")), _constant),
    OpSpec("parameter", "layers", "a learned tensor, the same for every example (e.g. a positional embedding "
          "to add)", (), (
        Param("shape", "ints", REQUIRED, low=1, doc="shape of the tensor, without a batch axis (it broadcasts)"),
        Param("init", "str", "normal", choices=("normal", "uniform", "zeros", "ones", "pretrained"),
              doc="random, constant, or pretrained: the values of `tensor` in the program's weights file"),
        Param("scale", "float", 0.02, low=0, doc="standard deviation (normal) or bound (uniform) of the start values"),
        Param("tensor", "key", None, optional=True, doc="with init pretrained: the tensor's name in the weights file"),
        TRAINABLE), _parameter),
    OpSpec("linear", "layers", "x @ weight + bias", X, (
        Param("features", "int", REQUIRED, low=1, doc="output features"), BIAS, TRAINABLE), _linear),
    OpSpec("pretrained_linear", "layers", "x @ W^T for a pretrained W [features, in] of the weights file, kept "
          "as float32 or as 4-bit NF4 words (QLoRA's frozen base)", X, (
        Param("features", "int", REQUIRED, low=1, doc="output features: W's rows"),
        Param("tensor", "key", REQUIRED, doc="W's name in the program's weights file"),
        Param("storage", "str", "float32", choices=("float32", "nf4"), doc="nf4: packed on the device, frozen"),
        TRAINABLE), _pretrained_linear),
    OpSpec("matmul", "math", "batched matrix product a @ b", AB, (
        Param("transpose_a", "bool", False, doc="use a with its last two axes swapped"),
        Param("transpose_b", "bool", False, doc="use b with its last two axes swapped")), _matmul),
    OpSpec("conv2d", "layers", "2-D convolution, NCHW", X, (
        Param("out_channels", "int", REQUIRED, low=1), KERNEL,
        Param("stride", "pair", 1, low=1), Param("padding", "pair", 0, low=0),
        Param("dilation", "pair", 1, low=1), Param("groups", "int", 1, low=1), BIAS, TRAINABLE), _conv2d),
    OpSpec("max_pool2d", "layers", "maximum over windows, NCHW", X, (
        KERNEL, Param("stride", "pair", None, low=1, optional=True, doc="null: the kernel size"),
        Param("padding", "pair", 0, low=0)), _pool(Op.MAX_POOL2D)),
    OpSpec("avg_pool2d", "layers", "average over windows (padding counts as zeros), NCHW", X, (
        KERNEL, Param("stride", "pair", None, low=1, optional=True, doc="null: the kernel size"),
        Param("padding", "pair", 0, low=0)), _pool(Op.AVG_POOL2D)),
    *(OpSpec(op.value, "math", doc, AB, (), _binary(op)) for op, doc in BINARY_DOCS.items()),
    OpSpec("less", "math", "a < b, elementwise (bool)", AB, (), _binary(Op.LESS)),
    OpSpec("equal", "math", "a == b, elementwise (bool)", AB, (), _binary(Op.EQUAL)),
    OpSpec("where", "math", "a where cond, else b", (Port("cond", "bool"), *AB), (),
          lambda ctx, nid, p, x: where(x["cond"], x["a"], x["b"])),
    *(OpSpec(op.value, "activations" if op in (Op.RELU, Op.TANH, Op.SIGMOID) else "math", doc, X, (), _unary(op))
      for op, doc in UNARY_DOCS.items()),
    OpSpec("leaky_relu", "activations", "x, or alpha * x below zero", X,
          (Param("alpha", "float", 0.01, low=0),), _unary(Op.LEAKY_RELU, lambda p: d.LeakyReluArg(p["alpha"]))),
    OpSpec("gelu", "activations", "Gaussian error linear unit", X,
          (Param("approximate", "str", "tanh", choices=("tanh", "none"), doc="tanh form or exact erf form"),),
          _unary(Op.GELU, lambda p: d.GeluArg(p["approximate"]))),
    OpSpec("softmax", "activations", "normalised exponentials along an axis", X, (AXIS,), _softmax(Op.SOFTMAX)),
    OpSpec("log_softmax", "activations", "log of softmax, computed stably", X, (AXIS,), _softmax(Op.LOG_SOFTMAX)),
    OpSpec("layer_norm", "normalization", "normalise over the last axes, then scale and shift", X, (
        Param("normalized_dims", "int", 1, low=1, doc="how many trailing axes are normalised"),
        Param("eps", "float", 1e-5, low=0), Param("affine", "bool", True), TRAINABLE), _layer_norm),
    OpSpec("batch_norm", "normalization", "normalise each channel (axis 1) over the batch", X, (
        Param("momentum", "float", 0.1, low=0, high=1, doc="weight of the batch in the running statistics"),
        Param("eps", "float", 1e-5, low=0), Param("affine", "bool", True), TRAINABLE), _batch_norm),
    OpSpec("dropout", "regularization", "zero each value with probability p in training (scaled by 1/(1-p))", X,
          (Param("p", "float", 0.5, low=0, high=0.99),), _dropout),
    OpSpec("random_crop", "augmentation", "in training, shift each example up to `padding` pixels, zeros filling in "
          "(a same-size crop of the zero-padded image)", X,
          (Param("padding", "pair", 4, low=0, high=2**30 - 1, doc="largest shift: an integer or [height, width]"),),
          _random_crop),
    OpSpec("random_flip", "augmentation", "in training, reverse each example's last axis (a mirror image) with "
          "probability p", X, (Param("p", "float", 0.5, low=0, high=1),), _random_flip),
    OpSpec("gaussian_noise", "augmentation", "in training, add normal noise of standard deviation std", X,
          (Param("std", "float", 0.1, low=0),), _gaussian_noise),
    OpSpec("gather", "layers", "rows of a table (a parameter, the same for every example), picked by integer "
          "indices", (Port("table", "float"), Port("indices", "int")), (), _gather),
    OpSpec("embedding", "layers", "rows of a learned table, picked by integer indices", (Port("indices", "int"),), (
        Param("num_embeddings", "int", REQUIRED, low=1), Param("dim", "int", REQUIRED, low=1), TRAINABLE), _embedding),
    OpSpec("reshape", "shape", "same values, new shape per example (one size may be -1)", ANY,
          (Param("shape", "ints", REQUIRED, low=-1),), _reshape),
    OpSpec("flatten", "shape", "one axis per example", X, (), _flatten),
    OpSpec("permute", "shape", "reorder the axes of each example", X,
           (Param("perm", "ints", REQUIRED, low=0),), _permute),
    OpSpec("concat", "shape", "join along an axis, inputs in edge order", (Port("xs", "float", multiple=True),),
          (AXIS,), _concat),
    OpSpec("slice", "shape", "a strided window of each example", ANY, (
        Param("starts", "ints", REQUIRED, low=0), Param("stops", "ints", REQUIRED, low=1),
        Param("steps", "ints", None, low=1, optional=True, doc="null: all 1")), _slice),
    OpSpec("sum", "reductions", "sum over axes", X, REDUCE_PARAMS, _reduction(Op.SUM)),
    OpSpec("mean", "reductions", "mean over axes", X, REDUCE_PARAMS, _reduction(Op.MEAN)),
    OpSpec("max", "reductions", "maximum over axes", X, REDUCE_PARAMS, _reduction(Op.MAX)),
    OpSpec("var", "reductions", "variance over axes", X,
          (*REDUCE_PARAMS, Param("correction", "int", 0, low=0, doc="divide by n - correction")), _reduction(Op.VAR)),
    OpSpec("cross_entropy", "losses", "softmax cross-entropy of logits against integer labels",
          (Port("logits", "float"), Port("labels", "int")), (REDUCTION,), _cross_entropy),
    OpSpec("mse", "losses", "mean squared error", (Port("pred", "float"), Port("target", "float")), (REDUCTION,), _mse),
    OpSpec("accuracy", "metrics", "share of examples whose largest logit is the label",
          (Port("logits", "float"), Port("labels", "int")), (), _accuracy),
    OpSpec("float", "math", "an integer or boolean tensor as float32 (true is 1)", (Port("x", "any"),), (),
          lambda ctx, nid, p, x: x["x"] if x["x"].dtype is DType.F32 else cast(x["x"], DType.F32)),
    OpSpec("element", "math", "one value of a tensor, as a scalar", X, (
        Param("index", "ints", REQUIRED, doc="its index on every axis, batch axis included; negative counts from "
              "the end"),), _element),
    OpSpec("state", "simulation", "a tensor carried from step to step (checkpointed with the run); an update "
          "node sets its next value", (), (
        SHAPE_OPTIONAL, BATCHED,
        Param("init", "str", "fill", choices=("fill", "uniform", "normal"), doc="how it starts"),
        Param("value", "float", 0.0, doc="the fill value, the bound of uniform draws in [-value, value), or the "
              "standard deviation of normal draws (from the init substream)")), _state),
    OpSpec("update", "simulation", "value becomes the state's value at the next step (in evaluation, nothing "
          "changes); passes value on", (Port("state", "float"), Port("value", "float")), (), _update),
    OpSpec("random", "simulation", "draws from a named substream: counter-based, the same on every device",
          (), (
        SHAPE_OPTIONAL, BATCHED,
        Param("distribution", "str", "uniform", choices=("uniform", "normal", "integer"),
              doc="uniform in [0, 1), standard normal, or integers in [0, high)"),
        Param("high", "int", 2, low=1, high=2**31 - 1, doc="integer draws lie in [0, high)"),
        Param("substream", "str", "sample", doc="the substream's name: its own key, its own positions"),
        PER), _random),
    OpSpec("roll", "simulation", "shift along an axis, values leaving one end coming back at the other "
          "(periodic boundaries)", X, (
        Param("shift", "int", 1, doc="out[i] = x[i - shift], modulo the axis' size"), AXIS), _roll),
    OpSpec("checkerboard", "simulation", "1 on the squares of one colour of a board, 0 on the others (it "
          "broadcasts over the batch axis)", (), (
        Param("shape", "pair", REQUIRED, low=1, doc="[height, width]"),
        Param("parity", "int", 0, low=0, high=1, doc="1 where row + column is even (0) or odd (1)")), _checkerboard),
    OpSpec("std_error", "statistics", "standard error of the mean: sample standard deviation / sqrt(n)", X,
          REDUCE_PARAMS, _std_error),
    OpSpec("sort", "statistics", "values in ascending order along an axis (NaN last)", X, (AXIS,), _sort),
    OpSpec("quantile", "statistics", "the q-quantile along an axis (linear between order statistics), axis "
          "removed", X, (Param("q", "float", 0.5, low=0, high=1), AXIS), _quantile),
    OpSpec("bootstrap", "statistics", "resamples of the rows of axis 0, drawn with replacement: [n, ...] -> "
          "[resamples, n, ...]", X, (
        Param("resamples", "int", 1000, low=1), Param("substream", "str", "bootstrap", doc="the substream drawn from"),
        Param("per", "str", "run", choices=("step", "run"),
              doc="new resamples at every step, or the same ones at every step of the run")), _bootstrap),
    OpSpec("solve", "linear algebra", "x with a @ x = b, for each matrix (Gaussian elimination, partial "
          "pivoting)", (Port("a", "float"), Port("b", "float")), (),
          lambda ctx, nid, p, x: make(Op.SOLVE, x["a"], x["b"])),
    OpSpec("inverse", "linear algebra", "the inverse of each square matrix (last two axes)", X, (), _inverse),
    OpSpec("diagonal", "linear algebra", "the diagonal of each square matrix (last two axes)", X, (), _diagonal),
)  # fmt: skip

CATALOG: dict[str, OpSpec] = {spec.name: spec for spec in SPECS}


# The kind of an op's output where it is not "float", as its builder makes it (tests/graph/test_palette.py
# holds this against the builder of every op): the editor refuses a wire of the wrong kind before
# validation would. An `input` node's output kind follows its dtype parameter.
OUTPUT_KINDS = {"less": "bool", "equal": "bool", **dict.fromkeys(("reshape", "slice"), "any")}  # any: the input's
DTYPE_KINDS = {"float32": "float", "int32": "int"}
PARAM_KINDS = {  # ops whose output kind follows a parameter: op -> (parameter, value -> kind)
    "input": ("dtype", DTYPE_KINDS),
    "random": ("distribution", {"uniform": "float", "normal": "float", "integer": "int"}),
}


def palette() -> dict[str, Any]:
    """The whole catalog as JSON for the app's node palette and editor: the categories in order of first
    use, and every op's description in catalog order with its output's kind (or the parameter it follows)."""
    ops = []
    for spec in SPECS:
        entry = spec.describe()
        if spec.name in PARAM_KINDS:
            param, kinds = PARAM_KINDS[spec.name]
            entry["outputs"] = [{"name": "out", "kind": "any", "kind_param": param, "kinds": dict(kinds)}]
        else:
            entry["outputs"] = [{"name": "out", "kind": OUTPUT_KINDS.get(spec.name, "float")}]
        ops.append(entry)
    return {"categories": list(dict.fromkeys(spec.category for spec in SPECS)), "ops": ops}
