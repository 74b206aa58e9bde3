"""The correctness matrix's cases: small IR functions that together cover every op and every kernel kind,
and the one way they are run on any device (pure Python, so the page runs them exactly as CPython does).

Each output of a case is named after what it checks. Inputs are described by range (floats uniform in
[low, high), integers in [0, high)); the values themselves are made by whoever holds the float64 reference
(`checks.measure`), and sent to the device as bytes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from scellis.graph.settings import Optimizer
from scellis.ir import Function
from scellis.levels import Level
from scellis.lower.kernels import Schedule
from scellis.ops import DType, Node, Op, const, make
from scellis.ops import defs as d
from scellis.ops.build import expand, reshape
from scellis.ops.node import input_node
from scellis.optim.optimizers import bias_corrections, update_rule
from scellis.plan import lowered


@dataclass(frozen=True)
class Case:
    name: str
    build: Callable[[], Function]
    ranges: dict[str, tuple[float, float]]  # input name -> (low, high)
    needs: frozenset[str] = frozenset()  # device features it needs (float16 storage: shader-f16)


def unsupported(case: Case, features: frozenset[str]) -> str | None:
    """Why `case` cannot run on a device with `features`, or None when it can."""
    missing = sorted(case.needs - frozenset(features))
    return f"needs the device feature {', '.join(missing)}, which this device lacks" if missing else None


def _x(name: str, shape: tuple[int, ...], dtype: DType = DType.F32) -> Node:
    return input_node(name, d.Role.DATA, dtype, shape)


def _unary() -> Function:
    x = _x("x", (5, 67))
    ops = (Op.NEG, Op.EXP, Op.EXPM1, Op.ABS, Op.SIGN, Op.RELU, Op.TANH, Op.SIGMOID, Op.ERF, Op.COS, Op.SIN, Op.FLOOR)
    outs = [(op.value, make(op, x)) for op in ops]
    outs += [("leaky_relu", make(Op.LEAKY_RELU, x, arg=d.LeakyReluArg(0.1)))]
    outs += [(f"gelu ({a})", make(Op.GELU, x, arg=d.GeluArg(a))) for a in ("tanh", "none")]
    return Function("unary", (x,), tuple(outs))


def _positive() -> Function:
    x = _x("x", (5, 67))
    return Function("positive", (x,), tuple((op.value, make(op, x)) for op in (Op.LOG, Op.SQRT, Op.RSQRT)))


def _trigonometry() -> Function:
    x = _x("x", (4, 100))
    return Function(
        "trigonometry", (x,), (("sin (wide range)", make(Op.SIN, x)), ("cos (wide range)", make(Op.COS, x)))
    )


def _binary() -> Function:
    a, b = _x("a", (3, 1, 45)), _x("b", (4, 45))
    outs = [(f"{op.value} (broadcast)", make(op, a, b)) for op in (Op.ADD, Op.SUB, Op.MUL, Op.DIV)]
    outs += [(op.value, make(op, a, b)) for op in (Op.MAXIMUM, Op.MINIMUM, Op.LESS, Op.EQUAL)]
    outs += [("pow", make(Op.POW, make(Op.ABS, a), b)), ("where", make(Op.WHERE, make(Op.LESS, a, b), a, b))]
    return Function("binary", (a, b), tuple(outs))


def _adam() -> Function:
    """Adam's and AdamW's update of one parameter (optim.optimizers: the rule and its bias corrections) at
    t = 1 and t = 1000. With lr 1 and v in [0.01, 0.1) the updates reach ~10, larger than p, so the
    check's error is the update's own relative error, the corrections' included."""
    p, g, m, v = (_x(name, (4, 37)) for name in ("p", "g", "m", "v"))
    steps = {t: _x(f"step{t}", (), DType.I32) for t in (1, 1000)}  # the counter before the step: t - 1
    outs = []
    for opt in (Optimizer(kind="adam", lr=1.0), Optimizer(kind="adamw", lr=1.0, weight_decay=0.01)):
        for t, step in steps.items():
            corrections = bias_corrections(opt, make(Op.CAST, step, arg=d.CastArg(DType.F32)))
            new_p, _ = update_rule(opt, p, g, states=[m, v], lr=const(1.0), corrections=corrections)
            outs.append((f"{opt.kind} update (t = {t})", new_p))
    return Function("adam and adamw", (p, g, m, v, *steps.values()), tuple(outs))


