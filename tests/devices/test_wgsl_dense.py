"""WGSL elementwise, matmul, reduction and row kernels on lavapipe (wgpu-py) against the float64 reference,
on random shapes with odd sizes and size 1. Declared tolerances: elementwise 2e-6 relative (5e-6 for
transcendentals), matmul 1e-5 * sqrt(K) relative to the largest magnitude, reductions 1e-5."""

from __future__ import annotations

import numpy as np
import pytest
from wgpu_harness import run_on

from scellis.ir import Function
from scellis.levels import Level
from scellis.lower import lower, variants
from scellis.ops import DType, Node, Op, const, make
from scellis.ops import defs as d
from scellis.ops.node import input_node
from scellis.runtime.reference.oracle import run
from scellis.runtime.webgpu.native import WgpuDevice

RNG = np.random.default_rng(1234)
SHAPES = [(1,), (7,), (3, 1, 5), (2, 33, 17), (257,), (4, 64)]


@pytest.fixture(scope="module")
def gpu() -> WgpuDevice:
    return WgpuDevice()


def data(name: str, shape: tuple[int, ...], dtype: DType = DType.F32) -> Node:
    return input_node(name, d.Role.DATA, dtype, shape)


def close(got: np.ndarray, want: np.ndarray, rel: float) -> None:
    scale = max(1.0, float(np.max(np.abs(want)))) if want.size else 1.0
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=0, atol=rel * scale)


def check(gpu: WgpuDevice, fn: Function, inputs: dict, rel: float) -> None:
    got, want = run_on(gpu, fn, inputs), run(fn, inputs)
    for name, _ in fn.outputs:
        close(got[name], want[name], rel)


ANY_SIGN = (
    Op.NEG, Op.EXP, Op.EXPM1, Op.ABS, Op.SIGN, Op.RELU, Op.TANH, Op.SIGMOID, Op.ERF, Op.COS, Op.SIN, Op.FLOOR,
)  # fmt: skip
POSITIVE = (Op.LOG, Op.SQRT, Op.RSQRT)


@pytest.mark.parametrize("shape", SHAPES)
def test_unary_ops(gpu: WgpuDevice, shape: tuple[int, ...]) -> None:
    x = data("x", shape)
    outs = [(op.value, make(op, x)) for op in ANY_SIGN]
    outs += [("leaky", make(Op.LEAKY_RELU, x, arg=d.LeakyReluArg(0.1)))]
    outs += [(f"gelu_{a}", make(Op.GELU, x, arg=d.GeluArg(a))) for a in ("tanh", "none")]
    values = RNG.standard_normal(shape) * 3
    check(gpu, Function("unary", (x,), tuple(outs)), {"x": values}, 5e-6)
    positive = Function("positive", (x,), tuple((op.value, make(op, x)) for op in POSITIVE))
    check(gpu, positive, {"x": np.abs(values) + 0.1}, 5e-6)


@pytest.mark.parametrize(
    ("a_shape", "b_shape"), [((7,), (7,)), ((3, 1, 5), (4, 5)), ((2, 33, 17), (17,)), ((1,), (4, 64))]
)
def test_binary_ops_broadcast(gpu: WgpuDevice, a_shape: tuple[int, ...], b_shape: tuple[int, ...]) -> None:
    a, b = data("a", a_shape), data("b", b_shape)
    outs = [(op.value, make(op, a, b)) for op in (Op.ADD, Op.SUB, Op.MUL, Op.DIV, Op.MAXIMUM, Op.MINIMUM)]
    outs += [("pow", make(Op.POW, make(Op.ABS, a), b)), ("less", make(Op.LESS, a, b)), ("eq", make(Op.EQUAL, a, a))]
    outs += [("where", make(Op.WHERE, make(Op.LESS, a, b), a, make(Op.NEG, b)))]
    inputs = {"a": RNG.standard_normal(a_shape) + 0.5, "b": RNG.standard_normal(b_shape) + 2.5}
    check(gpu, Function("binary", (a, b), tuple(outs)), inputs, 5e-6)


def test_casts_bools_and_ints(gpu: WgpuDevice) -> None:
    x, i = data("x", (5, 6)), data("i", (5, 6), DType.I32)
    hits = make(Op.EQUAL, i, const(2, DType.I32))
    outs = [
        ("f", make(Op.CAST, hits, arg=d.CastArg(DType.F32))),
        ("i2", make(Op.ADD, i, const(3, DType.I32))),
        ("mask", make(Op.LESS, x, const(0.0))),
        ("floor_i", make(Op.CAST, make(Op.FLOOR, x), arg=d.CastArg(DType.I32))),
    ]
    inputs = {"x": RNG.standard_normal((5, 6)) * 4, "i": RNG.integers(0, 4, (5, 6))}
    check(gpu, Function("casts", (x, i), tuple(outs)), inputs, 0)


