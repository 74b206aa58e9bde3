"""WGSL text for the pieces every kernel shares: bindings, typed literals, view indexing, coordinate
decoding, fused elementwise expressions and the helper functions they call (wgsl/erf.wgsl, ...). Pure
functions from the schedule to source text."""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass

from scellis.codegen.wgsl_template import Value, fragment, text
from scellis.lower.kernels import Acc, Apply, Const, Coord, Expr, Kernel, Load, Schedule, View
from scellis.ops import DType, Op
from scellis.ops import defs as d

WGSL_TYPE = {DType.F32: "f32", DType.F16: "f16", DType.I32: "i32", DType.U32: "u32", DType.BOOL: "u32"}
VALUE_TYPE = {DType.F32: "f32", DType.F16: "f16", DType.I32: "i32", DType.U32: "u32", DType.BOOL: "bool"}

MAX_GROUPS = 65535  # workgroups a dimension of a dispatch holds (WebGPU's default limit)
LANES = 64  # the lanes of a workgroup that combines its values by a tree (reductions, rows, solve)


def grid(groups: int) -> tuple[int, int, int]:
    """A 1-D count of workgroups laid out within the per-dimension limit (the kernels read their flat
    index from x and y)."""
    return (min(groups, MAX_GROUPS), -(-groups // MAX_GROUPS), 1)


def lane_tree(name: str, **values: Value) -> list[str]:
    """A fixed pairwise tree over the LANES lanes: the fragment `name` (one step, wgsl/lane_tree.wgsl,
    ...) once for each STRIDE, from LANES / 2 down to 1."""
    strides = [LANES >> shift for shift in range(1, LANES.bit_length())]
    return [line for stride in strides for line in fragment(name, STRIDE=f"{stride}u", **values)]


def or_blank(lines: list[str]) -> list[str]:
    """`lines`, or one empty line where there are none (where such a kernel's text has always had one)."""
    return lines or [""]


@dataclass(frozen=True)
class Bindings:
    """Distinct buffers a kernel reads, in binding order; then the output buffer, then the buffers of its
    stores (`more`, bound as out1, out2, ...; Kernel.stores). `half`: those stored as float16 (array<f16>,
    which needs shader-f16), converted to float32 wherever read."""

    reads: tuple[int, ...]
    out: int
    half: frozenset[int] = frozenset()
    more: tuple[int, ...] = ()

    def slot(self, buffer: int) -> int:
        return self.reads.index(buffer)

    def array(self, buffer: int) -> str:
        """The WGSL array holding `buffer`: an output itself for a kernel that updates in place."""
        if buffer == self.out:
            return "out"
        if buffer in self.more:
            return f"out{self.more.index(buffer) + 1}"
        return f"in{self.slot(buffer)}"

    def read(self, buffer: int, index: str, vec4: bool = False) -> str:
        """WGSL reading element `index` of `buffer` as float32 (or the vec4 at `index`, for a buffer
        declared vec4)."""
        raw = f"{self.array(buffer)}[{index}]"
        if buffer not in self.half:
            return raw
        return f"vec4<f32>({raw})" if vec4 else f"f32({raw})"

    def declarations(self, schedule: Schedule, vec4: frozenset[int] = frozenset(), f16: bool = False) -> str:
        """`vec4` lists buffers read four elements at a time (bound as array<vec4<f32>>, or vec4<f16>
        for float16 storage); `f16`: the kernel computes in float16 itself."""
        lines = ["enable f16;"] if f16 or self.half else []
        for i, buffer in enumerate(self.reads):
            ty = WGSL_TYPE[schedule.buffer(buffer).dtype]
            ty = f"vec4<{ty}>" if buffer in vec4 else ty
            lines.append(f"@group(0) @binding({i}) var<storage, read> in{i}: array<{ty}>;")
        for i, buffer in enumerate((self.out, *self.more)):
            ty = WGSL_TYPE[schedule.buffer(buffer).dtype]
            name = f"out{i}" if i else "out"
            lines.append(f"@group(0) @binding({len(self.reads) + i}) var<storage, read_write> {name}: array<{ty}>;")
        return "\n".join(lines)

    @property
    def order(self) -> tuple[int, ...]:
        """The buffers in binding order."""
        return (*self.reads, self.out, *self.more)


def bindings_of(kernel: Kernel, schedule: Schedule) -> Bindings:
    """A buffer the kernel writes binds once, writable, even where it reads it too (WebGPU refuses a buffer
    bound both read-only and writable in one dispatch)."""
    written = [view.buffer for view in kernel.writes]
    reads: list[int] = []
    for view in kernel.inputs:
        if view.buffer not in reads and view.buffer not in written:
            reads.append(view.buffer)
    half = frozenset(b for b in (*reads, *written) if schedule.buffer(b).dtype is DType.F16)
    return Bindings(tuple(reads), kernel.out.buffer, half, tuple(dict.fromkeys(written[1:])))


def literal(value: float, dtype: DType) -> str:
    if dtype is DType.BOOL:
        return "true" if value else "false"
    if dtype is DType.I32:
        return f"i32({int(value)})"
    if dtype is DType.U32:
        return f"{int(value)}u"
    f32 = struct.unpack("<f", struct.pack("<f", value))[0] if math.isfinite(value) and abs(value) < 3.4e38 else value
    if not math.isfinite(f32):
        bits = struct.unpack("<I", struct.pack("<f", f32))[0]
        return f"bitcast<f32>({bits}u)"
    text = f"{f32:.9g}"
    return f"f32({text if any(c in text for c in '.e') else text + '.0'})"


def index_expr(view: View, coords: list[str]) -> str:
    """Element index of `view` at the coordinates (one expression per axis of the view)."""
    terms = [f"{view.offset}u"] if view.offset else []
    for c, stride in zip(coords, view.strides, strict=True):
        if stride:
            factor = c if c.isidentifier() else f"({c})"  # a compound coordinate binds as a whole
            terms.append(c if stride == 1 else f"{factor} * {stride}u")
    return " + ".join(terms) or "0u"


def decode(flat: str, shape: tuple[int, ...], prefix: str = "c") -> tuple[list[str], list[str]]:
    """Statements splitting a row-major flat index into per-axis coordinates, and their names."""
    lines, names, rest = [], [], flat
    for axis in range(len(shape) - 1, -1, -1):
        name = f"{prefix}{axis}"
        names.append(name)
        dim = shape[axis]
        if axis == 0:
            lines.append(f"let {name} = {rest};")
        else:
            lines.append(f"let {name} = {rest} % {dim}u;")
            lines.append(f"let {prefix}r{axis} = {rest} / {dim}u;")
            rest = f"{prefix}r{axis}"
    return lines, list(reversed(names))


def load_expr(view: View, array: str, dtype: DType, coords: list[str]) -> str:
    """An element of `view` (stored as `dtype`) as the value a kernel computes with."""
    raw = f"{array}[{index_expr(view, coords)}]"
    return {DType.BOOL: f"({raw} != 0u)", DType.F16: f"f32({raw})"}.get(dtype, raw)


UNARY = {
    Op.NEG: "-({0})",
    Op.EXP: "exp({0})",
    Op.EXPM1: "sc_expm1({0})",
    Op.LOG: "log({0})",
    Op.SQRT: "sqrt({0})",
    Op.RSQRT: "inverseSqrt({0})",
    Op.ABS: "abs({0})",
    Op.SIGN: "sign({0})",
    Op.RELU: "max({0}, 0.0)",
    Op.TANH: "sc_tanh({0})",
    Op.SIGMOID: "(1.0 / (1.0 + exp(-({0}))))",
    Op.ERF: "sc_erf({0})",
    Op.COS: "sc_cos({0})",
    Op.SIN: "sc_sin({0})",
    Op.FLOOR: "floor({0})",
    # by the bits: WGSL lets implementations assume floats are never inf or NaN, so comparisons cannot tell
    Op.IS_FINITE: "((bitcast<u32>({0}) & 0x7f800000u) != 0x7f800000u)",
}
BINARY = {
    Op.ADD: "({0} + {1})",
    Op.SUB: "({0} - {1})",
    Op.MUL: "({0} * {1})",
    Op.DIV: "({0} / {1})",
    Op.POW: "pow({0}, {1})",
    Op.MAXIMUM: "max({0}, {1})",
    Op.MINIMUM: "min({0}, {1})",
    Op.LESS: "({0} < {1})",
    Op.EQUAL: "({0} == {1})",
}


def _apply(step: Apply, args: list[str], src_types: list[DType], out: DType) -> str:  # noqa: PLR0911 - by op
    op = step.op
    if op in UNARY:
        return UNARY[op].format(*args)
    if op in BINARY:
        return BINARY[op].format(*args)
    if op is Op.WHERE:
        return f"select({args[2]}, {args[1]}, {args[0]})"
    if op is Op.LEAKY_RELU:
        assert isinstance(step.arg, d.LeakyReluArg)
        return f"select({literal(step.arg.alpha, DType.F32)} * {args[0]}, {args[0]}, {args[0]} >= 0.0)"
    if op is Op.GELU:
        assert isinstance(step.arg, d.GeluArg)
        x = args[0]
        if step.arg.approximate == "tanh":
            return f"(0.5 * {x} * (1.0 + sc_tanh(0.7978845608 * ({x} + 0.044715 * {x} * {x} * {x}))))"
        return f"(0.5 * {x} * (1.0 + sc_erf({x} * 0.70710678118)))"
    if op is Op.CAST:
        if src_types[0] is DType.BOOL:
            one, zero = literal(1, out), literal(0, out)
            return f"select({zero}, {one}, {args[0]})"
        return (
            f"{VALUE_TYPE[out]}({args[0]})" if out is not DType.BOOL else f"({args[0]} != {literal(0, src_types[0])})"
        )
    raise ValueError(f"no WGSL for elementwise op {op.value}")


def expression(expr: Expr, loads: list[str], acc: str | None, coords: list[str]) -> tuple[list[str], str]:
    """Statements computing `expr` and the name of its value. `loads[i]` is the WGSL of Load(i)."""
    lines: list[str] = []
    names: list[str] = []
    for i, (step, dtype) in enumerate(zip(expr.steps, expr.dtypes, strict=True)):
        if isinstance(step, Load):
            value = loads[step.input]
        elif isinstance(step, Const):
            value = literal(step.value, step.dtype)
        elif isinstance(step, Acc):
            assert acc is not None, "this kernel has no accumulator"
            value = acc
        elif isinstance(step, Coord):
            value = f"i32({coords[step.axis]})"
        else:
            src_types = [expr.dtypes[s] for s in step.src]
            value = _apply(step, [names[s] for s in step.src], src_types, dtype)
        name = f"v{i}"
        lines.append(f"let {name}: {VALUE_TYPE[dtype]} = {value};")
        names.append(name)
    return lines, names[-1]


def store(value: str, dtype: DType) -> str:
    return f"select(0u, 1u, {value})" if dtype is DType.BOOL else value


def helpers(expr: Expr) -> str:
    """Helper functions the expression needs (wgsl/erf.wgsl, ...), each after an empty line."""
    used = {s.op for s in expr.steps if isinstance(s, Apply)}
    gelu_erf = any(
        isinstance(s, Apply) and s.op is Op.GELU and getattr(s.arg, "approximate", "") == "none" for s in expr.steps
    )
    needed = {
        "erf": Op.ERF in used or gelu_erf,
        "expm1": Op.EXPM1 in used,
        "tanh": Op.TANH in used or Op.GELU in used,
        "sin_cos": Op.SIN in used or Op.COS in used,
    }
    return "".join(f"\n{text(name)}\n" for name, need in needed.items() if need)
