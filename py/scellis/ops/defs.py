"""Every IR op and the typed argument it carries (one small frozen dataclass per op family).

An op's argument holds everything about it that is not an input value: axes, strides, the name of an
input. Arguments are plain data (ints, floats, strings, tuples, enums) so they print and hash exactly.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from scellis.ops.dtypes import DType


class Role(enum.Enum):
    """What an IR function input is, so later stages know who supplies it and what it may alias."""

    DATA = "data"  # features of a batch (or, with a resident data set, the rows of the batch)
    DATASET = "dataset"  # a whole split held on the device (a resident data set), written once
    LABEL = "label"  # targets of a batch
    PARAM = "param"  # trainable or frozen parameters
    STATE = "state"  # optimizer state, running statistics, step counter
    RNG = "rng"  # a substream's key (u32[2])
    SETTING = "setting"  # a scalar the host sets between steps (e.g. the RNG position)


@dataclass(frozen=True, slots=True)
class NoArg:
    """For ops that need nothing besides their inputs."""


@dataclass(frozen=True, slots=True)
class InputArg:
    name: str
    role: Role


@dataclass(frozen=True, slots=True)
class ConstArg:
    value: float  # an int-valued float for integer dtypes


@dataclass(frozen=True, slots=True)
class CastArg:
    to: DType


@dataclass(frozen=True, slots=True)
class LeakyReluArg:
    alpha: float


@dataclass(frozen=True, slots=True)
class GeluArg:
    approximate: str  # "tanh" or "none" (the erf form)


@dataclass(frozen=True, slots=True)
class ReduceArg:
    axes: tuple[int, ...]  # non-negative, sorted, unique
    keepdims: bool
    correction: int = 0  # VAR only: divide by n - correction


@dataclass(frozen=True, slots=True)
class AxisArg:
    axis: int  # non-negative


@dataclass(frozen=True, slots=True)
class ShapeArg:
    shape: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class PermuteArg:
    perm: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class SliceArg:
    starts: tuple[int, ...]
    stops: tuple[int, ...]
    steps: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class SliceGradArg:
    shape: tuple[int, ...]  # the sliced input's shape: the gradient is placed into zeros of it
    starts: tuple[int, ...]
    stops: tuple[int, ...]
    steps: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class MatmulArg:
    transpose_a: bool = False  # use a's last two axes swapped
    transpose_b: bool = False


@dataclass(frozen=True, slots=True)
class ConvArg:
    stride: tuple[int, int]
    padding: tuple[int, int]
    dilation: tuple[int, int]
    groups: int


@dataclass(frozen=True, slots=True)
class ConvGradArg:
    conv: ConvArg
    shape: tuple[int, ...]  # shape of the gradient produced: the input's or the weight's


@dataclass(frozen=True, slots=True)
class PoolArg:
    kernel: tuple[int, int]
    stride: tuple[int, int]
    padding: tuple[int, int]  # max pools pad with -inf, average pools count padding as zeros


@dataclass(frozen=True, slots=True)
class PoolGradArg:
    pool: PoolArg
    shape: tuple[int, ...]  # the pooled input's shape


@dataclass(frozen=True, slots=True)
class ClassesArg:
    classes: int


@dataclass(frozen=True, slots=True)
class RowsArg:
    rows: int


@dataclass(frozen=True, slots=True)
class Nf4Arg:
    """An NF4-packed weight's logical shape (scellis.ops.nf4): W [rows, cols]."""

    rows: int
    cols: int


@dataclass(frozen=True, slots=True)
class Nf4MatmulArg:
    """x times the NF4-packed W [rows, cols]: x W^T (x [..., cols] -> [..., rows], a torch Linear's
    forward) or, transposed, x W (x [..., rows] -> [..., cols], its input gradient)."""

    rows: int
    cols: int
    transpose: bool = False


class Distribution(enum.Enum):
    UNIFORM = "uniform"  # float32 in [0, 1)
    NORMAL = "normal"  # float32, mean 0, variance 1
    BERNOULLI = "bernoulli"  # bool, True with probability 1 - p (a keep mask for drop probability p)
    INTEGER = "integer"  # int32, uniform in [0, n) without modulo bias (scellis.rng.integer)


