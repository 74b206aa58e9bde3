"""Stage: code. WGSL for NF4 weights (scellis.ops.nf4): packing, reading back, and the product that reads
the packed words directly (no unpacked copy of the weight): at debug one invocation per output, its sum in
K's order (as wasm/cpu_nf4.c sums it); at prod and fast the float32 matmul's tiles (wgsl_dense.tile64,
tile128), each weight value read back from its code and its block's scale as its tile is loaded. The
levels and midpoints are written from scellis.ops.nf4 as float32 bit patterns, and the float16 scales are
encoded and decoded on the bits, so every device packs the same words and reads the same values
(wasm/cpu_nf4.c does the same)."""

from __future__ import annotations

from scellis.codegen import wgsl_expr as w
from scellis.codegen.wgsl_dense import LARGE, TILE, tile64, tile128
from scellis.codegen.wgsl_template import fragment, template
from scellis.lower.kernels import Kernel, Kind, Schedule
from scellis.ops import defs as d
from scellis.ops import nf4

Source = tuple[str, tuple[int, int, int]]
LANES = 64  # the templates' workgroup size


def _bits(values: tuple[float, ...]) -> str:
    return f"array<u32, {len(values)}>({nf4.bit_literals(values)})"


def _helpers(arg: d.Nf4Arg | d.Nf4MatmulArg, word_at: str) -> str:
    return template("nf4").fill(
        LEVEL_BITS=_bits(nf4.LEVELS32),
        MIDPOINT_BITS=_bits(nf4.MIDPOINTS),
        WORD_AT=word_at,
        CODE_WORDS=f"{arg.rows * arg.cols // nf4.CODES_PER_WORD}u",
    )


def nf4_kernel(kernel: Kernel, schedule: Schedule, b: w.Bindings) -> Source:
    arg = kernel.arg
    assert isinstance(arg, d.Nf4Arg | d.Nf4MatmulArg)
    out = f"{kernel.out.offset}u"
    header = b.declarations(schedule)
    if kernel.kind is Kind.NF4_PACK:
        weight = kernel.inputs[0]
        pairs = (arg.rows * arg.cols // nf4.BLOCK + 1) // 2
        source = template("nf4_pack").fill(
            PAIRS=f"{pairs}u",
            BLOCKS=f"{arg.rows * arg.cols // nf4.BLOCK}u",
            CODE_WORDS=f"{arg.rows * arg.cols // nf4.CODES_PER_WORD}u",
            W_AT=b.read(weight.buffer, f"{weight.offset}u + i"),
            OUT_OFFSET=out,
        )
        helpers = _helpers(arg, "0u")  # packing reads no packed word
        return f"{header}\n\n{helpers}\n\n{source}", w.grid(-(-pairs // LANES))
    packed = kernel.inputs[-1]
    helpers = _helpers(arg, b.read(packed.buffer, f"{packed.offset}u + k"))
    if kernel.kind is Kind.NF4_UNPACK:
        count = arg.rows * arg.cols
        source = template("nf4_unpack").fill(COUNT=f"{count}u", OUT_OFFSET=out)
        return f"{header}\n\n{helpers}\n\n{source}", w.grid(-(-count // LANES))
    assert isinstance(arg, d.Nf4MatmulArg)
    x = kernel.inputs[0]
    k = x.shape[-1]
    n = arg.cols if arg.transpose else arg.rows
    count = x.size // k * n
    strides = ("1u", f"{arg.cols}u") if arg.transpose else (f"{arg.cols}u", "1u")
    if kernel.variant in ("tile64", "tile128"):
        return f"{header}\n\n{helpers}\n\n{_tiled(kernel, b, n, strides)}", _grid(kernel.variant, x.size // k, n)
    source = template("nf4_matmul").fill(
        COUNT=f"{count}u",
        N=f"{n}u",
        K=f"{k}u",
        J_STRIDE=strides[0],
        T_STRIDE=strides[1],
        X_AT=b.read(x.buffer, f"{x.offset}u + m * {k}u + t"),
        OUT_OFFSET=out,
    )
    return f"{header}\n\n{helpers}\n\n{source}", w.grid(-(-count // LANES))


def _tiled(kernel: Kernel, b: w.Bindings, n: int, strides: tuple[str, str]) -> str:
    """x [rows, k] times W^T (or W) in the float32 matmul's tiles: A is x, B[t, j] W's value at j *
    J_STRIDE + t * T_STRIDE, read back as the tile loads it; each output stored as it is summed."""
    x, arg = kernel.inputs[0], kernel.arg
    assert isinstance(arg, d.Nf4MatmulArg)
    k = x.shape[-1]
    rows = x.size // k
    j, t = strides
    values = {"A_BASE": f"{x.offset}u", "B_BASE": "0u", "M": f"{rows}u", "N": f"{n}u", "K": f"{k}u", "DECODE": ""}
    out = kernel.out.offset

    def stores(cells: list[tuple[str, str, str]]) -> list[str]:
        lines = []
        for acc, row, col in cells:
            lines += ["{", f"  let row = row0 + {row};", f"  let col = col0 + {col};"]
            lines += [f"  if (row < {rows}u && col < {n}u) {{ out[{out}u + row * {n}u + col] = {acc}; }}", "}"]
        return lines

    def weight(kk: str, col: str) -> str:
        index = f"(col0 + {col}) * {j} + (k0 + {kk}) * {t}"
        return f"sc_nf4_value({index}, sc_nf4_scale(({index}) / {nf4.BLOCK}u))"

    if kernel.variant == "tile64":
        a_at = b.read(x.buffer, f"a_base + (row0 + ra) * {k}u + k0 + kk")
        return tile64(values, a_at, weight("kb", "c"), stores)
    a_at = b.read(x.buffer, f"a_base + (row0 + ra) * {k}u + k0 + ka")
    load = None
    if arg.cols % nf4.CODES_PER_WORD == 0:  # whole words: each decoded once a slice (nf4_tile128_load)
        index = f"(col0 + cb) * {j} + (k0 + kb) * {t}"
        along_k = t == "1u"
        sizes = {"M": f"{rows}u", "N": f"{n}u", "K": f"{k}u"}
        load = fragment("nf4_tile128_load", **sizes, A_AT=a_at, WORD_INDEX=index, ALONG_K=str(along_k).lower())
    return tile128(values, (a_at, weight("kb", "cb")), stores, f16=False, load=load)


def _grid(variant: str, rows: int, n: int) -> tuple[int, int, int]:
    side = TILE if variant == "tile64" else LARGE
    return -(-n // side), -(-rows // side), 1
