"""The pipelined matmul tiles and a software adapter's blocks (codegen/wgsl_matmul.py) on lavapipe against
the float64 reference, every blocking the plan may choose on edge shapes: ragged edges, a K of one partial
slice (K = 1 too) and of many slices, thin outputs, batches (one broadcast), transposed operands, A and B
in one buffer, a fused epilogue. Each does tile64's multiply-adds in tile64's order, so its bits are
tile64's: debug may choose them too."""

from __future__ import annotations

import numpy as np
import pytest
from wgpu_harness import run_on

from scellis.codegen import wgsl_matmul
from scellis.ir import Function
from scellis.levels import Level
from scellis.lower import lower, variants
from scellis.ops import DType, Node, Op, make
from scellis.ops import defs as d
from scellis.ops.node import input_node
from scellis.runtime.reference.oracle import run
from scellis.runtime.webgpu.native import WgpuDevice

RNG = np.random.default_rng(23)
CASES = [
    ((130, 36), (36, 260), False, False),  # ragged M and N, K a slice and a half
    ((128, 64), (64, 256), False, False),  # whole tiles: no bounds checks
    ((70, 4), (4, 68), False, False),  # K of one partial slice
    ((300, 1), (1, 260), False, False),  # K = 1: A read as vec4 along M (its K stride is 0)
    ((64, 200), (200, 72), False, False),  # 25 slices of 8: the loop, then the steps after it
    ((8, 40), (40, 300), False, False),  # thin: 8 rows
    ((300, 40), (40, 8), False, False),  # 8 columns
    ((2, 132, 20), (2, 20, 136), False, False),
    ((3, 1, 44, 8), (4, 8, 52), False, False),  # A broadcast over the second batch axis
    ((40, 132), (40, 136), True, False),  # A transposed: contiguous along M
    ((132, 40), (136, 40), False, True),  # B transposed: contiguous along K
    ((24, 72), (80, 24), True, True),
]


@pytest.fixture(scope="module")
def gpu() -> WgpuDevice:
    return WgpuDevice()


def data(name: str, shape: tuple[int, ...]) -> Node:
    return input_node(name, d.Role.DATA, DType.F32, shape)


def product(a_shape: tuple, b_shape: tuple, ta: bool, tb: bool) -> tuple[Function, dict, int]:
    a, b = data("a", a_shape), data("b", b_shape)
    fn = Function("mm", (a, b), (("m", make(Op.MATMUL, a, b, arg=d.MatmulArg(ta, tb))),))
    inputs = {"a": RNG.standard_normal(a_shape), "b": RNG.standard_normal(b_shape)}
    return fn, inputs, a_shape[-2] if ta else a_shape[-1]


def forced(monkeypatch: pytest.MonkeyPatch, fn: Function, variant: str, level: Level = Level.PROD) -> None:
    """Make the plan pick `variant` (a pipelined blocking, or tile64 by reading no operand as vec4), thin
    products too (otherwise dot's)."""
    monkeypatch.setattr(variants, "_small", lambda kernel: False)
    if variant == "tile64":
        monkeypatch.setattr(variants, "_quad_operands", lambda kernel: False)
    else:
        monkeypatch.setattr(variants, "_pipelined", lambda kernel: variant)
    assert [k.variant for k in lower(fn, level).kernels] == [variant]


@pytest.mark.parametrize("variant", list(wgsl_matmul.BLOCKINGS))
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}x{c[1]}{'T' * c[2]}{'t' * c[3]}")
def test_pipelined_tiles_match_the_reference_with_tile64s_bits(
    gpu: WgpuDevice, monkeypatch: pytest.MonkeyPatch, variant: str, case: tuple
) -> None:
    fn, inputs, k = product(*case)
    with monkeypatch.context() as patch:
        forced(patch, fn, "tile64", Level.DEBUG)
        tile64 = run_on(gpu, fn, inputs, Level.DEBUG)["m"]
    forced(monkeypatch, fn, variant)
    got, want = run_on(gpu, fn, inputs)["m"], run(fn, inputs)["m"]
    scale = max(1.0, float(np.max(np.abs(want))))
    assert float(np.max(np.abs(got - want))) <= variants.TOLERANCE[variant] * np.sqrt(k) * scale
    assert got.tobytes() == tile64.tobytes()


SOFTWARE = frozenset({variants.SOFTWARE})


