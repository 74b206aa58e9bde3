"""The kernel variant choice point: the one place where how a kernel is implemented is decided, and
recorded on the kernel so the Guide and the code generators agree: by the run's determinism level and
by shape."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from scellis.levels import Level
from scellis.lower.kernels import Kernel, Kind, Schedule, View
from scellis.ops import DType

LARGE_MATMUL = 128  # both output sides at least this
SMALL_MATMUL = 256  # at most this many outputs a matrix: one invocation each (a 64 x 64 tile would idle)
THIN_MATMUL = 16  # or at most this many rows, columns or terms (a classifier's logits, a matrix-vector
# product, a gradient through the logits): one invocation each too (on lavapipe a 256 x 512 by 512 x 10
# product takes 2.8 ms so, 6.2 ms in 64 x 64 tiles; a 256 x 10 by 10 x 512 one 1.6 ms in them, mostly padding)
LARGE_TILES = 32  # and at least this many 128 x 128 output tiles
NF4_LARGE_TILES = 128  # for a product with NF4 weights, whose tile load decodes: at least this many
SMALL_WORK = 1 << 20  # or at most this many multiply-adds a matrix: one invocation each too
SMALL_SOLVE = 8  # a solve of at most this many unknowns runs one invocation per matrix, larger ones a workgroup
SERIAL = 64  # a reduction (or a softmax, log-softmax, argmax row) of at most this many elements: one invocation
SERIAL_OUTPUTS = 64  # on a software adapter, one of at least this many outputs too, at any length (_serial)
ROWS = (Kind.SOFTMAX, Kind.LOG_SOFTMAX, Kind.ARGMAX)
SERIAL_CHECK = 4096  # indices one invocation checks (a batch's labels); more take a workgroup


def quads_along_k(deep: int, across: int, k: int) -> bool:
    """Whether a matmul operand is read as vec4 along K (its K stride `deep` is 1, and K and its other
    stride `across` are multiples of 4); else, for the pipelined tiles, along its own side."""
    return deep == 1 and k % 4 == 0 and across % 4 == 0


def _quads(view: View, k_axis: int) -> bool:
    """The operand `view` ([..., M, K] for A: k_axis -1; [..., K, N] for B: -2) can be read as vec4 along
    K or along its side: contiguous there, that extent, its other stride, its offset and its batch
    strides multiples of 4."""
    side = -3 - k_axis  # -2 for A, -1 for B
    k, deep, across = view.shape[k_axis], view.strides[k_axis], view.strides[side]
    along_side = across == 1 and view.shape[side] % 4 == 0 and deep % 4 == 0
    batch = [view.offset, *view.strides[:-2]]
    return (quads_along_k(deep, across, k) or along_side) and all(q % 4 == 0 for q in batch)


def _quad_operands(kernel: Kernel) -> bool:
    """A and B can each be read as vec4 (_quads), and nothing else the kernel reads or writes lies in
    their buffers (bound as arrays of vec4)."""
    a, b = kernel.inputs[:2]
    others = {v.buffer for v in (*kernel.inputs[2:], *kernel.writes)}
    return _quads(a, -1) and _quads(b, -2) and not others & {a.buffer, b.buffer}


# The pipelined float32 tiles (codegen/wgsl_matmul.py's BLOCKINGS) by their output tile, largest first.
PIPELINED = (
    ("tile128-pipe", (128, 128)),
    ("tile64x128-pipe", (64, 128)),
    ("tile64-pipe", (64, 64)),
)
FILL = 128  # output tiles that keep a large GPU busy (the H200 has 132 SMs)


def _pipelined(kernel: Kernel) -> str:
    """The largest pipelined tile of which the product has FILL: on the H200 (bench/matmul.py) 128 x 128
    tiles ran 4096^3 at 40.5 TFLOP/s and 2048^3 at 38.2, 64 x 128 ones 32 and 30; but 1024^3 has only 64
    of them, and 64 x 128 tiles ran it at 24.9 TFLOP/s, 128 x 128 ones at 17.2."""
    *batch, m, n = kernel.out.shape
    for variant, (rows, cols) in PIPELINED:
        if math.prod(batch) * -(-m // rows) * -(-n // cols) >= FILL:
            return variant
    return PIPELINED[-1][0]


F16 = "shader-f16"
# A device's features name SOFTWARE where the adapter emulates a GPU on the CPU (SwiftShader, lavapipe):
# its matmuls then take BLOCKS, one invocation per block of outputs with no workgroup memory (below).
SOFTWARE = "software"
# The blocks by variant: (rows, columns) of outputs an invocation computes (columns a multiple of 4). On
# SwiftShader every load from a buffer is a gather, one per component and lane, so a block's multiply-adds
# per load decide its speed. In Chromium 156 (2 cores) a 256 x 784 by 784 x 512 product took 34-38 ms in
# 8 x 8 blocks, 47-53 in 4 x 8, 40-46 in 16 x 4, 46-51 in 8 x 4, 47-50 in 8 x 12, 12 x 8, 8 x 16 and
# 16 x 8 (their accumulators spill), 56 in 4 x 4, 151 in tile64-pipe and 405 as dot; lavapipe runs the
# 8 x 8 blocks about a fifth faster than the 4 x 8 too. Larger blocks mean fewer invocations: a product
# takes 8 x 8 blocks only when they fill BLOCK_FILL invocations (16 workgroups of 64, for the CPU's
# threads to share), else 4 x 8 (_blocks).
BLOCKS = {"block4x8": (4, 8), "block8x8": (8, 8)}
BLOCK_FILL = 1024


def _blocked(kernel: Kernel) -> bool:
    """A matmul the blocks can run: A and B read as vec4 (_quad_operands) over a K that is a multiple of 4
    (a block's step takes four at a time)."""
    return _quad_operands(kernel) and kernel.inputs[0].shape[-1] % 4 == 0


def block_grid(shape: tuple[int, ...], block: tuple[int, int]) -> tuple[int, int, int]:
    """A product's output `shape` (batch dims, m, n) in rows x cols `block`s: the blocks along n, the
    blocks of one batch entry and of them all; a block past a ragged edge counts whole."""
    *batch, m, n = shape
    rows, cols = block
    across = -(-n // cols)
    cells = -(-m // rows) * across
    return across, cells, math.prod(batch) * cells


def _blocks(kernel: Kernel) -> str:
    """8 x 8 blocks where they make BLOCK_FILL invocations, else 4 x 8."""
    return "block8x8" if block_grid(kernel.out.shape, BLOCKS["block8x8"])[2] >= BLOCK_FILL else "block4x8"


def _large(kernel: Kernel) -> bool:
    """128 x 128 tiles pay off only when there are enough of them to fill a large GPU (on the H200 the
    64 x 64 kernel is faster below that: bench/levels.py)."""
    *batch, m, n = kernel.out.shape
    tiles = math.prod(batch) * -(-m // 128) * -(-n // 128)
    return min(m, n) >= LARGE_MATMUL and tiles >= LARGE_TILES


def _thin(kernel: Kernel) -> bool:
    """Products of a few outputs a matrix (e.g. a bootstrap's 2,000 4 x 4 information matrices, each a sum
    over 569 rows), or of a few rows, columns or terms (its 2,000 569 x 4 by 4 x 1 linear predictors)."""
    *_, m, n = kernel.out.shape
    k = kernel.inputs[0].shape[-1]
    return m * n <= SMALL_MATMUL or min(m, n, k) <= THIN_MATMUL


def _small(kernel: Kernel) -> bool:
    """Thin products (_thin), or of little work (at most SMALL_WORK multiply-adds a matrix: the digits
    MLP's): one invocation per output, its K multiply-adds in order. In a 64 x 64 tile 256 threads would
    compute mostly padding, a barrier every 16 steps of K (1,000x slower on lavapipe); and a small
    product's tiles are not worth making: SwiftShader takes about 1 s to make a tile64 pipeline and 3 s a
    pipelined one, 20 ms this one."""
    *_, m, n = kernel.out.shape
    return _thin(kernel) or m * n * kernel.inputs[0].shape[-1] <= SMALL_WORK


def _nf4(kernel: Kernel, level: Level, features: frozenset[str]) -> str:
    """A product with NF4 weights: at debug one invocation per output, its sum in K's order (the CPU path's
    order); elsewhere the float32 matmul's tiles, by the same rule of size (a product of few outputs stays
    one invocation each), except that 128 x 128 tiles need NF4_LARGE_TILES of them (on the H200, MiniLM's
    4,096 x 384 products have 96 such tiles: in 64 x 64 tiles its QLoRA step took 27.0 ms, not 32.4 ms;
    bench/finetune.py --profile)."""
    n = kernel.out.shape[-1]
    rows = kernel.out.size // n
    if level is Level.DEBUG or rows * n <= SMALL_MATMUL or min(rows, n) <= THIN_MATMUL:
        return "default"
    tiles = -(-rows // 128) * -(-n // 128)
    return "tile128" if min(rows, n) >= LARGE_MATMUL and tiles >= NF4_LARGE_TILES else "tile64"


def _solve(kernel: Kernel, level: Level, features: frozenset[str]) -> str:
    return "solve-invocation" if kernel.inputs[0].shape[-1] <= SMALL_SOLVE else "solve-workgroup"


def _serial(kernel: Kernel, level: Level, features: frozenset[str]) -> str:
    """A reduction or a row operation of at most SERIAL elements an output runs one invocation per output,
    in index order ("serial"): a workgroup per output would leave most of its lanes idle and wait on its
    barriers. On a software adapter so does one of at least SERIAL_OUTPUTS outputs, whatever its length:
    there a barrier costs more than a long loop (SwiftShader took 12.3 ms for a 256 x 512 bias gradient in
    workgroups, lavapipe 0.65). Both orders are fixed, so every level chooses by size alike."""
    x = kernel.inputs[0]
    count = x.shape[-1] if kernel.kind in ROWS else math.prod(x.shape[len(kernel.out.shape) :])
    outputs = math.prod(x.shape[:-1]) if kernel.kind in ROWS else math.prod(kernel.out.shape)
    software = SOFTWARE in features and outputs >= SERIAL_OUTPUTS
    return "serial" if count <= SERIAL or software else "default"


def _check_index(kernel: Kernel, level: Level, features: frozenset[str]) -> str:
    """At most SERIAL_CHECK indices are checked by one invocation in index order ("serial"), which a series
    can run (lower.series); more by a workgroup. Both record the same count, first position and value."""
    return "serial" if kernel.inputs[0].size <= SERIAL_CHECK else "default"


# The kinds besides MATMUL with a choice of variant (every other kind runs "default"), and how each chooses.
OTHERS: dict[Kind, Callable[[Kernel, Level, frozenset[str]], str]] = {
    Kind.SOLVE: _solve,
    Kind.NF4_MATMUL: _nf4,
    Kind.CHECK_INDEX: _check_index,
    **dict.fromkeys((Kind.REDUCE, *ROWS), _serial),
}


def choose(kernel: Kernel, level: Level, features: frozenset[str]) -> str:
    """A matmul whose operands read as vec4 takes the pipelined float32 tiles at every level, sized by
    shape (_pipelined); they, tile64 and dot all do tile64's arithmetic in tile64's order (each output's
    products summed by fma in K's order from 0), so choosing among them by shape keeps debug's bits. Other
    matmuls: debug keeps tile64 (a product of few outputs a matrix: dot); prod picks the 128 tiles when
    large (products with NF4 weights too: _nf4); fast uses float16 128 tiles there where the device has
    shader-f16 (the float32 pipelined tiles outrun float16 ones on the H200, bench/matmul.py, so fast
    takes them where they apply). A solve splits its matrices over invocations or workgroups by size at
    every level: both do every matrix's arithmetic in one order (wasm/cpu_solve.c's), so neither changes
    what debug promises. On a software adapter (SOFTWARE among `features`) a matmul whose operands read as
    vec4, not thin, takes BLOCKS (_blocks) instead of tiles or dot (small ones too: 4 x 8 blocks read each
    operand an eighth and a quarter as often as dot), at every level, for the same reason."""
    if kernel.kind in OTHERS:
        return OTHERS[kernel.kind](kernel, level, features)
    return _matmul(kernel, level, features) if kernel.kind is Kind.MATMUL else "default"


def _matmul(kernel: Kernel, level: Level, features: frozenset[str]) -> str:
    if SOFTWARE in features and _blocked(kernel) and not _thin(kernel):  # tile64's order, so debug's bits hold
        return _blocks(kernel)
    if _small(kernel):  # the same multiply-adds in the same order again
        return "dot"
    if _quad_operands(kernel):  # the same again, and faster than float16 tiles: every level
        return _pipelined(kernel)
    if level is Level.DEBUG or not _large(kernel):
        return "tile64"
    return "tile128-f16" if level is Level.FAST and F16 in features else "tile128"


def notes(kernels: tuple[Kernel, ...], level: Level, features: frozenset[str]) -> tuple[str, ...]:
    """What a level could not use on this device, and what it uses instead (never a silent fallback)."""
    large = [k for k in kernels if k.kind is Kind.MATMUL and _large(k) and not _quad_operands(k)]
    if level is Level.FAST and F16 not in features and large:
        return ("fast: this device has no shader-f16, so its matmuls run prod's float32 kernels",)
    return ()


# Declared tolerance of each variant against the float64 reference: max |device - reference| relative to
# max(1, max |reference|), for kernels that sum at most one term per output; kernels that sum n terms
# (matmul, convolutions, reductions, softmax rows) scale it by sqrt(n) (`tolerance`). The correctness
# matrix (tests/devices/test_correctness.py, e2e/test_matrix_in_chromium.py) asserts these and records the
# measured errors in correctness.json. The float16 variants round both operands of every product to
# float16 (2**-11 each), hence 2**-10 per term.
TOLERANCE = {
    "default": 5e-6,
    "serial": 5e-6,
    "dot": 1e-5,
    "tile64": 1e-5,
    "tile128": 1e-5,
    "tile128-f16": 1e-3,
    "tile128-pipe": 1e-5,
    "tile64x128-pipe": 1e-5,
    "tile64-pipe": 1e-5,
    **dict.fromkeys(BLOCKS, 1e-5),
    "solve-invocation": 5e-6,
    "solve-workgroup": 5e-6,
}


def _pool_terms(kernel: Kernel) -> int:
    pool: Any = kernel.arg if kernel.kind is Kind.AVG_POOL2D else kernel.arg.pool  # type: ignore[attr-defined]
    return math.prod(pool.kernel)


def _conv_input_terms(kernel: Kernel) -> int:
    w = kernel.inputs[1]  # weight [Cout, Cin / groups, kh, kw]
    return w.shape[0] // kernel.arg.conv.groups * w.shape[2] * w.shape[3]  # type: ignore[attr-defined]


# How many terms one output element of a kernel sums, by kind (absent kinds sum nothing: 1).
TERMS: dict[Kind, Callable[[Kernel], int]] = {
    Kind.MATMUL: lambda k: k.inputs[0].shape[-1],
    Kind.REDUCE: lambda k: k.arg.terms,  # type: ignore[attr-defined]
    Kind.SOFTMAX: lambda k: k.inputs[0].shape[-1],
    Kind.LOG_SOFTMAX: lambda k: k.inputs[0].shape[-1],
    Kind.CONV2D: lambda k: math.prod(k.inputs[1].shape[1:]),
    Kind.CONV2D_GRAD_INPUT: _conv_input_terms,
    Kind.CONV2D_GRAD_WEIGHT: lambda k: k.inputs[1].shape[0] * k.inputs[1].shape[2] * k.inputs[1].shape[3],
    Kind.AVG_POOL2D: _pool_terms,
    Kind.AVG_POOL2D_GRAD: _pool_terms,
    Kind.MAX_POOL2D_GRAD: _pool_terms,
    Kind.SCATTER_ADD: lambda k: k.inputs[0].size,  # every index may name the same row
    # n - 1 elimination updates, then n back-substitution terms; the bound holds for a well-conditioned a (the
    # error of any float32 solve grows with a's condition number: the correctness cases use diagonally
    # dominant matrices)
    Kind.SOLVE: lambda k: 2 * k.inputs[0].shape[-1],
    Kind.NF4_MATMUL: lambda k: k.inputs[0].shape[-1],
}


def summed_terms(kernel: Kernel) -> int:
    """How many terms one output element of `kernel` sums (1 for kernels that sum nothing)."""
    rule = TERMS.get(kernel.kind)
    return rule(kernel) if rule else 1


# Float16 storage: WGSL rounds a value converted to float16 to either neighbour (the direction is the
# implementation's), the reference to nearest even, so a stored value may differ from the reference's by
# one float16 step: 2**-10 relative. A kernel that loads float16 may see such a difference in every term;
# one that stores float16 adds one more.
FLOAT16_STEP = 2.0**-10


def float16_roundings(kernel: Kernel, schedule: Schedule) -> int:
    """How many float16 roundings `kernel`'s error may carry: one if it loads float16 storage, one if it
    stores it."""
    half = {b.id for b in schedule.buffers if b.dtype is DType.F16}
    return int(any(v.buffer in half for v in kernel.inputs)) + int(any(v.buffer in half for v in kernel.writes))


def tolerance(kernel: Kernel, roundings: int = 0) -> float:
    """The declared bound on `kernel`'s error against the float64 reference (see TOLERANCE), for a kernel
    whose float16 storage carries `roundings` roundings (float16_roundings)."""
    return (TOLERANCE[kernel.variant] + roundings * FLOAT16_STEP) * math.sqrt(summed_terms(kernel))


def with_variants(kernels: Sequence[Kernel], level: Level, features: frozenset[str]) -> tuple[Kernel, ...]:
    """`kernels`, each with the variant `level` chooses for it on a device with `features`."""
    out = []
    for k in kernels:
        chooses = k.kind is Kind.MATMUL or k.kind in OTHERS
        variant = choose(k, level, features) if chooses else "default"  # asked only where it chooses
        out.append(k if variant == k.variant else k.with_variant(variant))
    return tuple(out)
