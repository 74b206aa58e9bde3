"""Stage: execution (CPU path). A kernel's fused expression as a tape for `sc_cpu_tape` (wasm/cpu_tape.c).

The module cannot compile code at run time, so each expression becomes words the C interpreter reads:
a header (the iteration shape, after merging axes every view walks alike), the views it loads and
stores, and instructions over registers of SC_BLOCK elements. Steps that do not depend on the element
(constants, scalars read from memory, and expressions of them) go to a prologue the interpreter runs
once per call; the body runs once per block. Registers are reused once their value is dead.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from scellis.lower.kernels import Acc, Apply, Const, Coord, Expr, Load, Shape, Step, View
from scellis.ops import DType, Op
from scellis.ops import defs as d

MAXD = 8  # SC_MAXD in wasm/cpu_kernels.h
MASK = 0xFFFFFFFF

# wasm/cpu_kernels.h's enum sc_op, in order from 1 (tests/devices/test_cpu_kernels.py checks they agree).
OPCODE_ORDER = (
    "LOAD", "SPLAT", "CONST", "COORD", "STORE", "UNIFORM", "NORMAL", "BERNOULLI", "MOV", "NEG", "EXP", "LOG", "SQRT",
    "RSQRT", "ABS", "SIGN", "RELU", "LEAKY_RELU", "GELU_TANH", "GELU_ERF", "TANH", "SIGMOID", "ERF", "COS", "SIN",
    "FLOOR", "ADD_F", "SUB_F", "MUL_F", "DIV_F", "POW_F", "MAX_F", "MIN_F", "LT_F", "EQ_F", "ADD_I", "SUB_I", "MUL_I",
    "MAX_I", "MIN_I", "LT_I", "EQ_I", "MAX_U", "MIN_U", "LT_U", "WHERE", "F2I", "F2U", "I2F", "U2F", "F2B", "I2B",
    "INTEGER", "IS_FINITE", "EXPM1",
)  # fmt: skip
OPCODES = {name: i + 1 for i, name in enumerate(OPCODE_ORDER)}

UNARY = {
    Op.WHERE: "WHERE", Op.NEG: "NEG", Op.EXP: "EXP", Op.EXPM1: "EXPM1", Op.LOG: "LOG", Op.SQRT: "SQRT",
    Op.RSQRT: "RSQRT", Op.ABS: "ABS", Op.SIGN: "SIGN", Op.RELU: "RELU", Op.LEAKY_RELU: "LEAKY_RELU",
    Op.TANH: "TANH", Op.SIGMOID: "SIGMOID", Op.ERF: "ERF", Op.COS: "COS", Op.SIN: "SIN", Op.FLOOR: "FLOOR",
    Op.IS_FINITE: "IS_FINITE",
}  # fmt: skip
BINARY_FLOAT = {
    Op.ADD: "ADD_F", Op.SUB: "SUB_F", Op.MUL: "MUL_F", Op.DIV: "DIV_F", Op.POW: "POW_F",
    Op.MAXIMUM: "MAX_F", Op.MINIMUM: "MIN_F", Op.LESS: "LT_F", Op.EQUAL: "EQ_F",
}  # fmt: skip
BINARY_INT = {Op.ADD: "ADD_I", Op.SUB: "SUB_I", Op.MUL: "MUL_I", Op.EQUAL: "EQ_I"}
SIGNED = {Op.MAXIMUM: "MAX_I", Op.MINIMUM: "MIN_I", Op.LESS: "LT_I"}
UNSIGNED = {Op.MAXIMUM: "MAX_U", Op.MINIMUM: "MIN_U", Op.LESS: "LT_U"}
CASTS = {
    (DType.F32, DType.I32): "F2I", (DType.F32, DType.U32): "F2U", (DType.F32, DType.BOOL): "F2B",
    (DType.I32, DType.F32): "I2F", (DType.U32, DType.F32): "U2F", (DType.BOOL, DType.F32): "U2F",
    (DType.I32, DType.BOOL): "I2B", (DType.U32, DType.BOOL): "I2B",
}  # fmt: skip
DRAWS = {
    d.Distribution.UNIFORM: "UNIFORM", d.Distribution.NORMAL: "NORMAL", d.Distribution.BERNOULLI: "BERNOULLI",
    d.Distribution.INTEGER: "INTEGER",
}  # fmt: skip


class TapeError(ValueError):
    """An expression or view the CPU path's tape cannot run (e.g. more than MAXD axes after merging)."""


def f32_bits(value: float) -> int:
    return int(struct.unpack("<I", struct.pack("<f", value))[0])