@pytest.mark.parametrize("variant", list(variants.BLOCKS))
@pytest.mark.parametrize(
    "case", [c for c in CASES if product(*c)[2] % 4 == 0], ids=lambda c: f"{c[0]}x{c[1]}{'T' * c[2]}{'t' * c[3]}"
)
def test_blocks_match_the_reference_with_tile64s_bits(
    gpu: WgpuDevice, monkeypatch: pytest.MonkeyPatch, variant: str, case: tuple
) -> None:
    """A software adapter's blocks, at every level (debug's bits are tile64's), on every case whose K is a
    multiple of 4 (130 rows and 260 columns: blocks past both edges)."""
    fn, inputs, k = product(*case)
    with monkeypatch.context() as patch:
        forced(patch, fn, "tile64", Level.DEBUG)
        tile64 = run_on(gpu, fn, inputs, Level.DEBUG)["m"]
    monkeypatch.setattr(variants, "_thin", lambda kernel: False)
    monkeypatch.setattr(variants, "_blocks", lambda kernel: variant)
    assert [k.variant for k in lower(fn, Level.DEBUG, SOFTWARE).kernels] == [variant]
    got, want = run_on(gpu, fn, inputs, Level.DEBUG, SOFTWARE)["m"], run(fn, inputs)["m"]
    scale = max(1.0, float(np.max(np.abs(want))))
    assert float(np.max(np.abs(got - want))) <= variants.TOLERANCE[variant] * np.sqrt(k) * scale
    assert got.tobytes() == tile64.tobytes()


def test_a_software_adapter_takes_blocks_where_they_apply() -> None:
    """Blocks where the operands read as vec4, K is a multiple of 4 and the product is not thin: 8 x 8 where
    they fill 16 workgroups, else 4 x 8 (small ones too: the digits MLP's); a K of 1 keeps the tiles; a thin
    product (a side or K of at most 16) stays dot's on every device; without the feature, the tiles."""
    blocked, _, _ = product((256, 784), (784, 512), False, False)
    assert [k.variant for k in lower(blocked, Level.PROD, SOFTWARE).kernels] == ["block8x8"]
    assert [k.variant for k in lower(blocked, Level.PROD).kernels] == ["tile64-pipe"]
    shallow, _, _ = product((300, 1), (1, 4000), False, False)
    assert [k.variant for k in lower(shallow, Level.PROD).kernels] == ["dot"]
    small, _, _ = product((64, 64), (64, 128), False, False)
    assert [k.variant for k in lower(small, Level.PROD, SOFTWARE).kernels] == ["block4x8"]
    assert [k.variant for k in lower(small, Level.PROD).kernels] == ["dot"]
    for features in (frozenset(), SOFTWARE):
        for a, b in (((256, 12), (12, 512)), ((256, 512), (512, 12)), ((4, 512), (512, 512))):
            thin, _, _ = product(a, b, False, False)
            assert [k.variant for k in lower(thin, Level.PROD, features).kernels] == ["dot"]


@pytest.mark.parametrize("features", [frozenset(), SOFTWARE], ids=["tiles", "blocks"])
def test_one_buffer_for_both_operands_and_a_fused_epilogue(gpu: WgpuDevice, features: frozenset[str]) -> None:
    """x x^T + c, relu'd: A and B read as vec4 from one binding, the epilogue fused into the stores."""
    x, c = data("x", (136, 64)), data("c", (136,))  # ragged edges, and work enough for tiles (not dot's)
    gram = make(Op.MATMUL, x, x, arg=d.MatmulArg(False, True))
    fn = Function("gram", (x, c), (("y", make(Op.RELU, make(Op.ADD, gram, c))),))
    variant = "block4x8" if features else "tile64-pipe"
    assert [k.variant for k in lower(fn, Level.PROD, features).kernels] == [variant]
    inputs = {"x": RNG.standard_normal((136, 64)), "c": RNG.standard_normal(136)}
    got, want = run_on(gpu, fn, inputs, Level.PROD, features)["y"], run(fn, inputs)["y"]
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-5 * np.sqrt(64) * max(1.0, float(np.max(np.abs(want)))))


def test_a_depth_not_a_multiple_of_4_takes_the_other_tiles() -> None:
    """A contiguous along a K of 21 can be read as vec4 neither along K nor along M."""
    fn, _, _ = product((1100, 21), (21, 1000), False, False)
    assert [k.variant for k in lower(fn, Level.PROD).kernels] == ["tile128"]
    assert [k.variant for k in lower(fn, Level.DEBUG).kernels] == ["tile64"]
