"""IR function -> kernel schedule, with fusion.

Expects a verified Function. Guarantees: kernels in an order that respects every dependency; each
function input and output has its own buffer; views (reshape, expand, permute, slice) never cost a
kernel when the strides can express them; chains of elementwise ops become one kernel; an elementwise
chain whose only use of a matmul / reduction / conv2d result is that chain is fused into that kernel
as its epilogue (so matmul + bias + activation is one kernel); no kernel binds more than
MAX_INPUTS buffers (WebGPU's default of 8 storage buffers per stage, one for the output).

Fusion rule: an elementwise node is computed inside its consumer when it has exactly one consumer and
that consumer is elementwise too; otherwise it is written to a buffer.

float16 is a storage type: a float16 value is always written to a buffer of its own (its kernel stores
float16), and its cast back to float32 costs no kernel: every kernel converts what it loads from a float16
buffer to float32 (`Expr` steps loading one are float32). So the kernel that computes a value stores it
in float16 and every reader converts it on load.

Indices are checked (ops.indices): before the first kernel that reads a buffer of indices (gather,
scatter_add, one_hot), a CHECK_INDEX kernel records any index outside [0, bound) in the step output
INDEX_CHECKS, once per indices view and bound; indices that are in range by construction (a draw of
integers below the bound) and constant labels are not checked.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from scellis.gcpause import paused
from scellis.ir.function import Function, input_name
from scellis.levels import Level
from scellis.lower import views
from scellis.lower.kernels import (
    INDEX_CHECKS,
    RECORD_WORDS,
    Acc,
    Apply,
    Buffer,
    Const,
    Coord,
    Copy,
    Expr,
    Kernel,
    Kind,
    Load,
    Reduction,
    Schedule,
    Shape,
    Step,
    View,
)
from scellis.lower.merge import bindings_of, merged
from scellis.lower.series import joined
from scellis.lower.variants import notes, with_variants
from scellis.ops import DType, Node, Op
from scellis.ops import defs as d
from scellis.ops.indices import index_use

MAX_INPUTS = 7
ELEMENTWISE = d.UNARY | d.BINARY | {Op.WHERE, Op.CAST, Op.RANDOM, Op.ONE_HOT}
VIEW_OPS = {Op.RESHAPE, Op.EXPAND, Op.PERMUTE, Op.SLICE}
PRODUCERS = {Op.MATMUL: Kind.MATMUL, Op.CONV2D: Kind.CONV2D, **dict.fromkeys(d.REDUCE, Kind.REDUCE)}
DIRECT = {
    Op.CONV2D_GRAD_INPUT: Kind.CONV2D_GRAD_INPUT,
    Op.CONV2D_GRAD_WEIGHT: Kind.CONV2D_GRAD_WEIGHT,
    Op.MAX_POOL2D: Kind.MAX_POOL2D,
    Op.MAX_POOL2D_GRAD: Kind.MAX_POOL2D_GRAD,
    Op.AVG_POOL2D: Kind.AVG_POOL2D,
    Op.AVG_POOL2D_GRAD: Kind.AVG_POOL2D_GRAD,
    Op.GATHER: Kind.GATHER,
    Op.SCATTER_ADD: Kind.SCATTER_ADD,
    Op.SHIFT2D: Kind.SHIFT2D,
    Op.FLIP_LAST: Kind.FLIP_LAST,
    Op.NF4_PACK: Kind.NF4_PACK,
    Op.NF4_UNPACK: Kind.NF4_UNPACK,
    Op.NF4_MATMUL: Kind.NF4_MATMUL,
}
# Ops along one axis, which the kernel reads last: (x) or (x, g) [*rows, R]
ROWS = {
    Op.SOFTMAX: Kind.SOFTMAX,
    Op.LOG_SOFTMAX: Kind.LOG_SOFTMAX,
    Op.ARGMAX: Kind.ARGMAX,
    Op.SORT: Kind.SORT,
    Op.SORT_GRAD: Kind.SORT_GRAD,
}
FAMILY: dict[Op, str] = {
    Op.CONST: "const",
    **dict.fromkeys(VIEW_OPS, "view"),
    **dict.fromkeys(ELEMENTWISE, "elementwise"),
    **dict.fromkeys(PRODUCERS, "producer"),
    Op.CONCAT: "concat",
    Op.SLICE_GRAD: "slice_grad",
    **dict.fromkeys(ROWS, "rows"),
    Op.SOLVE: "solve",
}  # how each op lowers; the rest (DIRECT) are one kernel each over contiguous inputs


# -- pending (not yet written) elementwise values ---------------------------------------------------


# A tree is immutable once built (but for its scratch, below) and is compared by identity. Every tree carries
# what fusion asks of it, summed once where it is built (a chain's trees share their subtrees, so walking them
# at every node would cost the square of the chain's length): `producer`, its open producer (None, or the
# one; the MIXED flag when there are more), `buffers`, the buffers its loads read, `terms`, its node count
# counted along every path, `coords`, the axes its coordinates read, `acc`, whether it holds an accumulator,
# `uniform`, whether every element has the same value (constants and loads of one element only), and
# `scalar`, whether every load reads a scalar view; the yes/no ones are bits of `flags` (MIXED, ACC, VARYING:
# not uniform, NOT_SCALAR), each set where any subtree sets it. Plain classes: lowering makes tens of
# thousands of them. `mark` and `step` are the one scratch a kernel writes while it emits a tree: the step
# computing it, in the kernel that marked it last (a subtree shared within a kernel is computed once).
_NONE: frozenset[int] = frozenset()
MIXED, ACC, VARYING, NOT_SCALAR = 1, 2, 4, 8


class _Tree:
    __slots__ = ()
    flags: int

    @property
    def acc(self) -> bool:
        return bool(self.flags & ACC)

    @property
    def uniform(self) -> bool:
        return not self.flags & VARYING

    @property
    def scalar(self) -> bool:
        return not self.flags & NOT_SCALAR


class _Leaf(_Tree):
    mark: object = None
    step = -1
    producer: Pending | None = None
    buffers = _NONE
    terms = 1
    coords = _NONE
    flags = 0


class PLoad(_Leaf):
    def __init__(self, view: View) -> None:
        self.view = view
        self.buffers = frozenset((view.buffer,))
        self.flags = (VARYING if any(view.strides) else 0) | (NOT_SCALAR if view.shape else 0)


class PConst(_Leaf):
    def __init__(self, value: float, dtype: DType) -> None:
        self.value, self.dtype = value, dtype
        self.const = Const(value, dtype)  # its step, made once: a constant is emitted in every kernel that reads it


class PAcc(_Leaf):
    """The result of a producer kernel that has not been written yet (its epilogue is still open)."""

    flags = ACC | VARYING | NOT_SCALAR

    def __init__(self, producer: Pending) -> None:
        self.producer = producer


class PCoord(_Leaf):
    flags = VARYING

    def __init__(self, axis: int) -> None:
        self.axis = axis
        self.coords = frozenset((axis,))


class PApply(_Tree):
    __slots__ = ("arg", "buffers", "coords", "dtype", "flags", "mark", "op", "producer", "src", "step", "terms")
    op: Op
    arg: object
    src: tuple[Tree, ...]
    dtype: DType
    producer: Pending | None
    buffers: frozenset[int]
    terms: int
    coords: frozenset[int]
    mark: object
    step: int

    def __init__(self, op: Op, arg: object, src: tuple[Tree, ...], dtype: DType) -> None:
        # one statement a field (no tuple packing): lowering makes one of these per elementwise node
        self.op = op
        self.arg = arg
        self.src = src
        self.dtype = dtype
        self.mark = None
        self.step = -1
        if len(src) == 2:  # most ops are binary: the loop below, unrolled
            first, second = src
            producer = first.producer
            other = second.producer
            flags = first.flags | second.flags
            if producer is None:
                producer = other
            elif other is not None and other is not producer:
                flags |= MIXED
            self.producer = producer
            self.flags = flags
            self.terms = 1 + first.terms + second.terms
            a, b = first.buffers, second.buffers
            self.buffers = (a | b if b else a) if a else b
            a, b = first.coords, second.coords
            self.coords = (a | b if b else a) if a else b
            return
        producer, buffers, terms, coords, flags = None, _NONE, 1, _NONE, 0
        for t in src:
            found = t.producer
            if found is not None:
                if producer is None:
                    producer = found
                elif producer is not found:
                    flags |= MIXED
            flags |= t.flags
            terms += t.terms
            if t.buffers:
                buffers = buffers | t.buffers if buffers else t.buffers
            if t.coords:
                coords = coords | t.coords if coords else t.coords
        self.producer, self.buffers, self.terms, self.coords, self.flags = producer, buffers, terms, coords, flags


Tree = PLoad | PConst | PAcc | PCoord | PApply


@dataclass(eq=False, slots=True)
class Pending:
    """A value described but not computed: an elementwise tree over views, or a producer kernel
    (kind, inputs, arg) whose epilogue may still grow."""

    shape: tuple[int, ...]
    dtype: DType
    tree: Tree | None = None
    kind: Kind | None = None
    inputs: tuple[View, ...] = ()
    arg: object = None
    covers: list[int] = field(default_factory=list)


Value = View | Pending


class Lowerer:
    def __init__(self, fn: Function) -> None:
        self.fn = fn
        self.buffers: list[Buffer] = []
        self.kernels: list[Kernel] = []
        # each IR node's value, use count and position (keyed by the node: nodes hash by identity)
        self.values: dict[Node, Value] = {}
        self.uses: Counter[Node] = Counter()
        self.position: dict[Node, int] = {}
        self.checked: set[tuple[View, int]] = set()  # (indices, bound) pairs a CHECK_INDEX kernel covers
        self.records = -1  # the INDEX_CHECKS buffer, once a kernel checks indices
        self.broadcasts: dict[tuple[Tree, Shape, Shape], Tree] = {}  # (tree, its shape, a new shape): broadcast
        # each Apply step made, by (op, id of its arg, sources): steps are immutable, and kernels of one shape of
        # update repeat the same few hundred, so each is made once and shared
        self.applies: dict[tuple[Op, int, tuple[int, ...]], Apply] = {}

    # -- buffers and kernels ------------------------------------------------------------------

    def new_buffer(self, dtype: DType, size: int, name: str | None = None) -> int:
        self.buffers.append(Buffer(len(self.buffers), dtype, size, name))
        return len(self.buffers) - 1

    def check_indices(self, node: Node, indices: View) -> None:
        """A CHECK_INDEX kernel for the indices `node` reads (see the module docstring)."""
        use = index_use(node)
        assert use is not None
        drawn = (node.src[1] if node.op is Op.GATHER else node.src[0]).arg
        below = isinstance(drawn, d.RandomArg) and drawn.distribution is d.Distribution.INTEGER and drawn.n <= use.bound
        if below or (indices, use.bound) in self.checked:
            return
        if self.records < 0:
            self.records = self.new_buffer(DType.U32, RECORD_WORDS, INDEX_CHECKS)
        record = View.contiguous(self.records, (RECORD_WORDS,), RECORD_WORDS * len(self.checked))
        self.checked.add((indices, use.bound))
        self.kernels.append(Kernel(Kind.CHECK_INDEX, record, (indices, record), use, covers=(self.position[node],)))

    def view_of(self, value: Value) -> View:
        """A value as a view of a buffer, computing it first if it is pending."""
        return value if isinstance(value, View) else self.write(value, None)

    def write(self, p: Pending, name: str | None, into: View | None = None) -> View:
        """Emit the kernel computing `p` into a new buffer (or `into`)."""
        out = into or View.contiguous(self.new_buffer(p.dtype, math.prod(p.shape), name), p.shape)
        if p.tree is None:  # a producer with no epilogue: its accumulator is the value
            identity = Expr((Acc(),), (p.dtype,))
            kernel = Kernel(p.kind, out, p.inputs, p.arg, identity, covers=tuple(p.covers))  # type: ignore[arg-type]
        else:
            kernel = self._expression_kernel(p, out)
        self.kernels.append(kernel)
        return out

    def _expression_kernel(self, p: Pending, out: View) -> Kernel:
        assert p.tree is not None
        producer = _single_producer(p.tree)
        base_inputs = producer.inputs if producer else ()
        steps: list[Step] = []
        dtypes: list[DType] = []
        loads: dict[View, int] = {}
        buffers, first, mark = self.buffers, len(base_inputs), object()  # this kernel's mark on what it emitted
        applies = self.applies
        add_step, add_dtype = steps.append, dtypes.append

        def emit(tree: Tree) -> int:
            """The step computing `tree`, emitting what this kernel has not yet (sources first, in order)."""
            if tree.mark is mark:  # a subtree this kernel already computes
                return tree.step
            step: Step
            kind = type(tree)
            if kind is PApply:
                src = tree.src  # type: ignore[union-attr]
                srcs: tuple[int, ...]
                if len(src) == 2:  # most ops are binary
                    first_src, second_src = src
                    srcs = (emit(first_src), emit(second_src))  # noqa: F821 - deleted once done
                else:
                    srcs = tuple([emit(s) for s in src])  # noqa: F821
                op, arg = tree.op, tree.arg  # type: ignore[union-attr]
                key = (op, id(arg), srcs)  # the arg lives as long as its IR node, longer than this lowering
                shared = applies.get(key)
                if shared is None:
                    shared = applies[key] = Apply(op, arg, srcs)
                step = shared
                dtype = tree.dtype  # type: ignore[union-attr]
            elif kind is PLoad:
                view = tree.view  # type: ignore[union-attr]
                slot = loads.get(view)
                if slot is None:
                    slot = loads[view] = first + len(loads)
                step, dtype = LOADS[slot] if slot < len(LOADS) else Load(slot), loaded(buffers[view.buffer].dtype)
            elif kind is PConst:
                step, dtype = tree.const, tree.dtype  # type: ignore[union-attr]
            elif kind is PAcc:
                step, dtype = ACC_STEP, tree.producer.dtype  # type: ignore[union-attr]
            else:
                step, dtype = Coord(tree.axis), DType.I32  # type: ignore[union-attr]
            tree.mark = mark
            at = tree.step = len(steps)
            add_step(step)
            add_dtype(dtype)
            return at

        emit(p.tree)
        del emit  # emit refers to itself: clearing that cell frees this kernel's scratch now, not at a collection
        return _kernel(p, producer, out, (*base_inputs, *loads), steps=steps, dtypes=dtypes)

    # -- turning values into trees ----------------------------------------------------------------

    def tree(self, value: Value, shape: tuple[int, ...]) -> Tree:
        """`value` as an elementwise tree broadcast to `shape` (writing it out when it cannot be)."""
        if type(value) is View:
            return PLoad(value if value.shape == shape and 1 not in shape else views.broadcast(value, shape))
        tree = value.tree  # type: ignore[union-attr]
        if tree is None:  # an untouched producer: its result becomes the accumulator
            if value.shape == shape:
                return PAcc(value)  # type: ignore[arg-type]
        elif value.shape == shape:
            return tree
        elif _broadcastable(tree, value.shape, shape):
            return self.broadcast_tree(tree, value.shape, shape)
        return PLoad(views.broadcast(self.view_of(value), shape))

    def broadcast_tree(self, tree: Tree, old: tuple[int, ...], shape: tuple[int, ...]) -> Tree:
        """`tree` (of a value of shape `old`) broadcast to `shape`, built once per tree and shape (a scalar
        expression such as Adam's step size is broadcast to every parameter's shape)."""
        if old == shape:
            return tree
        key = (tree, old, shape)
        known = self.broadcasts.get(key)
        if known is None:
            lead = len(shape) - len(old)
            known = self.broadcasts[key] = _rebuild(tree, lambda view: views.broadcast(view, shape), lead)
        return known


ACC_STEP = Acc()
# enum members the per-node and per-step paths compare with, bound once: a member's lookup on its class is
# several times slower than a module global's
_CAST, _ONE_HOT, _RANDOM = Op.CAST, Op.ONE_HOT, Op.RANDOM
_F16, _F32, _ELEMENTWISE = DType.F16, DType.F32, Kind.ELEMENTWISE
LOADS = tuple(Load(i) for i in range(32))  # steps are immutable: the frequent ones are shared


def _kernel(
    p: Pending, producer: Pending | None, out: View, inputs: tuple[View, ...], *, steps: list[Step], dtypes: list[DType]
) -> Kernel:
    """The kernel writing `p` into `out` from its emitted `steps` (the producer's when it has one)."""
    if p.dtype is _F16 and dtypes[-1] is not _F16:  # a copy into float16 storage rounds
        steps.append(Apply(Op.CAST, d.CastArg(DType.F16), (len(steps) - 1,)))
        dtypes.append(DType.F16)
    expr = Expr(tuple(steps), tuple(dtypes))
    covers = tuple(sorted({*p.covers, *(producer.covers if producer else ())}))
    if producer:
        return Kernel(producer.kind, out, inputs, producer.arg, expr, covers=covers)  # type: ignore[arg-type]
    return Kernel(_ELEMENTWISE, out, inputs, None, expr, covers=covers)


def loaded(dtype: DType) -> DType:
    """The type a kernel computes with when it loads an element of `dtype`: float16 is widened."""
    return _F32 if dtype is _F16 else dtype


def _single_producer(tree: Tree) -> Pending | None:
    assert not tree.flags & MIXED, "a tree holds at most one open producer"
    return tree.producer


def _broadcastable(tree: Tree, old: tuple[int, ...], shape: tuple[int, ...]) -> bool:
    """Loads broadcast freely; an accumulator only at its own shape; a coordinate unless its axis
    is one that broadcasting stretches (it was always 0 there)."""
    if tree.flags & ACC:
        return False
    if not tree.coords:
        return True
    lead = len(shape) - len(old)
    return all(old[axis] == shape[lead + axis] for axis in tree.coords)


def _rebuild(tree: Tree, reload: Callable[[View], View], lead: int) -> Tree:
    """`tree` with every load's view replaced by `reload(view)` and coordinates moved `lead` axes on."""
    memo: dict[Tree, Tree] = {}  # trees hash by identity

    def go(t: Tree) -> Tree:
        if t not in memo:
            if isinstance(t, PLoad):
                memo[t] = PLoad(reload(t.view))
            elif isinstance(t, PCoord):
                memo[t] = PCoord(t.axis + lead)
            elif isinstance(t, PApply):
                memo[t] = PApply(t.op, t.arg, tuple(go(s) for s in t.src), t.dtype)  # noqa: F821 - go is deleted once done
            else:
                memo[t] = t
        return memo[t]

    rebuilt = go(tree)
    del go  # go refers to itself: clearing that cell frees the memo now, not at a collection
    return rebuilt


# -- the pass -----------------------------------------------------------------------------------------


@paused
def lower(fn: Function, level: Level, features: frozenset[str] = frozenset()) -> Schedule:
    """The kernel schedule of `fn` for a determinism level on a device with `features` (WebGPU feature
    names such as shader-f16, which only fast uses; and "bindings=N" where a kernel may bind more storage
    buffers than WebGPU's default 8, which merges and series use: merge.bindings_of), see the module
    docstring."""
    low = Lowerer(fn)
    nodes = fn.nodes()
    low.position = {node: i for i, node in enumerate(nodes)}
    uses = low.uses = Counter([s for n in nodes for s in n.src])
    uses.update(node for _, node in fn.outputs)
    inputs = []
    for node in fn.inputs:
        buffer = low.new_buffer(node.dtype, node.size, input_name(node))
        low.values[node] = View.contiguous(buffer, node.shape)
        inputs.append((input_name(node), buffer))
    values, f16, an_input = low.values, DType.F16, Op.INPUT
    for node in nodes:
        if node.op is not an_input:
            value = _lower_node(low, node)
            if type(value) is Pending and (node.dtype is f16 or (uses.get(node, 0) > 1 and not _recomputable(value))):
                value = low.write(value, None)
            values[node] = value
    by_name = dict(inputs)
    outputs = _outputs(low, fn, by_name)
    if low.checked:  # every record, in one output the host reads with the step's others
        low.buffers[low.records] = Buffer(low.records, DType.U32, RECORD_WORDS * len(low.checked), INDEX_CHECKS)
        outputs = (*outputs, (INDEX_CHECKS, low.records))
    carry = tuple(
        Copy(buffer, by_name[name.split("/", 1)[1]])
        for name, buffer in outputs
        if "/" in name and name.split("/", 1)[0] in ("param", "state") and name.split("/", 1)[1] in by_name
    )
    named = {b for _, b in (*inputs, *outputs)}
    carried = {c.src: c.dst for c in carry}
    most = bindings_of(features)
    kernels = merged(low.kernels, low.buffers, named, carried, most)
    kernels = joined(with_variants(kernels, level, features), carried, most)
    return Schedule(
        fn.name, tuple(low.buffers), kernels, tuple(inputs), outputs, carry, notes(kernels, level, features)
    )


def _recomputable(value: Pending) -> bool:
    """Scalar expressions of scalars (learning rate, bias corrections) are cheaper to recompute in
    every consumer than to give a kernel and a buffer of their own."""
    tree = value.tree
    return tree is not None and value.shape == () and tree.terms <= 24 and not tree.acc and tree.scalar


def _outputs(low: Lowerer, fn: Function, inputs: dict[str, int]) -> tuple[tuple[str, int], ...]:
    """Every output in a buffer of its own (copied when it is an input or a view of another buffer)."""
    taken: set[int] = set(inputs.values())
    out = []
    for name, node in fn.outputs:
        value = low.values[node]
        if isinstance(value, Pending):
            view = low.write(value, name)
        elif (
            value.buffer in taken
            or low.buffers[value.buffer].dtype is not node.dtype  # float16 storage read as float32
            or not value.is_contiguous
            or value.offset
            or value.size != low.buffers[value.buffer].size
        ):
            view = low.write(Pending(node.shape, node.dtype, PLoad(value)), name)
        else:
            view = value
        taken.add(view.buffer)
        out.append((name, view.buffer))
    return tuple(out)


def _cover(value: Value, position: int) -> Value:
    if isinstance(value, Pending):
        value.covers.append(position)
    return value


def _lower_node(low: Lowerer, node: Node) -> Value:  # noqa: PLR0911 - one branch per op family
    pos = low.position[node]
    values = low.values
    src = [values[s] for s in node.src]
    family = FAMILY.get(node.op)  # one lookup a node, not one per family
    if family == "elementwise":
        if node.op is _CAST and node.src[0].dtype is _F16 and node.dtype is _F32 and isinstance(src[0], View):
            return src[0]  # float16 storage read as float32: its readers convert on load
        pending = _elementwise(low, node, src)
        pending.covers.append(pos)
        return pending
    if family == "const":
        assert isinstance(node.arg, d.ConstArg)
        return Pending((), node.dtype, PConst(node.arg.value, node.dtype))
    if family == "view":
        return _view(low, node, src[0])
    if family == "producer":
        return _cover(_producer(low, node, src, pos), pos)
    if family == "concat":
        return _concat(low, node, src, pos)
    if family == "slice_grad":
        return _slice_grad(low, node, src[0], pos)
    if family == "rows":
        return _rows(low, node, src, pos)
    if family == "solve":
        return _solve(low, node, src, pos)
    inputs = tuple(_contiguous(low, v) for v in src)
    if node.op in (Op.GATHER, Op.SCATTER_ADD):
        low.check_indices(node, inputs[1] if node.op is Op.GATHER else inputs[0])
    out = View.contiguous(low.new_buffer(node.dtype, node.size), node.shape)
    low.kernels.append(Kernel(DIRECT[node.op], out, inputs, node.arg, covers=(pos,)))
    return out


def _contiguous(low: Lowerer, value: Value) -> View:
    view = low.view_of(value)
    if view.is_contiguous:
        return view
    return low.write(Pending(view.shape, loaded(low.buffers[view.buffer].dtype), PLoad(view)), None)


def _uniform(value: Value) -> bool:
    """Every element has the same value (constants and broadcast scalars only): any reshape, permute,
    expand or slice of it is the same tree at another shape."""
    return isinstance(value, Pending) and value.tree is not None and value.tree.uniform


def _uniform_at(value: Pending, shape: tuple[int, ...]) -> Tree:
    """A uniform value's tree (see _uniform) at any shape: its loads read their one element there too."""
    assert value.tree is not None
    return _rebuild(value.tree, lambda v: View(v.buffer, shape, (0,) * len(shape), v.offset), 0)


def _view(low: Lowerer, node: Node, value: Value) -> Value:  # noqa: PLR0911 - one branch per view op
    arg = node.arg
    if isinstance(value, Pending) and _uniform(value):
        return Pending(node.shape, node.dtype, _uniform_at(value, node.shape), covers=value.covers)
    if node.op is Op.EXPAND:
        if isinstance(value, View):
            return views.broadcast(value, node.shape)
        if value.tree is not None and _broadcastable(value.tree, value.shape, node.shape):
            return Pending(
                node.shape, node.dtype, low.broadcast_tree(value.tree, value.shape, node.shape), covers=value.covers
            )
        return views.broadcast(low.view_of(value), node.shape)
    view = low.view_of(value)
    if node.op is Op.PERMUTE:
        assert isinstance(arg, d.PermuteArg)
        return views.permute(view, arg.perm)
    if node.op is Op.SLICE:
        assert isinstance(arg, d.SliceArg)
        return views.slice_view(view, arg.starts, arg.steps, node.shape)
    reshaped = views.reshape(view, node.shape)
    if reshaped is None:
        reshaped = views.reshape(_contiguous(low, view), node.shape)
    assert reshaped is not None
    return reshaped


def _elementwise(low: Lowerer, node: Node, src: list[Value]) -> Pending:
    if node.op is _ONE_HOT:
        assert isinstance(node.arg, d.ClassesArg)
        label: Tree
        if isinstance(src[0], Pending) and _uniform(src[0]):  # one label everywhere (a constant): no buffer
            label = _uniform_at(src[0], node.shape)
        else:
            labels = _contiguous(low, src[0])
            low.check_indices(node, labels)
            label = PLoad(views.broadcast(views.reshape(labels, (*node.shape[:-1], 1)), node.shape))  # type: ignore[arg-type]
        hit = PApply(Op.EQUAL, None, (label, PCoord(len(node.shape) - 1)), DType.BOOL)
        return Pending(node.shape, node.dtype, PApply(Op.CAST, d.CastArg(DType.F32), (hit,), DType.F32))
    if node.op is _RANDOM:
        inputs = tuple(_contiguous(low, v) for v in src)
        return Pending(node.shape, node.dtype, None, Kind.RANDOM, inputs, node.arg)
    shape, tree_of = node.shape, low.tree
    trees = [  # what low.tree gives, its two most frequent cases first
        v.tree
        if type(v) is Pending and v.tree is not None and v.shape == shape
        else PLoad(v)
        if type(v) is View and v.shape == shape and 1 not in shape
        else tree_of(v, shape)
        for v in src
    ]
    tree = PApply(node.op, node.arg, tuple(trees), node.dtype)
    if tree.flags & MIXED:  # one open producer per kernel (no source holds two): the first stays, the rest are written
        first = next(t.producer for t in trees if t.producer is not None)
        for i, t in enumerate(trees):
            if t.producer is not None and t.producer is not first:
                trees[i] = PLoad(views.broadcast(low.view_of(src[i]), shape))
        tree = PApply(node.op, node.arg, tuple(trees), node.dtype)
    producer = tree.producer
    if len(tree.buffers) + (len({v.buffer for v in producer.inputs}) if producer else 0) > MAX_INPUTS:  # bindings
        trees = [PLoad(views.broadcast(low.view_of(v), shape)) for v in src]
        tree = PApply(node.op, node.arg, tuple(trees), node.dtype)
    absorbed: list[int] = []
    for v in src:
        if type(v) is Pending and v.tree is not None:
            absorbed += v.covers
    return Pending(shape, node.dtype, tree, covers=absorbed)


def _producer(low: Lowerer, node: Node, src: list[Value], pos: int) -> Value:
    if node.op is Op.MATMUL:
        assert isinstance(node.arg, d.MatmulArg)
        a, b = (low.view_of(v) for v in src)
        if node.arg.transpose_a:
            a = views.permute(a, (*range(len(a.shape) - 2), len(a.shape) - 1, len(a.shape) - 2))
        if node.arg.transpose_b:
            b = views.permute(b, (*range(len(b.shape) - 2), len(b.shape) - 1, len(b.shape) - 2))
        batch = node.shape[:-2]
        a = views.broadcast(a, (*batch, *a.shape[-2:]))
        b = views.broadcast(b, (*batch, *b.shape[-2:]))
        return Pending(node.shape, node.dtype, None, Kind.MATMUL, (a, b), node.arg)
    if node.op is Op.CONV2D:
        inputs = tuple(_contiguous(low, v) for v in src)
        return Pending(node.shape, node.dtype, None, Kind.CONV2D, inputs, node.arg)
    assert isinstance(node.arg, d.ReduceArg)
    source = low.view_of(src[0])
    moved = views.move_axes_last(source, node.arg.axes)
    kept = tuple(dim for i, dim in enumerate(source.shape) if i not in node.arg.axes)
    pending = _reduction(low, node, moved, kept, pos)
    if not node.arg.keepdims:
        return pending
    pending.covers.append(pos)
    reshaped = views.reshape(low.write(pending, None), node.shape)
    assert reshaped is not None
    return reshaped


# A reduction of more terms than SPLIT_TERMS into fewer outputs than SPLIT_OUTPUTS (so few workgroups that
# most of a GPU idles while each walks a long row) is split in two: a partial kernel reduces chunks of the
# row into [*kept, chunks], a final one reduces those. Both orders are fixed, so every level keeps its bits.
SPLIT_TERMS = 1 << 14
SPLIT_OUTPUTS = 1024


def _chunk(count: int) -> int | None:
    """The length of the chunks a row of `count` terms is split into: the largest divisor of `count` up to
    about 4 sqrt(count) (so the partial kernel's rows are somewhat longer than the final one's), or None when
    no divisor leaves chunks of at least 256 terms and at least 4 of them."""
    for size in range(min(max(1024, 4 * math.isqrt(count)), count // 4), 255, -1):
        if count % size == 0:
            return size
    return None


def _reduction(low: Lowerer, node: Node, moved: View, kept: tuple[int, ...], pos: int) -> Pending:
    """The reduction of `moved` [*kept, *reduced] over its last axes, as a pending REDUCE kernel (see
    SPLIT_TERMS for when its partial kernels are written first). A variance is split with the parallel
    formula: var = n / (n - correction) * (mean of chunk variances + variance of chunk means), every
    variance there with correction 0 (chunks are of equal length)."""
    assert isinstance(node.arg, d.ReduceArg)
    op, correction = node.op, node.arg.correction
    count = math.prod(moved.shape[len(kept) :])
    size = _chunk(count) if count > SPLIT_TERMS and math.prod(kept) < SPLIT_OUTPUTS else None
    rows = views.reshape(moved, (*kept, count // size, size)) if size else None
    if size is None or rows is None:
        return Pending(kept, node.dtype, None, Kind.REDUCE, (moved,), Reduction(op, correction, count))

    chunks = (*kept, count // size)

    def partial(part_op: Op) -> View:
        out = View.contiguous(low.new_buffer(node.dtype, math.prod(chunks)), chunks)
        low.kernels.append(Kernel(Kind.REDUCE, out, (rows,), Reduction(part_op, 0, size), covers=(pos,)))
        return out

    if op is not Op.VAR:
        return Pending(kept, node.dtype, None, Kind.REDUCE, (partial(op),), Reduction(op, correction, count))
    means, variances = partial(Op.MEAN), partial(Op.VAR)
    spread = Pending(kept, node.dtype, None, Kind.REDUCE, (means,), Reduction(Op.VAR, 0, count), [pos])
    average = Pending(kept, node.dtype, None, Kind.REDUCE, (variances,), Reduction(Op.MEAN, 0, count))
    tree: Tree = PApply(Op.ADD, None, (PAcc(average), PLoad(low.write(spread, None))), node.dtype)
    if correction:
        tree = PApply(Op.MUL, None, (tree, PConst(count / (count - correction), node.dtype)), node.dtype)
    return Pending(kept, node.dtype, tree)


def _rows(low: Lowerer, node: Node, src: list[Value], pos: int) -> View:
    """Softmax, log-softmax, argmax, sort and sort_grad along one axis: that axis goes last for the kernel."""
    assert isinstance(node.arg, d.AxisArg)
    axis, ndim = node.arg.axis, len(node.src[0].shape)
    perm = (*(i for i in range(ndim) if i != axis), axis)
    moved = tuple(views.permute(low.view_of(value), perm) for value in src)
    kind = ROWS[node.op]
    out_shape = moved[0].shape if kind is not Kind.ARGMAX else moved[0].shape[:-1]
    out = View.contiguous(low.new_buffer(node.dtype, node.size), out_shape)
    low.kernels.append(Kernel(kind, out, moved, node.arg, covers=(pos,)))
    if kind is Kind.ARGMAX:
        return out
    inverse = tuple(perm.index(i) for i in range(ndim))
    return views.permute(out, inverse)


def _solve(low: Lowerer, node: Node, src: list[Value], pos: int) -> View:
    """SOLVE reduces the augmented matrix [a | b] in its output (see Kind.SOLVE): x is a view of its last
    columns, so the working copy is an ordinary buffer of the plan, with no limit on n or k."""
    a, b = (_contiguous(low, v) for v in src)
    *batch, n, k = node.shape
    shape = (*batch, n, n + k)
    out = View.contiguous(low.new_buffer(node.dtype, math.prod(shape)), shape)
    low.kernels.append(Kernel(Kind.SOLVE, out, (a, b), node.arg, covers=(pos,)))
    return views.slice_view(out, (0,) * (len(shape) - 1) + (n,), (1,) * len(shape), node.shape)


def _concat(low: Lowerer, node: Node, src: list[Value], pos: int) -> View:
    """Float32 values already in buffers (views, such as a roll's two slices) are concatenated by one
    kernel; otherwise each part is computed (or copied) into its place in the output by a kernel of its
    own, so a pending part fuses there."""
    assert isinstance(node.arg, d.AxisArg)
    out = View.contiguous(low.new_buffer(node.dtype, node.size), node.shape)
    parts = [v for v in src if isinstance(v, View) and low.buffers[v.buffer].dtype is DType.F32]
    if node.dtype is DType.F32 and len(parts) == len(src) and len({v.buffer for v in parts}) <= MAX_INPUTS:
        low.kernels.append(Kernel(Kind.CONCAT, out, tuple(parts), node.arg, covers=(pos,)))
        return out
    targets = views.concat_targets(out, [part.shape for part in node.src], node.arg.axis)
    for value, part, target in zip(src, node.src, targets, strict=True):
        _write_into(low, value, part, target, pos)
    return out


def _slice_grad(low: Lowerer, node: Node, value: Value, pos: int) -> View:
    assert isinstance(node.arg, d.SliceGradArg)
    out = View.contiguous(low.new_buffer(node.dtype, node.size), node.shape)
    low.kernels.append(
        Kernel(Kind.ELEMENTWISE, out, (), None, Expr((Const(0.0, node.dtype),), (node.dtype,)), covers=(pos,))
    )
    target = views.slice_view(out, node.arg.starts, node.arg.steps, node.src[0].shape)
    _write_into(low, value, node.src[0], target, pos)
    return out


def _write_into(low: Lowerer, value: Value, node: Node, target: View, pos: int) -> None:
    if isinstance(value, Pending) and value.tree is None:
        value = low.view_of(value)
    tree = PLoad(value) if isinstance(value, View) else value.tree
    assert tree is not None
    low.write(Pending(node.shape, node.dtype, tree, covers=[pos]), None, into=target)
