"""The CPU path's schedule executor, kind by kind, against the float64 reference.

Small IR functions are built with `make`, lowered, compiled for the CPU path (wasmtime) and run; the
reference runs the same function in float64. Shapes come from seeded generators and include odd sizes
and size 1. Declared tolerances, |cpu - ref| <= atol + rtol |ref| (K: terms summed per output):
  elementwise              rtol 2.5e-7 (2 float32 ulps: one rounding of a double-precision result);
                           atol 1e-14 where the float64 reference itself cancels (1 + erf, 1 + tanh)
  matmul                   1e-6 sqrt(K) times the sum of |products| (float32 sums in k order)
  conv2d and gradients     rtol and atol 1e-6 sqrt(K), 1e-5 sqrt(K) (unit-scale inputs)
  reduce                   rtol 2.5e-7, atol 1e-6 sqrt(K) (float64 sums, rounded once)
  softmax, log-softmax     rtol 2.5e-7 (exp and sums in float64 inside)
  pooling, gather, random  exact, or within 2-8 ulps (see each test)
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
from cpu_run import assert_close, check, function, inp, run_cpu

from scellis.ir.function import input_name
from scellis.levels import Level
from scellis.lower import Kind, lower
from scellis.lower.kernels import flat
from scellis.ops import DType, Node, Op, const, make
from scellis.ops import defs as d
from scellis.ops.defs import Role
from scellis.plan import lowered
from scellis.runtime.cpu.device import STEP_EXPORTS, compile_schedule
from scellis.runtime.cpu.module import CpuPath
from scellis.runtime.cpu.tape import OPCODES, TapeError, merge_axes
from scellis.runtime.reference.oracle import run

ROOT = Path(__file__).resolve().parents[2]
ULP2 = 2.5e-7
SEEDS = range(6)


def rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def randn(shape: tuple[int, ...], seed: int, scale: float = 1.0) -> np.ndarray:
    return (rng(seed).standard_normal(shape) * scale).astype(np.float32)


def dims(seed: int, n: int, high: int = 9) -> tuple[int, ...]:
    """n sizes in [1, high], one of them 1 for some seeds."""
    out = rng(seed + 100).integers(1, high + 1, n)
    if seed % 3 == 0:
        out[seed % n] = 1
    return tuple(int(v) for v in out)


def matmul_tol(a: np.ndarray, b: np.ndarray, k: int) -> np.ndarray:
    """The bound for sums of k products: 1e-6 sqrt(k) times the sum of |terms| (plus a floor)."""
    return 1e-6 * math.sqrt(k) * (np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))) + 1e-30


KEY, POSITION = inp("key", (2,), DType.U32, Role.RNG), inp("pos", (), DType.U32, Role.SETTING)


def random_node(dist: d.Distribution, shape: tuple[int, ...], site: int = 3, p: float = 0.0) -> Node:
    return make(Op.RANDOM, KEY, POSITION, arg=d.RandomArg(dist, "dropout", site, shape, p))


RANDOM_INPUTS = {"key": np.array([0x12345678, 0x9ABCDEF0], np.uint32), "pos": np.array(7, np.uint32)}


# -- the tape ----------------------------------------------------------------------------------------


def test_opcodes_and_step_entries_match_the_c_sources(build_script: ModuleType) -> None:
    header = (ROOT / "wasm" / "cpu_kernels.h").read_text()
    declared = {name: int(v) for name, v in re.findall(r"SC_OP_(\w+) = (\d+)", header)}
    assert declared == OPCODES
    # sc_cpu_run's cases are enum sc_run's constants, which build.py writes from RUN_ORDER (a case missing
    # or unknown fails to compile); each must call the export it is named for.
    cases = re.findall(r"case SC_RUN_(\w+): (\w+)\(", (ROOT / "wasm" / "cpu_step.c").read_text())
    assert [named for named, _ in cases] == [called for _, called in cases]
    assert {named for named, _ in cases} == set(STEP_EXPORTS)
    written = build_script.run_order_header(build_script.run_order())
    assert {name: int(v) for name, v in re.findall(r"SC_RUN_(\w+) = (\d+),", written)} == STEP_EXPORTS


def test_merge_axes_keeps_row_major_order() -> None:
    assert merge_axes((2, 3, 4), [(12, 4, 1), (0, 0, 1)]) == ((6, 4), [(4, 1), (0, 1)])
    assert merge_axes((1, 5, 1), [(0, 1, 0)]) == ((5,), [(1,)])
    assert merge_axes((), [()]) == ((1,), [(0,)])
    with pytest.raises(TapeError, match="keeps 9 axes"):
        merge_axes((2,) * 9, [tuple(3 ** (9 - i) for i in range(9))])


UNARY_DOMAINS = {Op.LOG: "positive", Op.SQRT: "positive", Op.RSQRT: "positive"}


@pytest.mark.parametrize("op", sorted(d.UNARY_FLOAT, key=lambda o: o.value), ids=lambda o: o.value)
@pytest.mark.parametrize("seed", range(2))
def test_unary_ops(cpu: CpuPath, op: Op, seed: int) -> None:
    shape = dims(seed, 3, 40)
    x = randn(shape, seed, 4.0)
    if UNARY_DOMAINS.get(op) == "positive":
        x = np.abs(x) + np.float32(1e-3)
    arg = {Op.LEAKY_RELU: d.LeakyReluArg(0.1), Op.GELU: d.GeluArg("tanh" if seed else "none")}.get(op)
    # atol: the float64 reference cancels in 1 + erf and 1 + tanh for very negative x (~1e-16 absolute)
    check(cpu, {"y": make(op, inp("x", shape), arg=arg)}, {"x": x}, ULP2, 1e-14)


def test_unary_ops_at_special_values(cpu: CpuPath) -> None:
    x = np.array(
        [0.0, -0.0, 1e-30, -1e-30, 1e-8, 88.0, 89.0, -88.0, -104.0, 1e4, -1e4, 30.0, -30.0, 4.5, -4.5, 3.0,
         np.inf, -np.inf, np.nan, 1e-45, 12345.678, -0.5, 2.0, 1e6],
        dtype=np.float32,
    )  # fmt: skip
    ops = [Op.EXP, Op.EXPM1, Op.TANH, Op.SIGMOID, Op.ERF, Op.SIN, Op.COS, Op.ABS, Op.SIGN, Op.RELU, Op.FLOOR, Op.NEG]
    xs = inp("x", x.shape)
    outs = {op.value: make(op, xs) for op in ops}
    outs["gelu_tanh"] = make(Op.GELU, xs, arg=d.GeluArg("tanh"))
    outs["gelu_erf"] = make(Op.GELU, xs, arg=d.GeluArg("none"))
    outs["log"] = make(Op.LOG, xs)
    outs["sqrt"] = make(Op.SQRT, xs)
    with np.errstate(all="ignore"):
        check(cpu, outs, {"x": x}, ULP2, 1e-37)


def test_pow_special_cases_follow_numpy(cpu: CpuPath) -> None:
    base = np.array([2.0, -2.0, -2.0, 0.0, -0.0, 0.0, -1.0, np.inf, -np.inf, 0.5, 10.0, 1.0, np.nan, -8.0], np.float32)
    expo = np.array([10.0, 3.0, 0.5, -1.0, 3.0, 0.0, np.inf, -2.0, 3.0, 200.0, 38.0, np.nan, 0.0, 1 / 3], np.float32)
    with np.errstate(all="ignore"):
        check(cpu, {"y": make(Op.POW, inp("a", (14,)), inp("b", (14,)))}, {"a": base, "b": expo}, ULP2)


@pytest.mark.parametrize("seed", SEEDS)
def test_binary_float_ops_broadcast(cpu: CpuPath, seed: int) -> None:
    a_shape = dims(seed, 3)
    b_shape = tuple(1 if rng(seed).random() < 0.4 else s for s in a_shape)[1:]
    a, b = inp("a", a_shape), inp("b", b_shape)
    outs = {op.value: make(op, a, b) for op in sorted(d.BINARY, key=lambda o: o.value) if op is not Op.POW}
    outs["pow"] = make(Op.POW, make(Op.ABS, a), b)
    outs["where"] = make(Op.WHERE, make(Op.LESS, a, b), a, const(2.5))
    values = {"a": randn(a_shape, seed), "b": randn(b_shape, seed + 1)}
    values["b"].flat[0] = values["a"].flat[0]  # an equal pair for EQUAL
    check(cpu, outs, values, ULP2)


@pytest.mark.parametrize("dtype", [DType.I32, DType.U32])
def test_integer_ops_wrap_and_compare(cpu: CpuPath, dtype: DType) -> None:
    info = np.iinfo(np.int32 if dtype is DType.I32 else np.uint32)
    values = rng(3).integers(info.min, info.max, (2, 37), dtype=np.int64)
    values[0, :4] = [info.max, info.min, 0, 1]
    a, b = inp("a", (2, 37), dtype), inp("b", (37,), dtype)
    ops = [Op.ADD, Op.SUB, Op.MUL, Op.MAXIMUM, Op.MINIMUM, Op.LESS, Op.EQUAL]
    outs = {op.value: make(op, a, b) for op in ops}
    outs["f32"] = make(Op.CAST, a, arg=d.CastArg(DType.F32))
    outs["bool"] = make(Op.CAST, a, arg=d.CastArg(DType.BOOL))
    outs["plus_one"] = make(Op.ADD, a, const(1.0, dtype))
    np_dtype = np.int32 if dtype is DType.I32 else np.uint32
    inputs = {"a": values.astype(np_dtype), "b": values[1].astype(np_dtype)}
    with np.errstate(over="ignore"):
        check(cpu, outs, inputs, ULP2)


def test_casts_between_every_dtype(cpu: CpuPath) -> None:
    x = np.array([0.0, -0.0, 1.5, -1.5, 2.7, -2.7, 1e3, 7.0, -7.0, 0.25], np.float32)
    flags = np.array([1, 0, 1, 1, 0, 0, 1, 0, 1, 0], bool)
    xs, fs = inp("x", (10,)), inp("f", (10,), DType.BOOL)
    outs = {}
    for to in (t for t in DType if t is not DType.F16):  # float16 is storage the CPU path cannot hold
        outs[f"f32_{to.short}"] = make(Op.CAST, xs, arg=d.CastArg(to))
        outs[f"bool_{to.short}"] = make(Op.CAST, fs, arg=d.CastArg(to))
        as_int = make(Op.CAST, xs, arg=d.CastArg(DType.I32))
        outs[f"i32_{to.short}"] = make(Op.CAST, as_int, arg=d.CastArg(to))
    outs["where_bool"] = make(Op.WHERE, fs, fs, make(Op.LESS, xs, const(0.0)))
    check(cpu, outs, {"x": x, "f": flags}, ULP2)


def test_one_hot_uses_coordinates(cpu: CpuPath) -> None:
    labels = np.array([[3, 0, 6], [1, 1, 2]], np.int32)
    got = check(cpu, {"y": make(Op.ONE_HOT, inp("l", (2, 3), DType.I32), arg=d.ClassesArg(7))}, {"l": labels}, 0.0)
    assert got["y"].sum() == 6


@pytest.mark.parametrize("seed", SEEDS)
def test_strided_views_permute_slice_expand(cpu: CpuPath, seed: int) -> None:
    shape = (dims(seed, 1, 5)[0] + 3, 6, 5)
    x = inp("x", shape)
    sliced = make(Op.SLICE, x, arg=d.SliceArg((1, 0, 1), (shape[0], 6, 5), (2, 3, 2)))
    permuted = make(Op.PERMUTE, sliced, arg=d.PermuteArg((2, 0, 1)))
    expanded = make(
        Op.EXPAND, make(Op.RESHAPE, x, arg=d.ShapeArg((shape[0], 30, 1))), arg=d.ShapeArg((shape[0], 30, 4))
    )
    outs = {
        "exp_of_permuted": make(Op.EXP, permuted),
        "expanded_times_2": make(Op.MUL, expanded, const(2.0)),
        "transposed_sum": make(Op.ADD, make(Op.PERMUTE, x, arg=d.PermuteArg((2, 1, 0))), const(1.0)),
    }
    check(cpu, outs, {"x": randn(shape, seed)}, ULP2)


def fits(small: tuple[int, ...], big: tuple[int, ...]) -> bool:
    """Whether `small` broadcasts to `big`."""
    tail = big[len(big) - len(small) :]
    return len(small) <= len(big) and all(y in (1, x) for x, y in zip(tail, small, strict=True))


def random_program(seed: int) -> tuple[dict[str, Node], dict[str, np.ndarray]]:
    """A random DAG over three broadcastable inputs: unary and binary ops, permutes, strided slices,
    reductions (keepdims or not) and selects, so fusion meets every kind of view."""
    r = rng(seed)
    shape = tuple(int(v) for v in r.integers(1, 6, int(r.integers(1, 5))))
    pool = [
        inp(f"x{i}", tuple(1 if r.random() < 0.3 else s for s in shape[int(r.integers(len(shape))) :]))
        for i in range(3)
    ]
    values = {f"x{i}": randn(x.shape, seed * 3 + i) for i, x in enumerate(pool)}
    for _ in range(int(r.integers(3, 12))):
        a, b, k = pool[int(r.integers(len(pool)))], pool[int(r.integers(len(pool)))], r.random()
        if k < 0.3:
            pool.append(make([Op.NEG, Op.EXP, Op.TANH, Op.SIGMOID, Op.RELU, Op.SIN][int(r.integers(6))], a))
        elif k < 0.6 and fits(b.shape, a.shape):
            pool.append(make([Op.ADD, Op.SUB, Op.MUL, Op.MAXIMUM][int(r.integers(4))], a, b))
        elif k < 0.7 and len(a.shape) >= 2:
            pool.append(make(Op.PERMUTE, a, arg=d.PermuteArg(tuple(int(v) for v in r.permutation(len(a.shape))))))
        elif k < 0.8 and a.shape:
            starts = tuple(int(r.integers(0, s)) for s in a.shape)
            steps = tuple(int(r.integers(1, 3)) for _ in a.shape)
            pool.append(make(Op.SLICE, a, arg=d.SliceArg(starts, a.shape, steps)))
        elif k < 0.9 and a.shape:
            axes = tuple(sorted({int(v) for v in r.integers(0, len(a.shape), 2)}))
            pool.append(
                make([Op.SUM, Op.MAX, Op.MEAN][int(r.integers(3))], a, arg=d.ReduceArg(axes, bool(r.integers(2))))
            )
        else:
            pool.append(make(Op.WHERE, make(Op.LESS, a, const(0.0)), a, make(Op.MUL, a, const(0.5))))
    outputs = {f"y{i}": node for i, node in enumerate(pool[3:][-3:])} or {"y": make(Op.NEG, pool[0])}
    used = {input_name(n) for n in function(outputs).inputs}
    return outputs, {name: v for name, v in values.items() if name in used}


@pytest.mark.parametrize("seed", range(40))
def test_random_programs_of_views_and_fusions(cpu: CpuPath, seed: int) -> None:
    outputs, values = random_program(seed)
    check(cpu, outputs, values, 1e-6, 1e-6)


@pytest.mark.parametrize("seed", SEEDS)
def test_concat_and_slice_grad_write_into_parts(cpu: CpuPath, seed: int) -> None:
    n, a_cols, b_cols = dims(seed, 3, 7)
    a, b = inp("a", (n, a_cols)), inp("b", (n, b_cols))
    w = inp("w", (a_cols, 3))
    mm = make(Op.MATMUL, a, w, arg=d.MatmulArg())
    joined = make(Op.CONCAT, make(Op.RELU, a), b, mm, arg=d.AxisArg(1))
    summed = make(Op.SUM, a, arg=d.ReduceArg((1,), True))
    joined0 = make(Op.CONCAT, make(Op.TANH, b), make(Op.TANH, b), arg=d.AxisArg(0))
    total = n + 2
    grad = make(
        Op.SLICE_GRAD, make(Op.EXP, b), arg=d.SliceGradArg((total, b_cols + 3), (1, 1), (n + 1, b_cols + 1), (1, 1))
    )
    outs = {
        "joined": joined,
        "joined0": joined0,
        "grad": grad,
        "with_sum": make(Op.CONCAT, summed, a, arg=d.AxisArg(1)),
    }
    values = {"a": randn((n, a_cols), seed), "b": randn((n, b_cols), seed + 1), "w": randn((a_cols, 3), seed + 2)}
    check(cpu, outs, values, 1e-6 * math.sqrt(a_cols) * 10, 1e-6)


def test_producers_with_epilogues_write_into_concat_parts(cpu: CpuPath) -> None:
    """A conv, reduce or random kernel whose epilogue lands in a strided part of a concat: the first two
    write a contiguous temporary that their tape moves; matmul and random store strided directly."""
    x, w = inp("x", (2, 3, 5, 4)), inp("w", (2, 3, 3, 3))
    conv = make(Op.RELU, make(Op.CONV2D, x, w, arg=d.ConvArg((1, 1), (1, 1), (1, 1), 1)))
    channels = make(Op.CONCAT, conv, x, arg=d.AxisArg(1))
    rows, cube = inp("r", (4, 6)), inp("c", (4, 6, 2))
    summed = make(Op.EXP, make(Op.SUM, cube, arg=d.ReduceArg((2,), False)))
    drop = make(Op.MUL, random_node(d.Distribution.UNIFORM, (4, 6)), rows)
    joined = make(Op.CONCAT, summed, rows, drop, arg=d.AxisArg(1))
    fn = function({"channels": channels, "joined": joined})
    schedule = lower(fn, Level.PROD)
    strided = {k.kind for k in flat(schedule.kernels) if not k.out.is_contiguous}
    assert {Kind.CONV2D, Kind.REDUCE, Kind.RANDOM} <= strided
    values = {"x": randn((2, 3, 5, 4), 1), "w": randn((2, 3, 3, 3), 2), "r": randn((4, 6), 3), "c": randn((4, 6, 2), 4)}
    values.update(RANDOM_INPUTS)
    got = run_cpu(cpu, fn, values, schedule)
    ref = run(fn, values)
    for name in got:
        assert_close(got[name], ref[name], 1e-5, 1e-5, name)


# -- matmul ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(10))
def test_matmul_shapes_transposes_and_batches(cpu: CpuPath, seed: int) -> None:
    r = rng(seed)
    m, k, n = dims(seed, 3, 21)
    ta, tb = bool(r.integers(2)), bool(r.integers(2))
    batch_a = tuple(int(v) for v in r.integers(1, 4, int(r.integers(0, 3))))
    batch_b = tuple(1 if r.random() < 0.5 else v for v in batch_a)[int(r.integers(0, 2)) :]
    a_shape = (*batch_a, *((k, m) if ta else (m, k)))
    b_shape = (*batch_b, *((n, k) if tb else (k, n)))
    y = make(Op.MATMUL, inp("a", a_shape), inp("b", b_shape), arg=d.MatmulArg(ta, tb))
    a, b = randn(a_shape, seed), randn(b_shape, seed + 1)
    got = run_cpu(cpu, function({"y": y}), {"a": a, "b": b})["y"]
    a2, b2 = (np.swapaxes(a, -1, -2) if ta else a), (np.swapaxes(b, -1, -2) if tb else b)
    ref = np.matmul(a2.astype(np.float64), b2.astype(np.float64))
    assert np.all(np.abs(got - ref) <= matmul_tol(a2, b2, k))


@pytest.mark.parametrize("m,k,n", [(130, 300, 520), (67, 257, 9), (5, 600, 1), (1, 1, 1), (64, 64, 64)])
def test_matmul_across_block_edges(cpu: CpuPath, m: int, k: int, n: int) -> None:
    """Row blocks of 64, k slices of 256 and column blocks of 512 with ragged edges."""
    for ta, tb in [(False, False), (True, True)]:
        a, b = randn((2, m, k), 1), randn((2, k, n), 2)
        a_in = np.swapaxes(a, -1, -2).copy() if ta else a
        b_in = np.swapaxes(b, -1, -2).copy() if tb else b
        y = make(Op.MATMUL, inp("a", a_in.shape), inp("b", b_in.shape), arg=d.MatmulArg(ta, tb))
        got = run_cpu(cpu, function({"y": y}), {"a": a_in, "b": b_in})["y"]
        assert np.all(np.abs(got - a.astype(np.float64) @ b) <= matmul_tol(a, b, k))


def test_matmul_sums_in_k_order_whatever_the_layout(cpu: CpuPath) -> None:
    """Each element is the float32 sum of its products in k order: transposes give the same bytes, and
    they equal a sequential float32 loop."""
    a, b = randn((9, 300), 3), randn((300, 11), 4)
    y = make(Op.MATMUL, inp("a", a.shape), inp("b", b.shape), arg=d.MatmulArg())
    plain = run_cpu(cpu, function({"y": y}), {"a": a, "b": b})
    y_t = make(Op.MATMUL, inp("a", (300, 9)), inp("b", (11, 300)), arg=d.MatmulArg(True, True))
    transposed = run_cpu(cpu, function({"y": y_t}), {"a": a.T.copy(), "b": b.T.copy()})
    assert plain["y"].tobytes() == transposed["y"].tobytes()
    acc = np.zeros((9, 11), np.float32)
    for i in range(300):
        acc = acc + np.outer(a[:, i], b[i]).astype(np.float32)
    assert plain["y"].tobytes() == acc.tobytes()


@pytest.mark.parametrize("seed", range(4))
def test_matmul_with_fused_bias_and_relu(cpu: CpuPath, seed: int) -> None:
    m, k, n = dims(seed, 3, 30)
    x, w, bias = inp("x", (m, k)), inp("w", (k, n)), inp("bias", (n,))
    y = make(Op.RELU, make(Op.ADD, make(Op.MATMUL, x, w, arg=d.MatmulArg()), bias))
    fn = function({"y": y})
    schedule = lower(fn, Level.PROD)
    assert [kernel.kind for kernel in schedule.kernels] == [Kind.MATMUL]
    values = {"x": randn((m, k), seed), "w": randn((k, n), seed + 1), "bias": randn((n,), seed + 2)}
    got = run_cpu(cpu, fn, values, schedule)["y"]
    ref = run(fn, values)["y"]
    assert np.all(np.abs(got - ref) <= matmul_tol(values["x"], values["w"], k) + 1e-7 * np.abs(values["bias"]))


# -- reductions and rows -----------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(8))
def test_reductions_over_random_axes(cpu: CpuPath, seed: int) -> None:
    r = rng(seed)
    shape = dims(seed, int(r.integers(1, 5)), 12)
    axes = tuple(sorted(int(a) for a in r.choice(len(shape), int(r.integers(1, len(shape) + 1)), replace=False)))
    keep = bool(r.integers(2))
    count = math.prod(shape[a] for a in axes)
    x = inp("x", shape)
    outs = {op.value: make(op, x, arg=d.ReduceArg(axes, keep)) for op in (Op.SUM, Op.MEAN, Op.MAX)}
    if count > 1:
        outs["var"] = make(Op.VAR, x, arg=d.ReduceArg(axes, keep, 1))
    outs["neg_mean_of_permuted"] = make(
        Op.NEG,
        make(
            Op.MEAN,
            make(Op.PERMUTE, x, arg=d.PermuteArg(tuple(reversed(range(len(shape)))))),
            arg=d.ReduceArg(axes, False),
        ),
    )
    # Sums run in float64 and are rounded once: 2 ulps of the result, plus cancellation in sums and var.
    check(cpu, outs, {"x": randn(shape, seed)}, ULP2, 1e-6 * math.sqrt(count))


def test_reduce_handles_nan_and_large_counts(cpu: CpuPath) -> None:
    x = randn((3, 5000), 9)
    x[1, 4321] = np.nan
    xs = inp("x", x.shape)
    outs = {op.value: make(op, xs, arg=d.ReduceArg((1,), False)) for op in (Op.SUM, Op.MAX, Op.VAR)}
    check(cpu, outs, {"x": x}, ULP2, 1e-5)


@pytest.mark.parametrize("seed", range(6))
def test_softmax_log_softmax_argmax(cpu: CpuPath, seed: int) -> None:
    shape = dims(seed, 3, 15)
    axis = seed % 3
    x = inp("x", shape)
    outs = {
        "softmax": make(Op.SOFTMAX, x, arg=d.AxisArg(axis)),
        "log_softmax": make(Op.LOG_SOFTMAX, x, arg=d.AxisArg(axis)),
        "argmax": make(Op.ARGMAX, x, arg=d.AxisArg(axis)),
    }
    values = randn(shape, seed, 5.0)
    values.flat[::3] = np.round(values.flat[::3])  # ties: argmax takes the first
    check(cpu, outs, {"x": values}, ULP2, 1e-7)


def test_argmax_takes_first_maximum_and_nan(cpu: CpuPath) -> None:
    x = np.array([[1, 3, 3, 0], [np.nan, 2, np.nan, 5], [-1, -1, -1, -1]], np.float32)
    got = check(cpu, {"i": make(Op.ARGMAX, inp("x", (3, 4)), arg=d.AxisArg(1))}, {"x": x}, 0.0)
    assert got["i"].tolist() == [1, 0, 0]


# -- convolution and pooling -------------------------------------------------------------------------


def conv_case(seed: int) -> tuple[d.ConvArg, tuple[int, ...], tuple[int, ...]]:
    r = rng(seed)
    groups = int(r.choice([1, 2, 3]))
    n, cg, og = (int(v) for v in r.integers(1, 4, 3))
    kh, kw = (int(v) for v in r.integers(1, 4, 2))
    arg = d.ConvArg(
        stride=(int(r.integers(1, 3)), int(r.integers(1, 3))),
        padding=(int(r.integers(0, 2)), int(r.integers(0, 2))),
        dilation=(int(r.integers(1, 3)), int(r.integers(1, 3))),
        groups=groups,
    )
    h = int(r.integers(arg.dilation[0] * (kh - 1) + 1, 12))
    w = int(r.integers(arg.dilation[1] * (kw - 1) + 1, 12))
    return arg, (n, groups * cg, h, w), (groups * og, cg, kh, kw)


@pytest.mark.parametrize("seed", range(10))
def test_conv2d_with_fused_bias_relu_and_both_gradients(cpu: CpuPath, seed: int) -> None:
    arg, x_shape, w_shape = (
        conv_case(seed) if seed else (d.ConvArg((1, 1), (0, 0), (1, 1), 2), (2, 4, 5, 3), (6, 2, 1, 1))
    )
    x, w, b = inp("x", x_shape), inp("w", w_shape), inp("b", (w_shape[0], 1, 1))
    y = make(Op.CONV2D, x, w, arg=arg)
    g = inp("g", y.shape)
    outs = {
        "y": make(Op.RELU, make(Op.ADD, y, b)),
        "dx": make(Op.CONV2D_GRAD_INPUT, g, w, arg=d.ConvGradArg(arg, x_shape)),
        "dw": make(Op.CONV2D_GRAD_WEIGHT, x, g, arg=d.ConvGradArg(arg, w_shape)),
    }
    values = {"x": randn(x_shape, seed), "w": randn(w_shape, seed + 1), "b": randn((w_shape[0], 1, 1), seed + 2)}
    values["g"] = randn(y.shape, seed + 3)
    terms = max(math.prod(w_shape[1:]), y.shape[0] * y.shape[2] * y.shape[3])
    check(cpu, outs, values, 1e-6 * math.sqrt(terms), 1e-5 * math.sqrt(terms))


def pool_case(seed: int) -> tuple[d.PoolArg, tuple[int, ...]]:
    r = rng(seed)
    kernel = (int(r.integers(1, 4)), int(r.integers(1, 4)))
    padding = (int(r.integers(0, kernel[0] // 2 + 1)), int(r.integers(0, kernel[1] // 2 + 1)))
    arg = d.PoolArg(kernel, (int(r.integers(1, 3)), int(r.integers(1, 3))), padding)
    return arg, (
        int(r.integers(1, 3)),
        int(r.integers(1, 4)),
        int(r.integers(kernel[0], 9)),
        int(r.integers(kernel[1], 9)),
    )


@pytest.mark.parametrize("seed", range(10))
def test_pooling_and_gradients(cpu: CpuPath, seed: int) -> None:
    arg, shape = pool_case(seed)
    x = inp("x", shape)
    pooled = make(Op.MAX_POOL2D, x, arg=arg)
    g = inp("g", pooled.shape)
    grad_arg = d.PoolGradArg(arg, shape)
    outs = {
        "max": pooled,
        "avg": make(Op.AVG_POOL2D, x, arg=arg),
        "max_grad": make(Op.MAX_POOL2D_GRAD, x, g, arg=grad_arg),
        "avg_grad": make(Op.AVG_POOL2D_GRAD, g, arg=grad_arg),
    }
    values = np.round(randn(shape, seed, 2.0))  # small integers: ties, where the first maximum wins
    check(cpu, outs, {"x": values, "g": randn(pooled.shape, seed + 1)}, ULP2 * 8, 1e-6)


# -- indexing ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(4))
def test_gather_and_scatter_add(cpu: CpuPath, seed: int) -> None:
    rows, width, n = dims(seed, 3, 8)
    table, idx = inp("t", (rows, width, 2)), inp("i", (n, 2), DType.I32)
    g = inp("g", (n, 2, width, 2))
    outs = {"gathered": make(Op.GATHER, table, idx), "scattered": make(Op.SCATTER_ADD, idx, g, arg=d.RowsArg(rows))}
    indices = rng(seed).integers(0, rows, (n, 2)).astype(np.int32)
    indices[0, 0] = indices[-1, -1]  # a repeated index
    values = {"t": randn((rows, width, 2), seed), "i": indices, "g": randn((n, 2, width, 2), seed + 1)}
    check(cpu, outs, values, ULP2 * 4, 1e-7)


def test_scatter_add_accumulates_in_index_order(cpu: CpuPath) -> None:
    g = np.array([[1e8], [1.0], [-1e8], [1.0]], np.float32)
    y = make(Op.SCATTER_ADD, inp("i", (4,), DType.I32), inp("g", (4, 1)), arg=d.RowsArg(2))
    got = run_cpu(cpu, function({"y": y}), {"i": np.array([1, 1, 1, 0], np.int32), "g": g})["y"]
    assert got.tolist() == [[1.0], [np.float32(np.float32(1e8 + 1.0) - np.float32(1e8))]]


# -- randomness --------------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(1,), (3, 5), (257, 3), (2, 1, 130)])
def test_random_draws_match_the_reference(cpu: CpuPath, shape: tuple[int, ...]) -> None:
    outs = {
        "uniform": random_node(d.Distribution.UNIFORM, shape),
        "keep": random_node(d.Distribution.BERNOULLI, shape, p=0.3),
        "normal": random_node(d.Distribution.NORMAL, shape, site=4),
    }
    fn = function(outs)
    got = run_cpu(cpu, fn, RANDOM_INPUTS)
    ref = run(fn, RANDOM_INPUTS)
    assert got["uniform"].tobytes() == ref["uniform"].astype(np.float32).tobytes()  # Philox words, bit for bit
    np.testing.assert_array_equal(got["keep"], ref["keep"])
    assert_close(got["normal"], ref["normal"], ULP2, 1e-7, "normal")


def test_dropout_fuses_into_its_draw(cpu: CpuPath) -> None:
    shape = (33, 17)
    x = inp("x", shape)
    keep = random_node(d.Distribution.BERNOULLI, shape, p=0.25)
    y = make(Op.WHERE, keep, make(Op.MUL, x, const(1 / 0.75)), const(0.0))
    fn = function({"y": y})
    schedule = lower(fn, Level.PROD)
    assert [k.kind for k in schedule.kernels] == [Kind.RANDOM]
    values = {"x": randn(shape, 5), **RANDOM_INPUTS}
    got = run_cpu(cpu, fn, values, schedule)["y"]
    assert_close(got, run(fn, values)["y"], ULP2, 0.0, "dropout")
    assert 0.6 < np.mean(got != 0) < 0.9


def test_reduce_follows_the_documented_order_in_any_layout(cpu: CpuPath) -> None:
    """Element j to float64 lane j mod 4, lanes combined (l0 + l1) + (l2 + l3), rounded once: replayed in
    numpy; and every reduction gives the same bytes whether its reduced axis is contiguous or strided
    (the strided case runs tiles of neighbouring results)."""
    x = randn((70, 1001), 8, 100.0)
    x[5, 17] = np.nan
    rows, cols = inp("x", x.shape), inp("xt", x.T.shape)
    outs = {}
    for op in (Op.SUM, Op.MEAN, Op.MAX, Op.VAR):
        outs[f"rows_{op.value}"] = make(op, rows, arg=d.ReduceArg((1,), False, 1 if op is Op.VAR else 0))
        outs[f"cols_{op.value}"] = make(op, cols, arg=d.ReduceArg((0,), False, 1 if op is Op.VAR else 0))
    got = run_cpu(cpu, function(outs), {"x": x, "xt": x.T.copy()})
    for op in (Op.SUM, Op.MEAN, Op.MAX, Op.VAR):
        assert got[f"rows_{op.value}"].tobytes() == got[f"cols_{op.value}"].tobytes(), op
    lanes = np.zeros((70, 4))
    for j in range(x.shape[1]):
        lanes[:, j % 4] += x[:, j].astype(np.float64)
    expected = ((lanes[:, 0] + lanes[:, 1]) + (lanes[:, 2] + lanes[:, 3])).astype(np.float32)
    assert got["rows_sum"].tobytes() == expected.tobytes()
    assert np.isnan(got["rows_max"][5]) and np.isnan(got["rows_var"][5])


SCRATCH_EXPORTS = {
    "sc_cpu_tape",
    "sc_cpu_matmul",
    "sc_cpu_conv2d",
    "sc_cpu_conv2d_grad_input",
    "sc_cpu_conv2d_grad_weight",
}


def test_work_ranges_split_across_calls_give_the_same_bytes(cpu: CpuPath) -> None:
    """Every export takes a range of independent work items: running each kernel's range in two calls
    (as two workers would) reproduces the one-call step byte for byte."""
    x, w, table = inp("x", (70, 4, 9, 7)), inp("w", (6, 2, 3, 3)), inp("t", (40, 8))  # 70 rows: 2 matmul items
    conv = make(Op.RELU, make(Op.CONV2D, x, w, arg=d.ConvArg((1, 2), (1, 1), (1, 1), 2)))
    pooled = make(Op.MAX_POOL2D, conv, arg=d.PoolArg((2, 2), (2, 1), (1, 0)))
    flat = make(Op.RESHAPE, pooled, arg=d.ShapeArg((70, math.prod(pooled.shape[1:]))))
    idx = inp("i", (5,), DType.I32)
    logits = make(Op.MATMUL, flat, inp("v", (flat.shape[1], 70)), arg=d.MatmulArg())
    outs = {
        "soft": make(Op.LOG_SOFTMAX, logits, arg=d.AxisArg(1)),
        "gathered": make(Op.GATHER, table, idx),
        "scattered": make(Op.SCATTER_ADD, idx, make(Op.GATHER, table, idx), arg=d.RowsArg(40)),
        "mean": make(Op.MEAN, conv, arg=d.ReduceArg((0, 2), False)),
    }
    fn = function(outs)
    compiled = compile_schedule(cpu, lowered(fn, Level.PROD))
    values = {"x": randn((70, 4, 9, 7), 1), "w": randn((6, 2, 3, 3), 2), "t": randn((40, 8), 3)}
    values.update(v=randn((flat.shape[1], 70), 4), i=np.array([3, 39, 3, 0, 17], np.int32))
    for name, value in values.items():
        compiled.write(name, value.astype(np.int32 if name == "i" else np.float32).tobytes())
    compiled.run()
    whole = {name: compiled.read(name) for name in outs}
    for call in compiled.calls:
        a, scratch, start, end = call.args
        for lo, hi in ((start, (start + end) // 2), ((start + end) // 2, end)):
            args = (a, scratch, lo, hi) if call.export in SCRATCH_EXPORTS else (a, lo, hi)
            cpu.instance.call(call.export, *args)
    assert {name: compiled.read(name) for name in outs} == whole
    assert {c.export for c in compiled.calls} >= {"sc_cpu_conv2d", "sc_cpu_pool2d", "sc_cpu_matmul", "sc_cpu_rows"}


def test_compiled_schedule_rejects_unknown_names_and_sizes(cpu: CpuPath) -> None:
    compiled = compile_schedule(cpu, lowered(function({"y": make(Op.EXP, inp("x", (3,)))}), Level.PROD))
    with pytest.raises(KeyError, match="no input or output 'z'"):
        compiled.write("z", b"")
    with pytest.raises(ValueError, match="holds 12 bytes, got 8"):
        compiled.write("x", b"\0" * 8)
