"""The kernel schedule's vocabulary: buffers, strided views of them, fused elementwise expressions and
kernels. Renderers (WGSL, the CPU path's kernel calls) read only these types.

Conventions. All sizes and strides count elements, not bytes. A View reads (or writes) a buffer as an
N-d array: element at coordinates c is `offset + sum(c[d] * strides[d])`; broadcast axes have stride
0. Every view a kernel takes already has the kernel's iteration shape (see each Kind), so renderers
never broadcast or permute: they only multiply coordinates by strides.

Every type here is immutable. Lowering makes them by the ten thousand, so the most frequent are cheap to make
and to keep: views are named tuples; buffers, steps, expressions and kernels are slotted (one object each
for the collector, not two) and write each field once through its slot (a frozen dataclass's own __init__
looks up object.__setattr__ for every field).
"""

from __future__ import annotations

import enum
import functools
import math
from dataclasses import dataclass
from typing import NamedTuple

from scellis.ops import DType, Op

Shape = tuple[int, ...]


@dataclass(frozen=True, init=False, slots=True)
class Buffer:
    """One allocation. `name` is the function input or output it holds, if any."""

    id: int
    dtype: DType
    size: int  # elements
    name: str | None = None

    def __init__(self, id: int, dtype: DType, size: int, name: str | None = None) -> None:  # noqa: A002
        _set_buffer_id(self, id)
        _set_buffer_dtype(self, dtype)
        _set_buffer_size(self, size)
        _set_buffer_name(self, name)

    @property
    def nbytes(self) -> int:
        return storage_bytes(self.dtype, self.size)


_set_buffer_id, _set_buffer_dtype, _set_buffer_size, _set_buffer_name = (
    getattr(Buffer, name).__set__ for name in ("id", "dtype", "size", "name")
)