def _integers() -> Function:
    i, x = _x("i", (6, 9), DType.I32), _x("x", (6, 9))
    outs = [
        ("add (int32)", make(Op.ADD, i, const(3, DType.I32))),
        ("cast (int32 to float32)", make(Op.CAST, i, arg=d.CastArg(DType.F32))),
        ("cast (float32 to int32)", make(Op.CAST, make(Op.FLOOR, x), arg=d.CastArg(DType.I32))),
        ("one_hot", make(Op.ONE_HOT, i, arg=d.ClassesArg(5))),
        ("one_hot (a constant label)", make(Op.ONE_HOT, expand(const(3, DType.I32), (6, 9)), arg=d.ClassesArg(5))),
    ]
    return Function("integers", (i, x), tuple(outs))


def _finite() -> Function:
    x = _x("x", (7, 33))
    huge = x
    for _ in range(9):  # 1e342 |x|: past float32's range in the kernel, and past float64's in the reference
        huge = make(Op.MUL, huge, const(1e38))
    outs = (("is_finite", make(Op.IS_FINITE, x)), ("is_finite (overflowed products)", make(Op.IS_FINITE, huge)))
    return Function("finiteness", (x,), outs)


def _reductions() -> Function:
    x = _x("x", (6, 37, 19))
    outs = [
        ("sum", make(Op.SUM, x, arg=d.ReduceArg((1,), False))),
        ("mean", make(Op.MEAN, x, arg=d.ReduceArg((0, 2), False))),
        ("max", make(Op.MAX, x, arg=d.ReduceArg((2,), True))),
        ("var", make(Op.VAR, x, arg=d.ReduceArg((1,), False))),
        ("argmax", make(Op.ARGMAX, x, arg=d.AxisArg(2))),
        ("softmax", make(Op.SOFTMAX, x, arg=d.AxisArg(1))),
        ("log_softmax", make(Op.LOG_SOFTMAX, x, arg=d.AxisArg(2))),
    ]
    return Function("reductions", (x,), tuple(outs))


def _long_reductions() -> Function:
    """Rows long enough (3 x 2**15 terms into 3 outputs) that lowering splits them into a partial and a final
    kernel, and one it cannot split (its reduced axes are not one stride apart)."""
    x = _x("x", (3, 96, 1024))
    rows = (1, 2)
    outs = [
        ("sum (split)", make(Op.SUM, x, arg=d.ReduceArg(rows, False))),
        ("mean (split)", make(Op.MEAN, x, arg=d.ReduceArg(rows, False))),
        ("max (split)", make(Op.MAX, x, arg=d.ReduceArg(rows, True))),
        ("var (split)", make(Op.VAR, x, arg=d.ReduceArg(rows, False, 1))),
        ("var (not split)", make(Op.VAR, x, arg=d.ReduceArg((0, 2), False))),
    ]
    return Function("long reductions", (x,), tuple(outs))


def _matmul(name: str, a_shape: tuple[int, ...], b_shape: tuple[int, ...], arg: d.MatmulArg) -> Callable[[], Function]:
    def build() -> Function:
        a, b = _x("a", a_shape), _x("b", b_shape)
        return Function(name, (a, b), (("matmul", make(Op.MATMUL, a, b, arg=arg)),))

    return build


def _views() -> Function:
    a, b = _x("a", (4, 6, 10)), _x("b", (10, 6))
    turned = make(Op.PERMUTE, a, arg=d.PermuteArg((0, 2, 1)))
    part = make(Op.SLICE, turned, arg=d.SliceArg((0, 1, 0), (4, 9, 6), (1, 2, 2)))
    spread = make(Op.EXPAND, make(Op.RESHAPE, b, arg=d.ShapeArg((1, 6, 10))), arg=d.ShapeArg((4, 6, 10)))
    joined = make(Op.CONCAT, a, spread, arg=d.AxisArg(0))
    tail = make(Op.SLICE, a, arg=d.SliceArg((0, 0, 7), (4, 6, 10), (1, 1, 1)))
    head = make(Op.SLICE, a, arg=d.SliceArg((0, 0, 0), (4, 6, 7), (1, 1, 1)))
    outs = (
        ("permute + slice", make(Op.MUL, part, const(2.0))),
        ("concat + expand", joined),
        ("concat of two slices (a roll)", make(Op.CONCAT, tail, head, arg=d.AxisArg(2))),
        ("slice_grad", make(Op.SLICE_GRAD, part, arg=d.SliceGradArg((4, 10, 6), (0, 1, 0), (4, 9, 6), (1, 2, 2)))),
    )
    return Function("views", (a, b), outs)


CONV = d.ConvArg(stride=(2, 1), padding=(1, 2), dilation=(1, 2), groups=1)