@pytest.mark.parametrize(
    ("a_shape", "b_shape", "ta", "tb"),
    [((1, 1), (1, 1), False, False), ((65, 3), (3, 70), False, False), ((9, 130), (9, 5), True, False),
     ((2, 17, 8), (19, 8), False, True), ((3, 1, 6, 5), (4, 7, 6), True, True), ((128, 64), (64, 10), False, False),
     ((200, 130), (130, 260), False, False), ((1000, 130), (130, 600), False, False),
     ((2, 520, 129), (2, 516, 129), False, True), ((1028, 132), (132, 520), False, False),
     ((3, 400, 64), (64, 444), False, False), ((500, 569, 4), (500, 569, 4), True, False),
     ((7, 3), (3, 30), False, False), ((4, 16, 33), (33, 16), False, False)],
)  # fmt: skip
def test_matmul(gpu: WgpuDevice, a_shape: tuple, b_shape: tuple, ta: bool, tb: bool) -> None:
    a, b = data("a", a_shape), data("b", b_shape)
    fn = Function("mm", (a, b), (("m", make(Op.MATMUL, a, b, arg=d.MatmulArg(ta, tb))),))
    k = a_shape[-2] if ta else a_shape[-1]
    check(gpu, fn, {"a": RNG.standard_normal(a_shape), "b": RNG.standard_normal(b_shape)}, 1e-5 * np.sqrt(k))


def test_matmul_variants_follow_level_and_layout() -> None:
    """Operands read as vec4 take the pipelined tiles at every level, the largest tile of which there are
    FILL; others the 128 tiles when large at prod (float16 ones at fast), tile64 otherwise and at debug."""

    def chosen(m: int, k: int, n: int, level: Level = Level.PROD, transpose_b: bool = False) -> str:
        a, b = data("a", (m, k)), data("b", (n, k) if transpose_b else (k, n))
        fn = Function("mm", (a, b), (("m", make(Op.MATMUL, a, b, arg=d.MatmulArg(False, transpose_b))),))
        (kernel,) = lower(fn, level, frozenset({"shader-f16"})).kernels
        return kernel.variant

    assert chosen(4096, 4096, 4096) == chosen(1024, 4096, 4096) == chosen(1536, 512, 1536) == "tile128-pipe"
    assert chosen(1024, 1024, 1024) == "tile64x128-pipe"  # 64 tiles of 128 x 128, 128 of 64 x 128
    assert chosen(1028, 132, 1000) == chosen(1028, 132, 1000, Level.DEBUG) == "tile64x128-pipe"
    assert chosen(1028, 132, 256) == chosen(1028, 132, 256, Level.FAST) == "tile64-pipe"
    assert chosen(900, 129, 900, transpose_b=True) == "tile128"  # K = 129: no vec4 along K
    assert chosen(900, 129, 900, Level.FAST, True) == "tile128-f16"
    assert chosen(900, 129, 900, Level.DEBUG, True) == "tile64"
    assert chosen(1028, 129, 256) == "tile64"  # 9 x 2 tiles: too few for 128