@dataclass(frozen=True, slots=True)
class RandomArg:
    """Counter-based draws: element i uses counter (i, site, position, 0) under the substream's key."""

    distribution: Distribution
    substream: str
    site: int  # tells apart draws of one substream at one position (e.g. two dropout layers)
    shape: tuple[int, ...]
    p: float = 0.0  # BERNOULLI only: probability of False
    n: int = 0  # INTEGER only: draws lie in [0, n), 1 <= n <= 2**31 (int32)


class Op(enum.Enum):
    """IR ops. The comment after each names its argument type and its inputs. Hashed by identity (members
    are singletons, equal only to themselves): Enum's own hash is a Python call, and ops key hot lookups."""

    __hash__ = object.__hash__

    INPUT = "input"  # InputArg; no inputs
    CONST = "const"  # ConstArg; no inputs; shape ()
    CAST = "cast"  # CastArg; (x)
    # unary, float -> float
    NEG = "neg"
    EXP = "exp"
    EXPM1 = "expm1"  # e^x - 1, with its relative accuracy kept for small |x|
    LOG = "log"
    SQRT = "sqrt"
    RSQRT = "rsqrt"
    ABS = "abs"
    SIGN = "sign"
    RELU = "relu"
    LEAKY_RELU = "leaky_relu"  # LeakyReluArg
    GELU = "gelu"  # GeluArg
    TANH = "tanh"
    SIGMOID = "sigmoid"
    ERF = "erf"
    COS = "cos"
    SIN = "sin"
    FLOOR = "floor"
    IS_FINITE = "is_finite"  # float -> bool: false for inf and NaN, decided by the exponent bits
    # binary with numpy broadcasting; float (or matching integer) operands
    ADD = "add"
    SUB = "sub"
    MUL = "mul"
    DIV = "div"
    POW = "pow"
    MAXIMUM = "maximum"
    MINIMUM = "minimum"
    LESS = "less"  # -> bool
    EQUAL = "equal"  # -> bool
    WHERE = "where"  # (cond: bool, a, b), broadcasting
    # reductions: ReduceArg
    SUM = "sum"
    MEAN = "mean"
    MAX = "max"
    VAR = "var"
    ARGMAX = "argmax"  # AxisArg; -> int32, axis removed
    # movement
    EXPAND = "expand"  # ShapeArg; broadcast to shape
    RESHAPE = "reshape"  # ShapeArg
    PERMUTE = "permute"  # PermuteArg
    CONCAT = "concat"  # AxisArg; (x0, x1, ...)
    SLICE = "slice"  # SliceArg
    SLICE_GRAD = "slice_grad"  # SliceGradArg; (g) -> zeros of shape with g at the slice
    # linear algebra and convolution (NCHW, weights OIHW)
    MATMUL = "matmul"  # MatmulArg; (a, b), batch axes broadcast
    # solve: a @ x = b for each matrix of the batch axes (equal in a and b: no broadcasting), by Gaussian
    # elimination with partial pivoting (pivot: the first row of largest |value| in the column), then back
    # substitution, in one fixed order: O(n^3 + n^2 k) a matrix, no size limit. A zero pivot (a singular a)
    # gives inf or NaN values, never an exception; a nearly singular a gives large, inaccurate ones.
    SOLVE = "solve"  # NoArg; (a [..., n, n], b [..., n, k]) -> x [..., n, k]
    CONV2D = "conv2d"  # ConvArg; (x, w)
    CONV2D_GRAD_INPUT = "conv2d_grad_input"  # ConvGradArg; (g, w)
    CONV2D_GRAD_WEIGHT = "conv2d_grad_weight"  # ConvGradArg; (x, g)
    MAX_POOL2D = "max_pool2d"  # PoolArg; (x)
    MAX_POOL2D_GRAD = "max_pool2d_grad"  # PoolGradArg; (x, g): g to the first maximum of each window
    AVG_POOL2D = "avg_pool2d"  # PoolArg; (x)
    AVG_POOL2D_GRAD = "avg_pool2d_grad"  # PoolGradArg; (g)
    # normalisation along one axis
    SOFTMAX = "softmax"  # AxisArg
    LOG_SOFTMAX = "log_softmax"  # AxisArg
    # indexing
    GATHER = "gather"  # NoArg; (table [R, ...], indices int32 [...]) -> [..., ...]: rows of table
    SCATTER_ADD = "scatter_add"  # RowsArg; (indices int32 [...], g [..., ...]) -> [rows, ...], in index order
    ONE_HOT = "one_hot"  # ClassesArg; (labels int32 [...]) -> f32 [..., classes]
    # ordering along one axis, stable: NaN after everything (+inf too), -0.0 equal to 0.0, ties in index order.
    # Element i's rank is the number of smaller keys plus the number of equal keys before it along the axis:
    # WebGPU counts it, O(n^2) a line of n; the CPU path merge-sorts, O(n log n), to the same order.
    SORT = "sort"  # AxisArg; (x) -> out of x's shape, ascending: out[rank(i)] = x[i]
    SORT_GRAD = "sort_grad"  # AxisArg; (x, g) -> gx of x's shape: gx[i] = g[rank(i)] (SORT's VJP)
    # per-example movement (data augmentation); the output has x's shape
    SHIFT2D = "shift2d"  # NoArg; (x [N, ..., H, W], shift int32 [N, 2]): x[n, ..., i + sy, j + sx], 0 outside
    FLIP_LAST = "flip_last"  # NoArg; (x [N, ..., W], flip bool [N]): x with its last axis reversed where flip[n]
    # randomness
    RANDOM = "random"  # RandomArg; (key u32[2], position u32[])
    # 4-bit NormalFloat weights (scellis.ops.nf4): packed, read back, and multiplied without unpacking
    NF4_PACK = "nf4_pack"  # Nf4Arg; (w f32 [rows, cols]) -> u32 [nf4.words(rows, cols)]
    NF4_UNPACK = "nf4_unpack"  # Nf4Arg; (packed u32) -> f32 [rows, cols]
    NF4_MATMUL = "nf4_matmul"  # Nf4MatmulArg; (x f32 [..., k], packed u32) -> f32 [..., n]