def _conv() -> Function:
    x, w, g = _x("x", (2, 3, 11, 13)), _x("w", (5, 3, 3, 3)), _x("g", (2, 5, 6, 13))
    outs = (
        ("conv2d", make(Op.CONV2D, x, w, arg=CONV)),
        ("conv2d_grad_input", make(Op.CONV2D_GRAD_INPUT, g, w, arg=d.ConvGradArg(CONV, x.shape))),
        ("conv2d_grad_weight", make(Op.CONV2D_GRAD_WEIGHT, x, g, arg=d.ConvGradArg(CONV, w.shape))),
    )
    return Function("conv2d", (x, w, g), outs)


POOL = d.PoolArg(kernel=(3, 2), stride=(2, 2), padding=(1, 0))


def _pools() -> Function:
    x, g = _x("x", (2, 3, 9, 8)), _x("g", (2, 3, 5, 4))
    outs = (
        ("max_pool2d", make(Op.MAX_POOL2D, x, arg=POOL)),
        ("avg_pool2d", make(Op.AVG_POOL2D, x, arg=POOL)),
        ("max_pool2d_grad", make(Op.MAX_POOL2D_GRAD, x, g, arg=d.PoolGradArg(POOL, x.shape))),
        ("avg_pool2d_grad", make(Op.AVG_POOL2D_GRAD, g, arg=d.PoolGradArg(POOL, x.shape))),
    )
    return Function("pools", (x, g), outs)


def _rows() -> Function:
    table, indices, g = _x("table", (11, 7)), _x("indices", (5, 3), DType.I32), _x("g", (5, 3, 7))
    labels = _x("labels", (11,), DType.I32)  # a resident data set's labels, gathered by example
    outs = (
        ("gather", make(Op.GATHER, table, indices)),
        ("gather int32", make(Op.GATHER, labels, indices)),
        ("scatter_add", make(Op.SCATTER_ADD, indices, g, arg=d.RowsArg(11))),
    )
    return Function("gather and scatter", (table, labels, indices, g), outs)


def _augment() -> Function:
    x, s, f = _x("x", (3, 2, 7, 9)), _x("s", (3, 2), DType.I32), _x("f", (3,))
    shift = make(Op.ADD, s, const(-3, DType.I32))  # shifts in [-3, 3]
    outs = (
        ("shift2d", make(Op.SHIFT2D, x, shift)),
        ("flip_last", make(Op.FLIP_LAST, x, make(Op.LESS, f, const(0.0)))),
    )
    return Function("augmentation", (x, s, f), outs)


def _eye(n: int) -> Node:
    """The n x n identity from two constants: [1, then n zeros] repeated n times, cut to n * n values (the
    ones fall every n + 1 places: on the diagonal)."""
    row = make(Op.CONCAT, expand(const(1.0), (1,)), expand(const(0.0), (n,)), arg=d.AxisArg(0))
    tiled = reshape(expand(reshape(row, (1, n + 1)), (n, n + 1)), (n * (n + 1),))
    return reshape(make(Op.SLICE, tiled, arg=d.SliceArg((0,), (n * n,), (1,))), (n, n))