def const_bits(value: float, dtype: DType) -> int:
    """A constant's 32-bit word as the device stores it (float32, int32, uint32, bool as 0/1)."""
    if dtype is DType.F32:
        return f32_bits(value)
    if dtype is DType.BOOL:
        return int(bool(value))
    return int(value) & MASK


def merge_axes(shape: Shape, strides: Sequence[Shape]) -> tuple[Shape, list[Shape]]:
    """Drop size-1 axes and merge neighbours that every view steps through alike (row-major order is
    kept, so flat element indices do not change). A scalar becomes one axis of size 1."""
    keep = [i for i, dim in enumerate(shape) if dim != 1]
    dims = [shape[i] for i in keep]
    views = [[s[i] for i in keep] for s in strides]
    d_ = len(dims) - 1
    while d_ > 0:
        if all(v[d_ - 1] == v[d_] * dims[d_] for v in views):
            dims[d_ - 1] *= dims[d_]
            del dims[d_]
            for v in views:
                v[d_ - 1] = v[d_]
                del v[d_]
        d_ -= 1
    if not dims:
        return (1,), [(0,) for _ in strides]
    if len(dims) > MAXD:
        raise TapeError(f"a view of shape {shape} keeps {len(dims)} axes after merging; the CPU path takes {MAXD}")
    return tuple(dims), [tuple(v) for v in views]


def padded(values: Sequence[int]) -> list[int]:
    return [*values, *([0] * (MAXD - len(values)))]


@dataclass
class Tape:
    """A tape under construction: views (address, strides in the iteration shape) and instructions."""

    views: list[tuple[int, Shape]] = field(default_factory=list)
    prologue: list[list[int]] = field(default_factory=list)
    body: list[list[int]] = field(default_factory=list)
    registers: int = 0

    def words(self, merged_shape: Shape, merged_strides: list[Shape]) -> list[int]:
        counts = [len(self.views), len(self.prologue), len(self.body), self.registers]
        head = [len(merged_shape), *padded(merged_shape), *counts]
        views = [w for (address, _), s in zip(self.views, merged_strides, strict=True) for w in (address, *padded(s))]
        return head + views + [w for ins in (*self.prologue, *self.body) for w in ins]


Address = Callable[[View], int]


@dataclass(frozen=True)
class Source:
    """Where a kernel's Acc comes from: a view the producer wrote, or a RANDOM draw."""

    view: View | None = None
    draw: d.RandomArg | None = None
    key: int = 0  # byte addresses of the key and position (draws only)
    position: int = 0


def encode(
    expr: Expr, inputs: Sequence[View], acc: Source, out: View, address: Address, *, stores: Stores = ()
) -> list[int]:
    """The tape words of `expr` over out.shape, storing its value into `out` and each (view, step) of
    `stores` into its view (Kernel.stores), after the block's every load."""
    return _Encoder(expr, inputs, acc, out, address, stores).run()


Stores = Sequence[tuple[View, int]]