def storage_bytes(dtype: DType, size: int) -> int:
    """Bytes a buffer of `size` elements takes on every device: 4 per element (bools are stored as u32),
    float16 2 per element rounded up to a multiple of 4 (WebGPU's copies and bindings come in words);
    at least one element. The one place buffer sizes are decided: plans, devices and wire formats read it."""
    if dtype is DType.F16:
        return -(-max(size, 1) // 2) * 4
    return max(size, 1) * 4


class View(NamedTuple):
    """A strided view of a buffer (see the conventions above)."""

    buffer: int
    shape: Shape
    strides: Shape
    offset: int = 0

    @staticmethod
    def contiguous(buffer: int, shape: Shape, offset: int = 0) -> View:
        return View(buffer, shape, contiguous_strides(shape), offset)

    @property
    def is_contiguous(self) -> bool:
        return self.strides == contiguous_strides(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)


@functools.cache  # a schedule's views have few shapes, asked for by the thousand
def contiguous_strides(shape: Shape) -> Shape:
    strides, step = [], 1
    for dim in reversed(shape):
        strides.append(step if dim != 1 else 0)
        step *= dim
    return tuple(reversed(strides))


# -- fused elementwise expressions ----------------------------------------------------------------


@dataclass(frozen=True, init=False, slots=True)
class Load:
    """Element of the kernel's input view `input` at the current coordinates."""

    input: int

    def __init__(self, input: int) -> None:  # noqa: A002 - the field's name
        _set_load_input(self, input)


_set_load_input = getattr(Load, "input").__set__  # noqa: B009 - the slot, not the field


@dataclass(frozen=True, init=False, slots=True)
class Const:
    value: float
    dtype: DType

    def __init__(self, value: float, dtype: DType) -> None:
        _set_const_value(self, value)
        _set_const_dtype(self, dtype)


_set_const_value, _set_const_dtype = (getattr(Const, name).__set__ for name in ("value", "dtype"))


@dataclass(frozen=True)
class Acc:
    """The value the kernel's main computation produced for this element (matmul, reduce, conv...)."""


@dataclass(frozen=True)
class Coord:
    """The current coordinate along `axis` of the iteration shape (as int32)."""

    axis: int


@dataclass(frozen=True, init=False, slots=True)
class Apply:
    """An elementwise IR op (unary, binary, where, cast) on earlier steps."""

    op: Op
    arg: object
    src: tuple[int, ...]  # indices of earlier steps of the same Expr

    def __init__(self, op: Op, arg: object, src: tuple[int, ...]) -> None:
        _set_apply_op(self, op)
        _set_apply_arg(self, arg)
        _set_apply_src(self, src)


_set_apply_op, _set_apply_arg, _set_apply_src = (getattr(Apply, name).__set__ for name in ("op", "arg", "src"))


Step = Load | Const | Acc | Coord | Apply


@dataclass(frozen=True, init=False, slots=True)
class Expr:
    """SSA steps; the last one is the value. `dtypes[i]` is step i's dtype."""

    steps: tuple[Step, ...]
    dtypes: tuple[DType, ...]

    def __init__(self, steps: tuple[Step, ...], dtypes: tuple[DType, ...]) -> None:
        _set_steps(self, steps)
        _set_dtypes(self, dtypes)

    @property
    def dtype(self) -> DType:
        return self.dtypes[-1]

    @property
    def is_identity(self) -> bool:
        return len(self.steps) == 1 and isinstance(self.steps[0], Acc | Load)


_set_steps, _set_dtypes = (getattr(Expr, name).__set__ for name in ("steps", "dtypes"))
ACC = Expr((Acc(),), (DType.F32,))


class Kind(enum.Enum):
    """What a kernel computes. Iteration shapes and input views:

    ELEMENTWISE    over out.shape; inputs have out.shape; value = expr; each of `stores` (view, step) also
                   writes that step of expr through its view (of out.shape): producers merged into their
                   consumer (lower.merge), one kernel writing several buffers
    MATMUL         inputs a [..., M, K], b [..., K, N] (already transposed by strides), out [..., M, N];
                   batch axes share out's batch shape; value = expr of Acc (the dot product), whose Loads
                   take the inputs after a and b, at the output's coordinates; each of `stores` (view, step)
                   writes that step of expr through its view (of out.shape): an elementwise consumer
                   merged into the product (lower.merge), an optimizer's update of the parameter whose
                   gradient this is, say
    REDUCE         input [*out.shape, *reduced] (the reduced axes moved last); value = expr of Acc where
                   Acc is the sum / mean / max / var (arg: a Reduction) of that input's elements, or, with a
                   prologue (Reduction.prologue), of the prologue's value over the first Reduction.reads
                   inputs (all [*out.shape, *reduced]; its Loads index them); the epilogue's Loads take the
                   inputs after those, at the output's coordinates. Each of `stores` (view, step) writes that
                   step of the prologue through its view (of the input's shape): elementwise producers
                   merged into the reduction (lower.merge) that still write their buffer; or, a store whose
                   view has the output's rank (fewer axes than the input's), that step of expr through its
                   view at the output's coordinates: an elementwise consumer merged into the reduction
    SOFTMAX, LOG_SOFTMAX   input [*rows, R] (the normalised axis moved last) -> out of the same shape,
                   contiguous in that order
    ARGMAX         input [*rows, R] -> out [*rows] int32 (first maximum)
    CONV2D, CONV2D_GRAD_INPUT, CONV2D_GRAD_WEIGHT, MAX_POOL2D, MAX_POOL2D_GRAD, AVG_POOL2D,
    AVG_POOL2D_GRAD, GATHER, SCATTER_ADD   contiguous inputs in the IR op's order; arg: the IR arg;
                   CONV2D's value = expr of Acc (a bias and activation can be fused)
    RANDOM         inputs key u32[2] and position u32[]; over out.shape; Acc = the draw of the flat
                   element index (arg: the IR RandomArg); value = expr of Acc (dropout fuses here)
    SHIFT2D        contiguous x [N, ..., H, W] and shift int32 [N, 2] -> out of x's shape, contiguous:
                   out[n, ..., i, j] = x[n, ..., i + shift[n, 0], j + shift[n, 1]], 0 outside x
    FLIP_LAST      contiguous x [N, ..., W] and flip bool [N] -> out of x's shape, contiguous:
                   out[n, ..., j] = x[n, ..., W - 1 - j] where flip[n], else x[n, ..., j]
    SOLVE          contiguous a [..., n, n] and b [..., n, k] -> out [..., n, n + k], contiguous: the augmented
                   matrix [a | b] of each batch entry, copied in and reduced there in place (the kernel's
                   workspace is its output); its last k columns end as x, the IR value (a view of them)
    SORT           input [*rows, R] (the sorted axis moved last) -> out of the same shape, contiguous in that
                   order: out[..., rank(j)] = x[..., j]
    SORT_GRAD      inputs x and g [*rows, R] (the axis moved last) -> out of the same shape, contiguous in
                   that order: out[..., j] = g[..., rank(j)], rank by x's keys
    CONCAT         float32 views, each of out's shape but along arg.axis (the IR AxisArg) -> out: the inputs
                   one after another along that axis, in one kernel (a roll's two slices, say)
    NF4_PACK       contiguous w f32 [rows, cols] -> out u32, the words scellis.ops.nf4 packs (arg: Nf4Arg)
    NF4_UNPACK     contiguous packed u32 words -> out f32 [rows, cols], contiguous (arg: Nf4Arg)
    NF4_MATMUL     contiguous x [..., k] and packed u32 words -> out [..., n], contiguous: x W^T, or x W
                   transposed (arg: the IR Nf4MatmulArg); each output sums its k products in increasing k
    SERIES         arg: the parts, kernels of the kinds and variants that run one invocation per index i of
                   [0, N) (lower.series): run one after another by each invocation, in order, as one
                   dispatch. `inputs` are every part's inputs, `out` and `stores` (step 0) every part's
                   outputs; a part reads what an earlier part wrote only at the elements that same
                   invocation wrote
    CHECK_INDEX    contiguous int32 indices and the record (the kernel's output) -> record: three u32 words
                   (how many indices lie outside [0, arg.bound), the flat position of the first, its value)
                   in the step's INDEX_CHECKS output, written only while its count is 0, so it keeps the
                   first bad step's until the host reads it (arg: the ops.indices.IndexUse). One fixed
                   order of work (a single workgroup, a single call), no atomics.
    """

    ELEMENTWISE = "elementwise"
    MATMUL = "matmul"
    REDUCE = "reduce"
    SOFTMAX = "softmax"
    LOG_SOFTMAX = "log_softmax"
    ARGMAX = "argmax"
    CONV2D = "conv2d"
    CONV2D_GRAD_INPUT = "conv2d_grad_input"
    CONV2D_GRAD_WEIGHT = "conv2d_grad_weight"
    MAX_POOL2D = "max_pool2d"
    MAX_POOL2D_GRAD = "max_pool2d_grad"
    AVG_POOL2D = "avg_pool2d"
    AVG_POOL2D_GRAD = "avg_pool2d_grad"
    GATHER = "gather"
    SCATTER_ADD = "scatter_add"
    RANDOM = "random"
    SHIFT2D = "shift2d"
    FLIP_LAST = "flip_last"
    SOLVE = "solve"
    SORT = "sort"
    SORT_GRAD = "sort_grad"
    CONCAT = "concat"
    CHECK_INDEX = "check_index"
    SERIES = "series"
    NF4_PACK = "nf4_pack"
    NF4_UNPACK = "nf4_unpack"
    NF4_MATMUL = "nf4_matmul"


# The step output holding every CHECK_INDEX record (RECORD_WORDS u32 words each, at the kernel's offset).
INDEX_CHECKS = "check/index"
RECORD_WORDS = 3


class Reduction(NamedTuple):
    """REDUCE's arg: the IR op, the variance's correction, and how many terms of the IR reduction one output
    element sums in the end (more than the kernel's own reduced elements when a long reduction is split into
    a partial and a final kernel: its error bound is the whole reduction's). `prologue`: what is reduced, an
    expression over the kernel's first `reads` inputs at the reduced input's coordinates (None: input 0
    itself, and `reads` is 1); see Kind.REDUCE."""

    op: Op
    correction: int
    terms: int
    prologue: Expr | None = None
    reads: int = 1


@dataclass(frozen=True, init=False, slots=True)
class Kernel:
    kind: Kind
    out: View  # the output view (contiguous unless writing into part of a buffer)
    inputs: tuple[View, ...]
    arg: object = None  # the IR op's argument, for kinds that need it
    expr: Expr = ACC  # the value written: for ELEMENTWISE over Loads, otherwise over Acc
    variant: str = "default"  # the determinism levels choose here
    covers: tuple[int, ...] = ()  # positions (in the function's node order) of the IR nodes it computes
    stores: tuple[tuple[View, int], ...] = ()  # more outputs, each a step of expr or a prologue (see Kind)

    def __init__(  # noqa: PLR0917 - the fields, in order
        self,
        kind: Kind,
        out: View,
        inputs: tuple[View, ...],
        arg: object = None,
        expr: Expr = ACC,
        variant: str = "default",
        covers: tuple[int, ...] = (),
        stores: tuple[tuple[View, int], ...] = (),
    ) -> None:
        _set_kind(self, kind)
        _set_out(self, out)
        _set_inputs(self, inputs)
        _set_arg(self, arg)
        _set_expr(self, expr)
        _set_variant(self, variant)
        _set_covers(self, covers)
        _set_stores(self, stores)

    def with_variant(self, variant: str) -> Kernel:
        """This kernel implemented as `variant` (dataclasses.replace, without its generic field walk)."""
        return Kernel(self.kind, self.out, self.inputs, self.arg, self.expr, variant, self.covers, self.stores)

    def with_views(self, out: View, inputs: tuple[View, ...], stores: tuple[tuple[View, int], ...]) -> Kernel:
        """This kernel reading `inputs` and writing `out` and `stores` instead."""
        return Kernel(self.kind, out, inputs, self.arg, self.expr, self.variant, self.covers, stores)

    @property
    def prologue_stores(self) -> tuple[tuple[View, int], ...]:
        """A REDUCE's stores of its prologue's steps, at the reduced input's coordinates (Kind.REDUCE)."""
        if self.kind is not Kind.REDUCE or not self.stores:
            return ()
        rank = len(self.out.shape)
        return tuple(store for store in self.stores if len(store[0].shape) > rank)

    @property
    def epilogue_stores(self) -> tuple[tuple[View, int], ...]:
        """The stores of expr's steps, at the output's coordinates (all of them but a REDUCE's prologue's)."""
        if self.kind is not Kind.REDUCE or not self.stores:
            return self.stores
        rank = len(self.out.shape)
        return tuple(store for store in self.stores if len(store[0].shape) == rank)

    @property
    def writes(self) -> tuple[View, ...]:
        """Every view the kernel writes: its output, then its stores'."""
        return (self.out, *(view for view, _ in self.stores)) if self.stores else (self.out,)

    @property
    def parts(self) -> tuple[Kernel, ...]:
        """A SERIES's parts, in order; any other kernel is its one part."""
        return self.arg if self.kind is Kind.SERIES else (self,)  # type: ignore[return-value]

    @property
    def label(self) -> str:
        if self.kind is Kind.SERIES:
            return f"series({', '.join(part.label for part in self.parts)})"
        fused = sum(1 for s in self.expr.steps if isinstance(s, Apply))
        if isinstance(self.arg, Reduction) and self.arg.prologue is not None:
            fused += sum(1 for s in self.arg.prologue.steps if isinstance(s, Apply))
        return f"{self.kind.value}{f'+{fused}' if fused and self.kind is not Kind.ELEMENTWISE else ''}"


_set_kind, _set_out, _set_inputs, _set_arg, _set_expr, _set_variant, _set_covers, _set_stores = (
    getattr(Kernel, name).__set__ for name in ("kind", "out", "inputs", "arg", "expr", "variant", "covers", "stores")
)


def series(parts: tuple[Kernel, ...]) -> Kernel:
    """The SERIES kernel running `parts` in order (Kind.SERIES): their inputs, each view once, and their
    outputs, the first part's as `out`."""
    inputs = tuple(dict.fromkeys(v for part in parts for v in part.inputs))
    writes = [v for part in parts for v in part.writes]
    covers = tuple(c for part in parts for c in part.covers)
    stores = tuple((v, 0) for v in writes[1:])
    return Kernel(Kind.SERIES, writes[0], inputs, parts, ACC, "default", covers, stores)


def flat(kernels: tuple[Kernel, ...]) -> tuple[Kernel, ...]:
    """`kernels` with each SERIES replaced by its parts: what runs, in order, one kernel at a time."""
    if not any(k.kind is Kind.SERIES for k in kernels):
        return kernels
    return tuple(part for kernel in kernels for part in kernel.parts)


@dataclass(frozen=True)
class Copy:
    """Copy a whole buffer into another (next step's inputs from this step's outputs)."""

    src: int
    dst: int


@dataclass(frozen=True)
class Schedule:
    """Kernels in execution order over buffers; `inputs`/`outputs` map names to buffer ids;
    `carry` copies run after the kernels (e.g. `param/w` into `w`); `notes` say what the level could
    not use on the device it was lowered for, and what it uses instead."""

    name: str
    buffers: tuple[Buffer, ...]
    kernels: tuple[Kernel, ...]
    inputs: tuple[tuple[str, int], ...]
    outputs: tuple[tuple[str, int], ...]
    carry: tuple[Copy, ...] = ()
    notes: tuple[str, ...] = ()

    def buffer(self, buffer_id: int) -> Buffer:
        return self.buffers[buffer_id]
