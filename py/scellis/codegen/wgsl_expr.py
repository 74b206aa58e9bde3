"""WGSL text for the pieces every kernel shares: bindings, typed literals, view indexing, coordinate
decoding and fused elementwise expressions. Pure functions from the schedule to source text."""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass

from scellis.lower.kernels import Acc, Apply, Const, Coord, Expr, Kernel, Load, Schedule, View
from scellis.ops import DType, Op
from scellis.ops import defs as d

WGSL_TYPE = {DType.F32: "f32", DType.F16: "f16", DType.I32: "i32", DType.U32: "u32", DType.BOOL: "u32"}
VALUE_TYPE = {DType.F32: "f32", DType.F16: "f16", DType.I32: "i32", DType.U32: "u32", DType.BOOL: "bool"}

# Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7): WGSL has no erf.
ERF_FN = """
fn sc_erf(x: f32) -> f32 {
  let t = 1.0 / (1.0 + 0.3275911 * abs(x));
  let p = (((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t + 0.254829592;
  let y = 1.0 - p * t * exp(-x * x);
  return select(-y, y, x >= 0.0);
}
"""
# exp(x) - 1 cancels for small |x| (entirely below 2**-24). For |x| < 0.5, Taylor through x^9/9! in
# Horner form: a few ulp (the first dropped term is below 1e-9 of the result). Elsewhere exp(x) - 1
# multiplies exp's relative error by e^x / |e^x - 1|, at most 2.6.
EXPM1_FN = """
fn sc_expm1(x: f32) -> f32 {
  if (abs(x) >= 0.5) {
    return exp(x) - 1.0;
  }
  var p: f32 = 2.755731922398589e-6;
  p = p * x + 2.48015873015873e-5;
  p = p * x + 1.984126984126984e-4;
  p = p * x + 1.388888888888889e-3;
  p = p * x + 8.333333333333333e-3;
  p = p * x + 4.166666666666667e-2;
  p = p * x + 0.16666666666666666;
  p = p * x + 0.5;
  p = p * x + 1.0;
  return p * x;
}
"""
# tanh through exp overflows to NaN on some drivers for large |x|; tanh(15) is 1 in float32.
TANH_FN = """
fn sc_tanh(x: f32) -> f32 {
  return tanh(clamp(x, -15.0, 15.0));
}
"""

# WGSL's sin and cos promise only 2**-11 absolute error, and only on [-pi, pi] (SwiftShader's are that
# coarse). Ours: reduce by pi/2 in three parts (Cody-Waite; exact products for |x| below about 5e4),
# then minimax polynomials on [-pi/4, pi/4] (Cephes' sinf and cosf coefficients): a few ulp.
SIN_COS_FN = """
fn sc_quadrant(x: f32) -> vec3<f32> {
  let q = round(x * 0.63661977236758134);
  let r = ((x - q * 1.5703125) - q * 4.837512969970703125e-4) - q * 7.549789954891882e-8;
  let z = r * r;
  let s = r + r * z * (-1.6666654611e-1 + z * (8.3321608736e-3 + z * -1.9515295891e-4));
  let c = 1.0 - 0.5 * z + z * z * (4.166664568298827e-2 + z * (-1.388731625493765e-3 + z * 2.443315711809948e-5));
  return vec3<f32>(s, c, f32(i32(q) & 3));
}
fn sc_sin(x: f32) -> f32 {
  let v = sc_quadrant(x);
  let n = i32(v.z);
  let y = select(v.x, v.y, (n & 1) == 1);
  return select(y, -y, n >= 2);
}
fn sc_cos(x: f32) -> f32 {
  let v = sc_quadrant(x);
  let n = i32(v.z);
  let y = select(v.y, v.x, (n & 1) == 1);
  return select(y, -y, n == 1 || n == 2);
}
"""


@dataclass(frozen=True)
class Bindings:
    """Distinct buffers a kernel reads, in binding order; the output buffer binds last. `half`: those
    stored as float16 (array<f16>, which needs shader-f16), converted to float32 wherever read."""

    reads: tuple[int, ...]
    out: int
    half: frozenset[int] = frozenset()

    def slot(self, buffer: int) -> int:
        return self.reads.index(buffer)

    def array(self, buffer: int) -> str:
        """The WGSL array holding `buffer`: the output itself for a kernel that updates in place."""
        return "out" if buffer == self.out else f"in{self.slot(buffer)}"

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
        ty = WGSL_TYPE[schedule.buffer(self.out).dtype]
        lines.append(f"@group(0) @binding({len(self.reads)}) var<storage, read_write> out: array<{ty}>;")
        return "\n".join(lines)


def bindings_of(kernel: Kernel, schedule: Schedule) -> Bindings:
    reads: list[int] = []
    for view in kernel.inputs:
        if view.buffer not in reads and view.buffer != kernel.out.buffer:
            reads.append(view.buffer)
    half = frozenset(b for b in (*reads, kernel.out.buffer) if schedule.buffer(b).dtype is DType.F16)
    return Bindings(tuple(reads), kernel.out.buffer, half)


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
    """Helper functions the expression needs."""
    used = {s.op for s in expr.steps if isinstance(s, Apply)}
    gelu_erf = any(
        isinstance(s, Apply) and s.op is Op.GELU and getattr(s.arg, "approximate", "") == "none" for s in expr.steps
    )
    parts = []
    if Op.ERF in used or gelu_erf:
        parts.append(ERF_FN)
    if Op.EXPM1 in used:
        parts.append(EXPM1_FN)
    if Op.TANH in used or Op.GELU in used:
        parts.append(TANH_FN)
    if Op.SIN in used or Op.COS in used:
        parts.append(SIN_COS_FN)
    return "".join(parts)