UNARY_FLOAT = frozenset(
    {
        Op.NEG, Op.EXP, Op.EXPM1, Op.LOG, Op.SQRT, Op.RSQRT, Op.ABS, Op.SIGN, Op.RELU, Op.LEAKY_RELU,
        Op.GELU, Op.TANH, Op.SIGMOID, Op.ERF, Op.COS, Op.SIN, Op.FLOOR,
    }
)  # fmt: skip
BINARY = frozenset({Op.ADD, Op.SUB, Op.MUL, Op.DIV, Op.POW, Op.MAXIMUM, Op.MINIMUM, Op.LESS, Op.EQUAL})
COMPARE = frozenset({Op.LESS, Op.EQUAL})
UNARY = UNARY_FLOAT | {Op.IS_FINITE}
REDUCE = frozenset({Op.SUM, Op.MEAN, Op.MAX, Op.VAR})

ARG_TYPES: dict[Op, type] = {
    Op.INPUT: InputArg,
    Op.CONST: ConstArg,
    Op.CAST: CastArg,
    **dict.fromkeys(UNARY | BINARY, NoArg),
    Op.LEAKY_RELU: LeakyReluArg,
    Op.GELU: GeluArg,
    Op.WHERE: NoArg,
    **dict.fromkeys(REDUCE, ReduceArg),
    Op.ARGMAX: AxisArg,
    Op.EXPAND: ShapeArg,
    Op.RESHAPE: ShapeArg,
    Op.PERMUTE: PermuteArg,
    Op.CONCAT: AxisArg,
    Op.SLICE: SliceArg,
    Op.SLICE_GRAD: SliceGradArg,
    Op.MATMUL: MatmulArg,
    Op.SOLVE: NoArg,
    Op.CONV2D: ConvArg,
    Op.CONV2D_GRAD_INPUT: ConvGradArg,
    Op.CONV2D_GRAD_WEIGHT: ConvGradArg,
    Op.MAX_POOL2D: PoolArg,
    Op.AVG_POOL2D: PoolArg,
    Op.MAX_POOL2D_GRAD: PoolGradArg,
    Op.AVG_POOL2D_GRAD: PoolGradArg,
    Op.SOFTMAX: AxisArg,
    Op.LOG_SOFTMAX: AxisArg,
    Op.GATHER: NoArg,
    Op.SCATTER_ADD: RowsArg,
    Op.ONE_HOT: ClassesArg,
    Op.SORT: AxisArg,
    Op.SORT_GRAD: AxisArg,
    Op.SHIFT2D: NoArg,
    Op.FLIP_LAST: NoArg,
    Op.RANDOM: RandomArg,
    Op.NF4_PACK: Nf4Arg,
    Op.NF4_UNPACK: Nf4Arg,
    Op.NF4_MATMUL: Nf4MatmulArg,
}