class _Encoder:
    def __init__(  # noqa: PLR0917 - encode's arguments
        self, expr: Expr, inputs: Sequence[View], acc: Source, out: View, address: Address, stores: Stores = ()
    ) -> None:
        self.expr, self.inputs, self.acc, self.out, self.address = expr, inputs, acc, out, address
        self.stores = stores
        self.tape = Tape()
        self.view_index: dict[tuple[int, Shape], int] = {}
        self.invariant: list[bool] = []
        for step in expr.steps:
            self.invariant.append(self._invariant(step))

    def run(self) -> list[int]:
        end = len(self.expr.steps)
        stored = [end - 1, *(step for _, step in self.stores)]
        live = _live(self.expr, stored)
        last_use = {
            src: i
            for i, step in enumerate(self.expr.steps)
            if i in live and isinstance(step, Apply)
            for src in step.src
        }
        last_use.update(dict.fromkeys(stored, end))  # the stored values, live to the stores at the end
        reg: dict[int, int] = {}
        free: list[int] = []
        for i, step in enumerate(self.expr.steps):
            if i not in live:
                continue
            dead = [reg[s] for s in _sources(step) if last_use[s] == i and not self.invariant[s]]
            free.extend(dict.fromkeys(dead))  # a source read twice by this step frees its register once
            reg[i] = free.pop() if free and not self.invariant[i] else self._new_register()
            target = self.tape.prologue if self.invariant[i] else self.tape.body
            target.append(self._instruction(step, reg[i], [reg[s] for s in _sources(step)], self.expr.dtypes, i))
        for view, at in self.stores:
            self.tape.body.append(self._ins("STORE", 0, self._view(view), reg[at]))
        self.tape.body.append(self._ins("STORE", 0, self._view(self.out), reg[end - 1]))
        shape, strides = merge_axes(self.out.shape, [s for _, s in self.tape.views])
        return self.tape.words(shape, strides)

    def _new_register(self) -> int:
        self.tape.registers += 1
        return self.tape.registers - 1

    def _invariant(self, step: Step) -> bool:
        """Whether the step's value is the same for every element (so the prologue computes it)."""
        if isinstance(step, Const):
            return True
        if isinstance(step, Load):
            return not any(self.inputs[step.input].strides)
        if isinstance(step, Acc):
            return self.acc.view is not None and not any(self.acc.view.strides)
        if isinstance(step, Coord):
            return self.out.shape[step.axis] == 1
        return all(self.invariant[s] for s in step.src)

    def _view(self, view: View) -> int:
        return self._strided(self.address(view), view.strides)

    def _strided(self, address: int, strides: Shape) -> int:
        key = (address, strides)
        if key not in self.view_index:
            self.view_index[key] = len(self.tape.views)
            self.tape.views.append(key)
        return self.view_index[key]

    @staticmethod
    def _ins(name: str, dst: int, *operands: int) -> list[int]:
        """One instruction: opcode, destination register, up to four operands (zeros past the last)."""
        return [OPCODES[name], dst, *operands, *([0] * (4 - len(operands)))]

    def _load(self, view: View, dst: int) -> list[int]:
        if not any(view.strides):
            return self._ins("SPLAT", dst, self.address(view))
        return self._ins("LOAD", dst, self._view(view))

    def _instruction(self, step: Step, dst: int, src: list[int], dtypes: tuple[DType, ...], i: int) -> list[int]:
        if isinstance(step, Const):
            return self._ins("CONST", dst, const_bits(step.value, step.dtype))
        if isinstance(step, Load):
            return self._load(self.inputs[step.input], dst)
        if isinstance(step, Acc):
            return self._acc(dst)
        if isinstance(step, Coord):
            if self.out.shape[step.axis] == 1:
                return self._ins("CONST", dst, 0)
            unit = tuple(int(a == step.axis) for a in range(len(self.out.shape)))
            return self._ins("COORD", dst, self._strided(0, unit))
        return self._apply(step, dst, src, [dtypes[s] for s in step.src], dtypes[i])

    def _acc(self, dst: int) -> list[int]:
        if self.acc.view is not None:
            return self._load(self.acc.view, dst)
        draw = self.acc.draw
        assert draw is not None
        threshold = max(0, min(math.ceil(draw.p * 2**24), 2**24 + 1))  # u >= p as integers: exact
        bound = draw.n if draw.distribution is d.Distribution.INTEGER else threshold
        return self._ins(DRAWS[draw.distribution], dst, self.acc.key, self.acc.position, draw.site & MASK, bound)

    def _apply(self, step: Apply, dst: int, src: list[int], types: list[DType], out: DType) -> list[int]:
        if step.op is Op.LEAKY_RELU:
            assert isinstance(step.arg, d.LeakyReluArg)
            return self._ins("LEAKY_RELU", dst, src[0], 0, f32_bits(step.arg.alpha))
        return self._ins(_opcode(step, types[0], out), dst, *src)


def _opcode(step: Apply, first: DType, out: DType) -> str:
    """The instruction of an elementwise op, chosen by the dtype of its first operand (and result)."""
    op = step.op
    if op is Op.CAST:
        return CASTS.get((first, out), "MOV")  # the rest (same dtype, int32 <-> uint32, bool -> int) keep bits
    if op is Op.GELU:
        assert isinstance(step.arg, d.GeluArg)
        return "GELU_TANH" if step.arg.approximate == "tanh" else "GELU_ERF"
    if op in UNARY:
        return UNARY[op]
    table = BINARY_FLOAT if first is DType.F32 else {**BINARY_INT, **(UNSIGNED if first is DType.U32 else SIGNED)}
    if op not in table:
        raise TapeError(f"the CPU path's tape has no {op.value} for {first.value}")
    return table[op]


def _sources(step: Step) -> tuple[int, ...]:
    return step.src if isinstance(step, Apply) else ()


def _live(expr: Expr, roots: list[int]) -> set[int]:
    """Steps the stored values depend on (the roots and their sources, transitively)."""
    live, stack = set(), list(roots)
    while stack:
        i = stack.pop()
        if i not in live:
            live.add(i)
            stack.extend(_sources(expr.steps[i]))
    return live