def _dominant(x: Node, reverse: bool = False) -> Node:
    """x (entries in [-1, 1)) plus n + 1 on the diagonal: diagonally dominant, so well conditioned (a
    solve's error grows with the condition number, and the declared tolerance assumes a good one). With
    `reverse`, each row's columns reversed: the large entries lie on the anti-diagonal and every column
    but the middle one needs a row exchange."""
    n = x.shape[-1]
    a = make(Op.ADD, x, make(Op.MUL, _eye(n), const(float(n + 1))))
    if not reverse:
        return a
    flat = reshape(a, (-(-a.size // n), n))
    every = make(Op.EQUAL, expand(const(0.0), (flat.shape[0],)), const(0.0))
    return reshape(make(Op.FLIP_LAST, flat, every), a.shape)


def _solve() -> Function:
    """The workflows' sizes (a batch of 2000 small systems; one 4 x 4 system with 4 right-hand sides) and a
    larger batch whose pivots are all off the diagonal."""
    a1, b1 = _x("a1", (2000, 4, 4)), _x("b1", (2000, 4, 1))
    a2, b2 = _x("a2", (4, 4)), _x("b2", (4, 4))
    a3, b3 = _x("a3", (3, 40, 40)), _x("b3", (3, 40, 3))
    outs = (
        ("solve 2000x4x4, k=1", make(Op.SOLVE, _dominant(a1), b1)),
        ("solve 4x4, k=4 (row exchanges)", make(Op.SOLVE, _dominant(a2, reverse=True), b2)),
        ("solve 3x40x40, k=3 (row exchanges)", make(Op.SOLVE, _dominant(a3, reverse=True), b3)),
    )
    return Function("solve", (a1, b1, a2, b2, a3, b3), outs)


def _sort() -> Function:
    """The workflows' sizes ([2000], [2000, 4] along axis 0), ties (floor(4 x)) along an inner and the last
    axis, and SORT_GRAD routing g back through those orders."""
    x1, x2, x3 = _x("x1", (2000,)), _x("x2", (2000, 4)), _x("x3", (5, 300, 3))
    g2, g3 = _x("g2", (2000, 4)), _x("g3", (5, 300, 3))
    tied = make(Op.FLOOR, make(Op.MUL, x3, const(4.0)))
    outs = (
        ("sort [2000]", make(Op.SORT, x1, arg=d.AxisArg(0))),
        ("sort [2000, 4] along axis 0", make(Op.SORT, x2, arg=d.AxisArg(0))),
        ("sort with ties along axis 1", make(Op.SORT, tied, arg=d.AxisArg(1))),
        ("sort_grad [2000, 4] along axis 0", make(Op.SORT_GRAD, x2, g2, arg=d.AxisArg(0))),
        ("sort_grad with ties along axis 1", make(Op.SORT_GRAD, tied, g3, arg=d.AxisArg(1))),
        ("sort_grad with ties along the last axis", make(Op.SORT_GRAD, tied, g3, arg=d.AxisArg(2))),
    )
    return Function("sort", (x1, x2, x3, g2, g3), outs)


def _float16() -> Function:
    """Float16 storage: a value cast to float16 is stored so (the output is the stored value), and
    every kind of kernel reading it widens it on load: elementwise, matmul (small tiles; large ones read
    it four at a time), reduction and softmax rows."""
    x, w = _x("x", (9, 37)), _x("w", (37, 21))
    a, b = _x("a", (768, 16)), _x("b", (16, 768))
    hx, hw, ha, hb = (make(Op.CAST, v, arg=d.CastArg(DType.F16)) for v in (x, w, a, b))
    fx, fw, fa, fb = (make(Op.CAST, v, arg=d.CastArg(DType.F32)) for v in (hx, hw, ha, hb))
    outs = (
        ("cast (float32 to float16)", hx),
        ("float16 load (elementwise)", make(Op.MUL, make(Op.ADD, fx, const(0.5)), fx)),
        ("float16 load (matmul)", make(Op.MATMUL, fx, fw, arg=d.MatmulArg())),
        ("float16 load (large matmul)", make(Op.MATMUL, fa, fb, arg=d.MatmulArg())),
        ("float16 load (sum)", make(Op.SUM, fx, arg=d.ReduceArg((1,), False))),
        ("float16 load (softmax)", make(Op.SOFTMAX, fx, arg=d.AxisArg(1))),
    )
    return Function("float16 storage", (x, w, a, b), outs)


def _random() -> Function:
    key = input_node("key", d.Role.RNG, DType.U32, (2,))
    position = input_node("position", d.Role.SETTING, DType.U32, ())
    dists = (
        ("uniform", d.RandomArg(d.Distribution.UNIFORM, "check", 0, (37, 29))),
        ("normal", d.RandomArg(d.Distribution.NORMAL, "check", 1, (37, 29))),
        ("bernoulli", d.RandomArg(d.Distribution.BERNOULLI, "check", 2, (37, 29), p=0.3)),
        ("integer below 7", d.RandomArg(d.Distribution.INTEGER, "check", 3, (37, 29), n=7)),
        # about a third of all words are rejected for this n: draws move on to later counters
        ("integer below 1431655766", d.RandomArg(d.Distribution.INTEGER, "check", 4, (37, 29), n=1431655766)),
    )
    outs = tuple((f"random ({name})", make(Op.RANDOM, key, position, arg=arg)) for name, arg in dists)
    return Function("random", (key, position), outs)


def _nf4() -> Function:
    """NF4 weights: a [48, 384] weight packed (the words are exact: the same on every device), read back,
    and multiplied from the packed words both ways (a linear's forward and its input gradient)."""
    w, x, g = _x("w", (48, 384)), _x("x", (7, 384)), _x("g", (7, 48))
    packed = make(Op.NF4_PACK, w, arg=d.Nf4Arg(48, 384))
    outs = (
        ("nf4_pack", packed),
        ("nf4_unpack", make(Op.NF4_UNPACK, packed, arg=d.Nf4Arg(48, 384))),
        ("nf4_matmul x W^T", make(Op.NF4_MATMUL, x, packed, arg=d.Nf4MatmulArg(48, 384))),
        ("nf4_matmul x W (input gradient)", make(Op.NF4_MATMUL, g, packed, arg=d.Nf4MatmulArg(48, 384, True))),
    )
    return Function("nf4", (w, x, g), outs)


UNIT = (-1.0, 1.0)
CASES = (
    Case("unary", _unary, {"x": (-4.0, 4.0)}),
    Case("unary (positive domain)", _positive, {"x": (0.05, 8.0)}),
    Case("sin and cos, |x| < 500", _trigonometry, {"x": (-500.0, 500.0)}),
    Case("binary", _binary, {"a": (-2.0, 2.0), "b": (0.5, 2.5)}),
    Case(
        "adam and adamw update",
        _adam,
        {"p": UNIT, "g": UNIT, "m": UNIT, "v": (0.01, 0.1), "step1": (0, 1), "step1000": (999, 1000)},
    ),
    Case("integers", _integers, {"i": (0, 5), "x": (-9.0, 9.0)}),
    Case("is_finite", _finite, {"x": (-1.0, 1.0)}),
    Case("reductions", _reductions, {"x": (-3.0, 3.0)}),
    Case("long reductions", _long_reductions, {"x": (1.0, 7.0)}),
    Case("views", _views, {"a": UNIT, "b": UNIT}),
    Case("matmul 33x47x29", _matmul("matmul small", (33, 47), (47, 29), d.MatmulArg()), {"a": UNIT, "b": UNIT}),
    # more work than dot takes, an odd K (no vec4 operands): the 64 x 64 tiles
    Case("matmul 97x47x257", _matmul("matmul tiled", (97, 47), (47, 257), d.MatmulArg()), {"a": UNIT, "b": UNIT}),
    # a software adapter's small blocks (4 x 8, ragged rows); dot elsewhere
    Case("matmul 98x48x124", _matmul("matmul blocks", (98, 48), (48, 124), d.MatmulArg()), {"a": UNIT, "b": UNIT}),
    Case("matmul 768x40x768", _matmul("matmul large", (768, 40), (40, 768), d.MatmulArg()), {"a": UNIT, "b": UNIT}),
    Case(
        "matmul 2x520x36x516 (b transposed)",
        _matmul("matmul batched", (2, 520, 36), (2, 516, 36), d.MatmulArg(transpose_b=True)),
        {"a": UNIT, "b": UNIT},
    ),
    Case("conv2d", _conv, {"x": UNIT, "w": UNIT, "g": UNIT}),
    Case("pools", _pools, {"x": UNIT, "g": UNIT}),
    Case("gather and scatter", _rows, {"table": UNIT, "labels": (-(2**31), 2**31 - 1), "indices": (0, 11), "g": UNIT}),
    Case("augmentation", _augment, {"x": UNIT, "s": (0, 7), "f": UNIT}),
    Case("solve", _solve, dict.fromkeys(("a1", "b1", "a2", "b2", "a3", "b3"), UNIT)),
    Case("sort", _sort, {"x1": (-4.0, 4.0), "x2": (-4.0, 4.0), "x3": UNIT, "g2": UNIT, "g3": UNIT}),
    Case("random", _random, {"key": (0, 2**32), "position": (0, 2**32)}),
    Case("nf4 weights", _nf4, {"w": (-0.2, 0.2), "x": UNIT, "g": UNIT}),
    Case(
        "float16 storage",
        _float16,
        {"x": (-4.0, 4.0), "w": UNIT, "a": UNIT, "b": UNIT},
        needs=frozenset({"shader-f16"}),
    ),
)


async def run_case(device: object, fn: Function, level: Level, inputs: dict[str, bytes]) -> tuple[Schedule, dict, bool]:
    """Lower `fn` for `level` and the device's features, run it on `device` with `inputs`, and again from
    a fresh compile; returns the schedule, the first run's outputs (bytes) and whether the second run's
    bytes were identical."""
    features: frozenset[str] = getattr(device, "features", frozenset())
    done = lowered(fn, level, features)
    names = [name for name, _ in fn.outputs]
    runs = []
    for _ in range(2):
        compiled = await device.compile(done)  # type: ignore[attr-defined]
        runs.append(await compiled.step(inputs, names))
    return done.logical, runs[0], runs[0] == runs[1]
