"""NF4, QLoRA's 4-bit NormalFloat: the format every device packs and reads, defined once.

A weight W [rows, cols] (cols a multiple of BLOCK) is cut, row by row, into blocks of BLOCK consecutive
values. Each block keeps its absmax (the largest |w|) as a float16 scale, and each value the 4-bit code of
the nearest of the 16 LEVELS (quantiles of N(0, 1) scaled to [-1, 1], as the QLoRA paper builds them) to
w / absmax. Packed, as u32 words (`words(rows, cols)` of them): the codes first, 8 a word, value i (flat,
row-major) in bits 4 * (i % 8) of word i // 8; then the scales, 2 a word, block b in the low half of word
b // 2 when b is even, else the high half (a last unpaired half is 0).

Exact everywhere, so a quantised model is the same bits on every device: absmax is exact; the code of w
is the number of MIDPOINTS m with w > m * absmax (the float32 product, correctly rounded on every device;
no division); the scale is absmax rounded to float16 to nearest even, saturating at 65504 (integer
arithmetic on the bits). A value reads back as LEVELS[code] * float32(scale), one correctly rounded
float32 product. `quantize` and `dequantize` here are the reference (pure Python).
"""

from __future__ import annotations

import itertools
import math
import struct

BLOCK = 64
CODES_PER_WORD = 8
LEVELS = (
    -1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453, -0.28444138169288635,
    -0.18477343022823334, -0.09105003625154495, 0.0, 0.07958029955625534, 0.16093020141124725,
    0.24611230194568634, 0.33791524171829224, 0.44070982933044434, 0.5626170039176941, 0.7229568362236023, 1.0,
)  # fmt: skip


def f32(x: float) -> float:
    """`x` rounded to float32."""
    return struct.unpack("<f", struct.pack("<f", x))[0]


LEVELS32 = tuple(f32(v) for v in LEVELS)
MIDPOINTS = tuple(f32((a + b) / 2) for a, b in itertools.pairwise(LEVELS32))  # 15, ascending
F16_MAX_BITS = 0x7BFF  # 65504


def bit_literals(values: tuple[float, ...]) -> str:
    """float32 values as the u32 literals of their bits, `0x3f800000u, ...` (WGSL and C read them alike)."""
    return ", ".join(f"0x{struct.unpack('<I', struct.pack('<f', v))[0]:08x}u" for v in values)


def words(rows: int, cols: int) -> int:
    """u32 words of a packed [rows, cols] weight: codes, then scales."""
    n = rows * cols
    return n // CODES_PER_WORD + scale_words(rows, cols)


def scale_words(rows: int, cols: int) -> int:
    return (rows * cols // BLOCK + 1) // 2


def check_shape(rows: int, cols: int) -> str | None:
    """Why a [rows, cols] weight cannot be packed, or None."""
    if rows < 1 or cols < 1:
        return f"a packed weight needs rows and columns, got [{rows}, {cols}]"
    if cols % BLOCK:
        return f"NF4 packs rows in blocks of {BLOCK} values: {cols} columns is no whole number of blocks"
    return None


def f16_bits(x: float) -> int:
    """Non-negative float32 `x` as float16 bits: nearest, ties to even; above 65504, 65504."""
    bits = struct.unpack("<I", struct.pack("<f", x))[0] & 0x7FFFFFFF
    exponent = (bits >> 23) - 127 + 15
    mantissa = bits & 0x7FFFFF
    if exponent >= 31:  # beyond float16 (inf and NaN too: absmax of finite weights is finite)
        return F16_MAX_BITS
    if exponent <= 0:  # a float16 subnormal (or 0): mantissa with the hidden bit, shifted 14 - exponent
        if exponent < -10:
            return 0
        full = mantissa | 0x800000
        shift = 14 - exponent
        half, rest = full >> shift, full & ((1 << shift) - 1)
        middle = 1 << (shift - 1)
        return half + (rest > middle or (rest == middle and half & 1))
    half, rest = (exponent << 10) | (mantissa >> 13), mantissa & 0x1FFF
    rounded = half + (rest > 0x1000 or (rest == 0x1000 and half & 1))
    return min(rounded, F16_MAX_BITS)


def f16_value(bits: int) -> float:
    exponent, mantissa = (bits >> 10) & 0x1F, bits & 0x3FF
    if exponent == 0:
        return math.ldexp(mantissa, -24)
    return math.ldexp(mantissa | 0x400, exponent - 25)


def code(w: float, absmax: float) -> int:
    return sum(1 for m in MIDPOINTS if w > f32(m * absmax))


def quantize(values: list[float], rows: int, cols: int) -> list[int]:
    """The packed words of float32 `values` (row-major [rows, cols]): see the module's contract."""
    problem = check_shape(rows, cols)
    if problem:
        raise ValueError(problem)
    n = rows * cols
    codes = [0] * (n // CODES_PER_WORD)
    scales = [0] * scale_words(rows, cols)
    for b in range(n // BLOCK):
        block = values[b * BLOCK : (b + 1) * BLOCK]
        absmax = max(abs(v) for v in block)
        for j, w in enumerate(block):
            i = b * BLOCK + j
            codes[i // CODES_PER_WORD] |= code(w, absmax) << (4 * (i % CODES_PER_WORD))
        scales[b // 2] |= f16_bits(absmax) << (16 * (b % 2))
    return codes + scales


def dequantize(packed: list[int], rows: int, cols: int) -> list[float]:
    """The float32 values the packed words stand for."""
    n = rows * cols
    out = []
    for i in range(n):
        c = (packed[i // CODES_PER_WORD] >> (4 * (i % CODES_PER_WORD))) & 0xF
        b = i // BLOCK
        scale = f16_value((packed[n // CODES_PER_WORD + b // 2] >> (16 * (b % 2))) & 0xFFFF)
        out.append(f32(LEVELS32[c] * scale))
    return out