def test_a_product_of_few_outputs_runs_one_invocation_each_with_tile64s_bits(
    gpu: WgpuDevice, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The dot variant (at most 256 outputs a matrix, at most 16 rows or columns, or little work) does tile64's
    multiply-adds in tile64's order (as the pipelined tiles do), so choosing it by shape keeps debug's
    bits; an epilogue fuses into it as into the tiles."""
    a, w, c = data("a", (300, 97, 4)), data("w", (300, 97, 1)), data("c", (4,))
    weighted = make(Op.MUL, a, w)
    y = make(Op.ADD, make(Op.MATMUL, a, weighted, arg=d.MatmulArg(True, False)), c)
    fn = Function("information", (a, w, c), (("y", y),))
    inputs = {"a": RNG.standard_normal((300, 97, 4)), "w": RNG.random((300, 97, 1)), "c": RNG.standard_normal(4)}
    assert [k.variant for k in lower(fn, Level.DEBUG).kernels if k.variant != "default"] == ["dot"]
    check(gpu, fn, inputs, 1e-5 * np.sqrt(97))
    dot = run_on(gpu, fn, inputs)["y"]
    x, beta = data("x", (3, 569, 30)), data("beta", (3, 30, 1))
    thin = Function("predictor", (x, beta), (("eta", make(Op.MATMUL, x, beta, arg=d.MatmulArg())),))
    thin_inputs = {"x": RNG.standard_normal((3, 569, 30)), "beta": RNG.standard_normal((3, 30, 1))}
    assert [k.variant for k in lower(thin, Level.DEBUG).kernels] == ["dot"]
    check(gpu, thin, thin_inputs, 1e-5 * np.sqrt(30))
    thin_dot = run_on(gpu, thin, thin_inputs)["eta"]
    monkeypatch.setattr(variants, "SMALL_MATMUL", 0)
    monkeypatch.setattr(variants, "THIN_MATMUL", 0)
    monkeypatch.setattr(variants, "SMALL_WORK", 0)
    assert [k.variant for k in lower(fn, Level.DEBUG).kernels if k.variant != "default"] == ["tile128-pipe"]
    assert dot.tobytes() == run_on(gpu, fn, inputs)["y"].tobytes()  # 300 batches of 4 x 4: vec4 operands
    monkeypatch.setattr(variants, "_quad_operands", lambda kernel: False)
    assert [k.variant for k in lower(fn, Level.DEBUG).kernels if k.variant != "default"] == ["tile64"]
    assert dot.tobytes() == run_on(gpu, fn, inputs)["y"].tobytes()
    assert [k.variant for k in lower(thin, Level.DEBUG).kernels] == ["tile64"]
    assert thin_dot.tobytes() == run_on(gpu, thin, thin_inputs)["eta"].tobytes()


def test_matmul_epilogue_is_one_kernel_and_exact(gpu: WgpuDevice) -> None:
    x, w, b = data("x", (37, 70)), data("w", (70, 45)), data("b", (45,))
    y = make(Op.RELU, make(Op.ADD, make(Op.MATMUL, x, w, arg=d.MatmulArg()), b))
    fn = Function("dense", (x, w, b), (("y", y),))
    inputs = {"x": RNG.standard_normal((37, 70)), "w": RNG.standard_normal((70, 45)), "b": RNG.standard_normal(45)}
    check(gpu, fn, inputs, 1e-5 * np.sqrt(70))


@pytest.mark.parametrize(
    ("shape", "axes", "keep"),
    [((1,), (0,), False), ((5, 6, 7), (0, 2), False), ((4, 300), (1,), True), ((3, 2, 1), (0, 1, 2), False)],
)
def test_reductions(gpu: WgpuDevice, shape: tuple, axes: tuple, keep: bool) -> None:
    x = data("x", shape)
    outs = [(op.value, make(op, x, arg=d.ReduceArg(axes, keep))) for op in (Op.SUM, Op.MEAN, Op.MAX, Op.VAR)]
    count = int(np.prod([shape[a] for a in axes]))
    if count > 1:
        outs.append(("var1", make(Op.VAR, x, arg=d.ReduceArg(axes, keep, 1))))
    outs.append(("neg_mean", make(Op.NEG, make(Op.MEAN, x, arg=d.ReduceArg(axes, keep)))))
    check(gpu, Function("reduce", (x,), tuple(outs)), {"x": RNG.standard_normal(shape)}, 1e-5)


@pytest.mark.parametrize(("shape", "axis"), [((1,), 0), ((4, 9, 3), 1), ((2, 200), 1), ((5, 1), 1)])
def test_rows(gpu: WgpuDevice, shape: tuple, axis: int) -> None:
    x = data("x", shape)
    outs = [(op.value, make(op, x, arg=d.AxisArg(axis))) for op in (Op.SOFTMAX, Op.LOG_SOFTMAX, Op.ARGMAX)]
    values = RNG.standard_normal(shape) * 30
    check(gpu, Function("rows", (x,), tuple(outs)), {"x": values}, 2e-6)


def test_a_software_adapter_runs_long_reductions_and_rows_of_many_outputs_one_invocation_each(
    gpu: WgpuDevice,
) -> None:
    """On a software adapter, a bias gradient (a 300 x 130 column sum, 130 outputs) and 70 rows of 300
    run serial, against the reference within their tolerances; 4 outputs of 300 keep their workgroups,
    and without the feature long ones keep theirs."""
    software = frozenset({variants.SOFTWARE})
    x, r, f = data("x", (300, 130)), data("r", (70, 300)), data("f", (4, 300))
    outs = [(op.value, make(op, x, arg=d.ReduceArg((0,), False))) for op in (Op.SUM, Op.MEAN, Op.MAX, Op.VAR)]
    outs += [(op.value, make(op, r, arg=d.AxisArg(1))) for op in (Op.SOFTMAX, Op.LOG_SOFTMAX, Op.ARGMAX)]
    outs += [("few", make(Op.SUM, f, arg=d.ReduceArg((1,), False)))]
    fn = Function("long", (x, r, f), tuple(outs))
    chosen = {(p.out.shape, p.variant) for k in lower(fn, Level.PROD, software).kernels for p in k.parts}
    assert {variant for shape, variant in chosen if shape != (4,)} == {"serial"}
    assert {variant for shape, variant in chosen if shape == (4,)} == {"default"}
    assert {k.variant for k in lower(fn, Level.PROD).kernels} == {"default"}
    inputs = {"x": RNG.standard_normal((300, 130)), "r": RNG.standard_normal((70, 300)) * 30}
    inputs["f"] = RNG.standard_normal((4, 300))
    got, want = run_on(gpu, fn, inputs, Level.PROD, software), run(fn, inputs)
    for name, _ in fn.outputs:
        close(got[name], want[name], variants.TOLERANCE["serial"] * np.sqrt(300))


def test_argmax_takes_the_first_maximum(gpu: WgpuDevice) -> None:
    x = data("x", (3, 130))
    values = np.zeros((3, 130))
    values[0, [5, 70, 129]] = 2.0
    values[1, [64, 1]] = 1.0
    fn = Function("am", (x,), (("am", make(Op.ARGMAX, x, arg=d.AxisArg(1))),))
    assert run_on(gpu, fn, {"x": values})["am"].tolist() == [5, 1, 0]


def test_views_concat_slice_grad_and_one_hot(gpu: WgpuDevice) -> None:
    e, f = data("e", (6, 1, 5)), data("f", (4, 5))
    g = make(Op.MUL, e, f)
    p = make(Op.PERMUTE, g, arg=d.PermuteArg((2, 0, 1)))
    sl = make(Op.SLICE, p, arg=d.SliceArg((1, 0, 1), (5, 6, 4), (2, 3, 2)))
    sg = make(Op.SLICE_GRAD, sl, arg=d.SliceGradArg((5, 6, 4), (1, 0, 1), (5, 6, 4), (2, 3, 2)))
    labels = data("labels", (7,), DType.I32)
    hot = make(Op.ONE_HOT, labels, arg=d.ClassesArg(4))
    outs = [
        ("p", make(Op.EXP, p)),
        ("sl", sl),
        ("sg", sg),
        ("cat", make(Op.CONCAT, hot, make(Op.NEG, hot), arg=d.AxisArg(1))),
    ]
    outs.append(("flat", make(Op.RESHAPE, p, arg=d.ShapeArg((30, 4)))))
    inputs = {"e": RNG.standard_normal((6, 1, 5)), "f": RNG.standard_normal((4, 5)), "labels": RNG.integers(0, 4, 7)}
    check(gpu, Function("views", (e, f, labels), tuple(outs)), inputs, 2e-6)


@pytest.mark.parametrize(
    ("rows", "level", "variant"),
    [(4096, Level.PROD, "tile128"), (1024, Level.PROD, "tile64"), (300, Level.FAST, "tile64")],
)
def test_nf4_products_in_the_matmul_tiles(gpu: WgpuDevice, rows: int, level: Level, variant: str) -> None:
    """A linear's forward (x W^T) and input gradient (g W) from NF4 words, in the float32 matmul's tiles
    (ragged edges in the smaller case), against the reference reading the same words."""
    w = data("w", (512, 512))
    packed = make(Op.NF4_PACK, w, arg=d.Nf4Arg(512, 512))
    x, g = data("x", (rows, 512)), data("g", (rows, 512))
    outs = (
        ("forward", make(Op.NF4_MATMUL, x, packed, arg=d.Nf4MatmulArg(512, 512))),
        ("input gradient", make(Op.NF4_MATMUL, g, packed, arg=d.Nf4MatmulArg(512, 512, True))),
    )
    fn = Function("nf4", (w, x, g), outs)
    chosen = [k.variant for k in lower(fn, level).kernels if k.kind.value == "nf4_matmul"]
    assert chosen == [variant, variant]
    values = {"w": RNG.uniform(-0.2, 0.2, (512, 512)), "x": RNG.uniform(-1, 1, (rows, 512))}
    values["g"] = RNG.uniform(-1, 1, (rows, 512))
    got, want = run_on(gpu, fn, values, level=level), run(fn, values)
    for name, _ in outs:
        close(got[name], want[name], variants.TOLERANCE[variant] * np.sqrt(512))
