"""Every op's VJP rule against central finite differences in float64, on random shapes and arguments."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import BroadcastableShapes, array_shapes, mutually_broadcastable_shapes

from scellis.autodiff import VJP, AutodiffError, grad
from scellis.autodiff.rules import Unsupported
from scellis.ir import Function, verify
from scellis.ops import DType, Node, Op, make, nf4
from scellis.ops import defs as d
from scellis.ops.build import cast, mul, total
from scellis.ops.node import RULES, input_node
from scellis.runtime.reference import oracle as reference

EPS = 1e-6
RTOL, ATOL = 1e-5, 1e-6
SETTINGS = settings(max_examples=20, deadline=None, derandomize=True, database=None)
SHAPES = array_shapes(min_dims=0, max_dims=4, min_side=1, max_side=4)

Build = Callable[[dict[str, Node]], Node]
COVERED: set[Op] = set()  # ops whose gradient (or lack of one) some test here checks


def covers(*ops: Op) -> Callable[[Callable[..., None]], Callable[..., None]]:
    COVERED.update(ops)
    return lambda test: test


# -- the check --------------------------------------------------------------------------------------


def ir_dtype(value: np.ndarray) -> DType:
    return {"f": DType.F32, "i": DType.I32, "u": DType.U32, "b": DType.BOOL}[value.dtype.kind]


def loss_function(values: dict[str, np.ndarray], build: Build) -> Function:
    """loss = sum(op(inputs) * r), with r a DATA input of the op's output shape."""
    nodes = {
        name: input_node(name, d.Role.PARAM if v.dtype.kind == "f" else d.Role.DATA, ir_dtype(v), v.shape)
        for name, v in values.items()
    }
    y = build(nodes)
    assert y.dtype is DType.F32
    r = input_node("r", d.Role.DATA, DType.F32, y.shape)
    fn = Function("f", (*nodes.values(), r), (("loss", total(mul(y, r))),))
    verify(fn)
    return fn


def analytic_grads(
    values: dict[str, np.ndarray], build: Build, wrt: Sequence[str], seed: int
) -> tuple[dict[str, np.ndarray], Function, dict[str, np.ndarray]]:
    """grad() of the loss function run on `values` and a random r: (gradients, loss function, inputs)."""
    fn = loss_function(values, build)
    gfn = grad(fn, "loss", wrt)
    verify(gfn)
    assert [name for name, _ in gfn.outputs] == ["loss", *(f"grad/{name}" for name in wrt)]
    feed = {**values, "r": np.random.default_rng(seed).standard_normal(fn.input("r").shape)}
    out = reference.run(gfn, feed)
    return {name: out[f"grad/{name}"] for name in wrt}, fn, feed


def check_grad(values: dict[str, np.ndarray], build: Build, wrt: Sequence[str], seed: int) -> None:
    """Each gradient in `wrt` against central differences of the loss, element by element."""
    grads, fn, feed = analytic_grads(values, build, wrt, seed)

    def loss(name: str, x: np.ndarray) -> float:
        return float(reference.run(fn, {**feed, name: x})["loss"])

    for name in wrt:
        x, g = feed[name], grads[name]
        assert g.shape == x.shape and g.dtype == np.float64
        numeric = np.zeros_like(x)
        for i in np.ndindex(x.shape):
            step = np.zeros_like(x)
            step[i] = EPS
            numeric[i] = (loss(name, x + step) - loss(name, x - step)) / (2 * EPS)
        scale = max(1.0, float(np.max(np.abs(numeric), initial=0.0)))
        np.testing.assert_allclose(g, numeric, rtol=RTOL, atol=ATOL * scale, err_msg=f"gradient of {name}")


def check_zero_grad(values: dict[str, np.ndarray], build: Build, wrt: Sequence[str]) -> None:
    grads, _, _ = analytic_grads(values, build, wrt, 0)
    for name in wrt:
        assert grads[name].shape == values[name].shape
        assert not np.any(grads[name]), f"gradient of {name} should be zero, got {grads[name]}"


# -- input values away from non-differentiable points -----------------------------------------------


VALUES: dict[str, Callable[[tuple[int, ...], np.random.Generator], np.ndarray]] = {
    "any": lambda shape, rng: rng.standard_normal(shape),
    "wide": lambda shape, rng: rng.uniform(-3.0, 3.0, shape),
    # log, sqrt, rsqrt and pow's base need positive inputs
    "positive": lambda shape, rng: rng.uniform(0.5, 2.0, shape),
    # relu, abs and leaky_relu bend at 0; divisors
    "nonzero": lambda shape, rng: rng.choice([-1.0, 1.0], shape) * rng.uniform(0.1, 2.0, shape),
    # max and max pooling: no ties, every two values at least 0.08 apart
    "distinct": lambda shape, rng: (
        rng.permutation(np.arange(np.prod(shape)) * 0.1 - 1).reshape(shape) + rng.uniform(0.0, 0.02, shape)
    ),
    # maximum/minimum: an "odd" and an "even" operand are at least 0.06 apart after any broadcast
    "odd": lambda shape, rng: 0.2 * rng.integers(-5, 5, shape) + 0.1 + rng.uniform(-0.02, 0.02, shape),
    "even": lambda shape, rng: 0.2 * rng.integers(-5, 5, shape) + rng.uniform(-0.02, 0.02, shape),
}


def values_of(kind: str, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    return np.asarray(VALUES[kind](shape, rng), dtype=np.float64)


def seeded(data: st.DataObject) -> tuple[np.random.Generator, int]:
    seed = data.draw(st.integers(0, 2**32 - 1), label="seed")
    return np.random.default_rng(seed), seed


def op_of(op: Op, arg: object = None) -> Build:
    """`op` applied to the inputs in the order their values were given."""
    return lambda n: make(op, *n.values(), arg=arg)


# -- elementwise ------------------------------------------------------------------------------------

UNARY = [
    (Op.NEG, st.just(d.NoArg()), "any"),
    (Op.EXP, st.just(d.NoArg()), "wide"),
    (Op.EXPM1, st.just(d.NoArg()), "wide"),
    (Op.LOG, st.just(d.NoArg()), "positive"),
    (Op.SQRT, st.just(d.NoArg()), "positive"),
    (Op.RSQRT, st.just(d.NoArg()), "positive"),
    (Op.ABS, st.just(d.NoArg()), "nonzero"),
    (Op.RELU, st.just(d.NoArg()), "nonzero"),
    (Op.LEAKY_RELU, st.builds(d.LeakyReluArg, st.floats(0.01, 0.9)), "nonzero"),
    (Op.GELU, st.sampled_from([d.GeluArg("tanh"), d.GeluArg("none")]), "wide"),
    (Op.TANH, st.just(d.NoArg()), "wide"),
    (Op.SIGMOID, st.just(d.NoArg()), "wide"),
    (Op.ERF, st.just(d.NoArg()), "wide"),
    (Op.COS, st.just(d.NoArg()), "wide"),
    (Op.SIN, st.just(d.NoArg()), "wide"),
]


@covers(*(op for op, _, _ in UNARY))
@pytest.mark.parametrize(("op", "args", "kind"), UNARY, ids=[op.value for op, _, _ in UNARY])
@SETTINGS
@given(data=st.data())
def test_unary(op: Op, args: st.SearchStrategy, kind: str, data: st.DataObject) -> None:
    rng, seed = seeded(data)
    shape = data.draw(SHAPES, label="shape")
    arg = data.draw(args, label="arg")
    check_grad({"x": values_of(kind, shape, rng)}, op_of(op, arg), ["x"], seed)


def test_both_gelu_forms_and_leaky_relu_on_both_sides_of_zero() -> None:
    x = np.array([-2.5, -0.7, -0.1, 0.1, 0.7, 2.5])
    for arg in (d.GeluArg("tanh"), d.GeluArg("none")):
        check_grad({"x": x}, op_of(Op.GELU, arg), ["x"], 1)
    fn = loss_function({"x": x}, op_of(Op.LEAKY_RELU, d.LeakyReluArg(0.25)))
    out = reference.run(grad(fn, "loss", ["x"]), {"x": x, "r": np.full(6, 2.0)})
    np.testing.assert_array_equal(out["grad/x"], [0.5, 0.5, 0.5, 2.0, 2.0, 2.0])


BINARY = [
    (Op.ADD, "any", "any"),
    (Op.SUB, "any", "any"),
    (Op.MUL, "any", "any"),
    (Op.DIV, "any", "nonzero"),
    (Op.POW, "positive", "wide"),
    (Op.MAXIMUM, "odd", "even"),
    (Op.MINIMUM, "even", "odd"),
]


@covers(*(op for op, _, _ in BINARY))
@pytest.mark.parametrize(("op", "kind_a", "kind_b"), BINARY, ids=[op.value for op, _, _ in BINARY])
@SETTINGS
@given(data=st.data(), shapes=mutually_broadcastable_shapes(num_shapes=2, max_dims=4, max_side=4))
def test_binary_with_broadcasting(
    op: Op, kind_a: str, kind_b: str, data: st.DataObject, shapes: BroadcastableShapes
) -> None:
    rng, seed = seeded(data)
    sa, sb = shapes.input_shapes
    values = {"a": values_of(kind_a, sa, rng), "b": values_of(kind_b, sb, rng)}
    check_grad(values, op_of(op), ["a", "b"], seed)


def test_maximum_and_minimum_send_each_element_to_the_winner() -> None:
    a, b = np.array([1.0, -2.0, 3.0]), np.array([0.5, 4.0, -1.0])
    for op, a_wins in ((Op.MAXIMUM, a > b), (Op.MINIMUM, a < b)):
        fn = loss_function({"a": a, "b": b}, op_of(op))
        out = reference.run(grad(fn, "loss", ["a", "b"]), {"a": a, "b": b, "r": np.ones(3)})
        np.testing.assert_array_equal(out["grad/a"], a_wins.astype(float))
        np.testing.assert_array_equal(out["grad/b"], (~a_wins).astype(float))


def test_an_input_used_twice_gets_both_contributions() -> None:
    x = np.array([[0.5, -1.5], [2.0, 0.25]])
    check_grad({"x": x}, lambda n: make(Op.MUL, make(Op.SIN, n["x"]), n["x"]), ["x"], 3)


@covers(Op.WHERE)
@SETTINGS
@given(data=st.data(), shapes=mutually_broadcastable_shapes(num_shapes=3, max_dims=4, max_side=4))
def test_where_differentiates_both_branches(data: st.DataObject, shapes: BroadcastableShapes) -> None:
    rng, seed = seeded(data)
    sc, sa, sb = shapes.input_shapes
    values = {"c": rng.random(sc) < 0.5, "a": rng.standard_normal(sa), "b": rng.standard_normal(sb)}
    check_grad(values, op_of(Op.WHERE), ["a", "b"], seed)


# -- reductions and normalisation -------------------------------------------------------------------


@covers(*d.REDUCE)
@pytest.mark.parametrize("op", sorted(d.REDUCE, key=str), ids=lambda op: op.value)
@SETTINGS
@given(data=st.data(), shape=array_shapes(min_dims=1, max_dims=4, max_side=4))
def test_reductions(op: Op, data: st.DataObject, shape: tuple[int, ...]) -> None:
    rng, seed = seeded(data)
    axes = tuple(sorted(data.draw(st.sets(st.integers(0, len(shape) - 1)), label="axes")))
    count = int(np.prod([shape[a] for a in axes]))
    correction = data.draw(st.integers(0, min(1, count - 1)), label="correction") if op is Op.VAR else 0
    arg = d.ReduceArg(axes, data.draw(st.booleans(), label="keepdims"), correction)
    x = values_of("distinct" if op is Op.MAX else "any", shape, rng)
    check_grad({"x": x}, op_of(op, arg), ["x"], seed)


def test_max_shares_the_gradient_between_tied_maxima() -> None:
    x = np.array([[1.0, 3.0, 3.0], [2.0, 0.0, -1.0]])
    fn = loss_function({"x": x}, op_of(Op.MAX, d.ReduceArg((1,), False)))
    out = reference.run(grad(fn, "loss", ["x"]), {"x": x, "r": np.array([2.0, 5.0])})
    np.testing.assert_array_equal(out["grad/x"], [[0.0, 1.0, 1.0], [5.0, 0.0, 0.0]])


@covers(Op.SOFTMAX, Op.LOG_SOFTMAX)
@pytest.mark.parametrize("op", [Op.SOFTMAX, Op.LOG_SOFTMAX], ids=lambda op: op.value)
@SETTINGS
@given(data=st.data(), shape=array_shapes(min_dims=1, max_dims=4, max_side=4))
def test_softmax(op: Op, data: st.DataObject, shape: tuple[int, ...]) -> None:
    rng, seed = seeded(data)
    arg = d.AxisArg(data.draw(st.integers(0, len(shape) - 1), label="axis"))
    check_grad({"x": values_of("wide", shape, rng)}, op_of(op, arg), ["x"], seed)


# -- movement ---------------------------------------------------------------------------------------


def squeezed_into(data: st.DataObject, target: tuple[int, ...]) -> tuple[int, ...]:
    """A shape that broadcasts to `target`: a suffix of it with some dimensions set to 1."""
    ndim = data.draw(st.integers(0, len(target)), label="ndim")
    return tuple(1 if data.draw(st.booleans()) else n for n in target[len(target) - ndim :])


def regrouped(data: st.DataObject, shape: tuple[int, ...]) -> tuple[int, ...]:
    """Another shape of the same size: its prime factors shuffled, merged, and some 1s put in."""
    factors = [p for n in shape for p in ((2, 2) if n == 4 else (n,)) if p > 1]
    out: list[int] = []
    shuffled: list[int] = data.draw(st.permutations(factors), label="factors")
    for f in shuffled:
        merge: bool = data.draw(st.booleans())
        if out and merge:
            out[-1] *= f
        else:
            out.append(f)
    for _ in range(data.draw(st.integers(0, 2), label="ones")):
        out.insert(data.draw(st.integers(0, len(out))), 1)
    return tuple(out)


def slices_of(data: st.DataObject, shape: tuple[int, ...]) -> tuple[tuple[int, ...], ...]:
    starts = tuple(data.draw(st.integers(0, n - 1)) for n in shape)
    stops = tuple(data.draw(st.integers(a + 1, n)) for a, n in zip(starts, shape, strict=True))
    steps = tuple(data.draw(st.integers(1, 3)) for _ in shape)
    return starts, stops, steps


@covers(Op.EXPAND)
@SETTINGS
@given(data=st.data(), target=SHAPES)
def test_expand(data: st.DataObject, target: tuple[int, ...]) -> None:
    rng, seed = seeded(data)
    shape = squeezed_into(data, target)
    check_grad({"x": rng.standard_normal(shape)}, op_of(Op.EXPAND, d.ShapeArg(target)), ["x"], seed)


@covers(Op.RESHAPE)
@SETTINGS
@given(data=st.data(), shape=SHAPES)
def test_reshape(data: st.DataObject, shape: tuple[int, ...]) -> None:
    rng, seed = seeded(data)
    arg = d.ShapeArg(regrouped(data, shape))
    check_grad({"x": rng.standard_normal(shape)}, op_of(Op.RESHAPE, arg), ["x"], seed)


@covers(Op.PERMUTE)
@SETTINGS
@given(data=st.data(), shape=SHAPES)
def test_permute(data: st.DataObject, shape: tuple[int, ...]) -> None:
    rng, seed = seeded(data)
    arg = d.PermuteArg(tuple(data.draw(st.permutations(range(len(shape))), label="perm")))
    check_grad({"x": rng.standard_normal(shape)}, op_of(Op.PERMUTE, arg), ["x"], seed)


@covers(Op.SLICE)
@SETTINGS
@given(data=st.data(), shape=SHAPES)
def test_slice(data: st.DataObject, shape: tuple[int, ...]) -> None:
    rng, seed = seeded(data)
    arg = d.SliceArg(*slices_of(data, shape))
    check_grad({"x": rng.standard_normal(shape)}, op_of(Op.SLICE, arg), ["x"], seed)


@covers(Op.SLICE_GRAD)
@SETTINGS
@given(data=st.data(), shape=SHAPES)
def test_slice_grad(data: st.DataObject, shape: tuple[int, ...]) -> None:
    rng, seed = seeded(data)
    starts, stops, steps = slices_of(data, shape)
    sliced = np.empty(shape)[tuple(map(slice, starts, stops, steps))].shape
    arg = d.SliceGradArg(shape, starts, stops, steps)
    check_grad({"g": rng.standard_normal(sliced)}, op_of(Op.SLICE_GRAD, arg), ["g"], seed)


@covers(Op.CONCAT)
@SETTINGS
@given(data=st.data(), base=array_shapes(min_dims=1, max_dims=3, max_side=3))
def test_concat_with_one_input_not_requiring_grad(data: st.DataObject, base: tuple[int, ...]) -> None:
    rng, seed = seeded(data)
    axis = data.draw(st.integers(0, len(base) - 1), label="axis")
    count = data.draw(st.integers(2, 4), label="count")
    sizes = [data.draw(st.integers(1, 3)) for _ in range(count)]
    values = {f"x{i}": rng.standard_normal(base[:axis] + (n,) + base[axis + 1 :]) for i, n in enumerate(sizes)}
    frozen = data.draw(st.integers(0, count - 1), label="frozen")
    check_grad(values, op_of(Op.CONCAT, d.AxisArg(axis)), [k for k in values if k != f"x{frozen}"], seed)


@covers(Op.CAST)
@SETTINGS
@given(data=st.data(), shape=SHAPES)
def test_cast_float_to_float_is_the_identity(data: st.DataObject, shape: tuple[int, ...]) -> None:
    rng, seed = seeded(data)
    check_grad({"x": rng.standard_normal(shape)}, op_of(Op.CAST, d.CastArg(DType.F32)), ["x"], seed)


# -- matmul, convolution, pooling -------------------------------------------------------------------


@covers(Op.MATMUL)
@SETTINGS
@given(data=st.data(), batch=mutually_broadcastable_shapes(num_shapes=2, max_dims=2, max_side=3))
def test_matmul_with_transposes_and_broadcast_batches(data: st.DataObject, batch: BroadcastableShapes) -> None:
    rng, seed = seeded(data)
    m, k, n = (data.draw(st.integers(1, 4)) for _ in range(3))
    ta, tb = data.draw(st.booleans(), label="transpose_a"), data.draw(st.booleans(), label="transpose_b")
    ba, bb = batch.input_shapes
    values = {
        "a": rng.standard_normal(ba + ((k, m) if ta else (m, k))),
        "b": rng.standard_normal(bb + ((n, k) if tb else (k, n))),
    }
    check_grad(values, op_of(Op.MATMUL, d.MatmulArg(ta, tb)), ["a", "b"], seed)


def conv_case(data: st.DataObject) -> tuple[d.ConvArg, tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """(argument, input shape, weight shape, output shape) of a small valid convolution."""
    groups, per_in, per_out, n = (data.draw(st.integers(1, 2)) for _ in range(4))
    kernel = (data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3)))
    stride = (data.draw(st.integers(1, 2)), data.draw(st.integers(1, 2)))
    padding = (data.draw(st.integers(0, 1)), data.draw(st.integers(0, 1)))
    dilation = (data.draw(st.integers(1, 2)), data.draw(st.integers(1, 2)))
    size = tuple(
        max(1, dl * (k - 1) + 1 - 2 * p) + data.draw(st.integers(0, 2))
        for k, p, dl in zip(kernel, padding, dilation, strict=True)
    )
    x = (n, groups * per_in, *size)
    w = (groups * per_out, per_in, *kernel)
    out = tuple(
        (s + 2 * p - dl * (k - 1) - 1) // st_ + 1
        for s, k, st_, p, dl in zip(size, kernel, stride, padding, dilation, strict=True)
    )
    return d.ConvArg(stride, padding, dilation, groups), x, w, (n, groups * per_out, *out)


@covers(Op.CONV2D)
@SETTINGS
@given(data=st.data())
def test_conv2d(data: st.DataObject) -> None:
    rng, seed = seeded(data)
    arg, x, w, _ = conv_case(data)
    values = {"x": rng.standard_normal(x), "w": rng.standard_normal(w)}
    check_grad(values, op_of(Op.CONV2D, arg), ["x", "w"], seed)


@covers(Op.CONV2D_GRAD_INPUT)
@SETTINGS
@given(data=st.data())
def test_conv2d_grad_input(data: st.DataObject) -> None:
    rng, seed = seeded(data)
    arg, x, w, out = conv_case(data)
    values = {"g": rng.standard_normal(out), "w": rng.standard_normal(w)}
    check_grad(values, op_of(Op.CONV2D_GRAD_INPUT, d.ConvGradArg(arg, x)), ["g", "w"], seed)


@covers(Op.CONV2D_GRAD_WEIGHT)
@SETTINGS
@given(data=st.data())
def test_conv2d_grad_weight(data: st.DataObject) -> None:
    rng, seed = seeded(data)
    arg, x, w, out = conv_case(data)
    values = {"x": rng.standard_normal(x), "g": rng.standard_normal(out)}
    check_grad(values, op_of(Op.CONV2D_GRAD_WEIGHT, d.ConvGradArg(arg, w)), ["x", "g"], seed)


def pool_case(data: st.DataObject) -> tuple[d.PoolArg, tuple[int, ...], tuple[int, ...]]:
    """(argument, input shape, output shape) of a small valid pooling."""
    kernel = (data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3)))
    stride = (data.draw(st.integers(1, 3)), data.draw(st.integers(1, 3)))
    padding = (data.draw(st.integers(0, kernel[0] // 2)), data.draw(st.integers(0, kernel[1] // 2)))
    size = tuple(max(1, k - 2 * p) + data.draw(st.integers(0, 3)) for k, p in zip(kernel, padding, strict=True))
    x = (data.draw(st.integers(1, 2)), data.draw(st.integers(1, 2)), *size)
    out = tuple((s + 2 * p - k) // t + 1 for s, k, t, p in zip(size, kernel, stride, padding, strict=True))
    return d.PoolArg(kernel, stride, padding), x, (*x[:2], *out)


@covers(Op.MAX_POOL2D, Op.AVG_POOL2D)
@pytest.mark.parametrize("op", [Op.MAX_POOL2D, Op.AVG_POOL2D], ids=lambda op: op.value)
@SETTINGS
@given(data=st.data())
def test_pooling(op: Op, data: st.DataObject) -> None:
    rng, seed = seeded(data)
    arg, x, _ = pool_case(data)
    check_grad({"x": values_of("distinct", x, rng)}, op_of(op, arg), ["x"], seed)


@covers(Op.AVG_POOL2D_GRAD)
@SETTINGS
@given(data=st.data())
def test_avg_pool2d_grad(data: st.DataObject) -> None:
    rng, seed = seeded(data)
    arg, x, out = pool_case(data)
    check_grad({"g": rng.standard_normal(out)}, op_of(Op.AVG_POOL2D_GRAD, d.PoolGradArg(arg, x)), ["g"], seed)


@covers(Op.MAX_POOL2D_GRAD)
def test_max_pool2d_grad_has_no_gradient() -> None:
    arg = d.PoolGradArg(d.PoolArg((2, 2), (2, 2), (0, 0)), (1, 1, 4, 4))
    values = {"x": np.arange(16.0).reshape(1, 1, 4, 4), "g": np.ones((1, 1, 2, 2))}
    fn = loss_function(values, op_of(Op.MAX_POOL2D_GRAD, arg))
    with pytest.raises(AutodiffError, match=r"no gradient through max_pool2d_grad: second-order"):
        grad(fn, "loss", ["g"])


def test_second_order_through_max_pooling_raises() -> None:
    x = input_node("x", d.Role.PARAM, DType.F32, (1, 1, 4, 4))
    pooled = make(Op.MAX_POOL2D, x, arg=d.PoolArg((2, 2), (2, 2), (0, 0)))
    first = grad(Function("f", (x,), (("loss", total(pooled)),)), "loss", ["x"])
    again = Function("g", (x,), (("loss", total(mul(first.output("grad/x"), x))),))
    with pytest.raises(AutodiffError, match="max_pool2d_grad"):
        grad(again, "loss", ["x"])


# -- solve and sort ---------------------------------------------------------------------------------


def well_conditioned(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    return rng.standard_normal(shape) + shape[-1] * np.eye(shape[-1])


@covers(Op.SOLVE)
@SETTINGS
@given(data=st.data(), batch=array_shapes(min_dims=0, max_dims=2, max_side=3))
def test_solve_with_respect_to_a_and_b(data: st.DataObject, batch: tuple[int, ...]) -> None:
    rng, seed = seeded(data)
    n, k = data.draw(st.integers(1, 4), label="n"), data.draw(st.integers(1, 3), label="k")
    values = {"a": well_conditioned(rng, (*batch, n, n)), "b": rng.standard_normal((*batch, n, k))}
    check_grad(values, op_of(Op.SOLVE), ["a", "b"], seed)


def test_solve_gradients_are_the_adjoint_solve_and_its_outer_product() -> None:
    """gb = a^-T g and ga = -gb x^T, against numpy, one gradient asked at a time too."""
    rng = np.random.default_rng(4)
    values = {"a": well_conditioned(rng, (3, 5, 5)), "b": rng.standard_normal((3, 5, 2))}
    grads, _, feed = analytic_grads(values, op_of(Op.SOLVE), ["a", "b"], seed=4)
    x = np.linalg.solve(values["a"], values["b"])
    gb = np.linalg.solve(np.swapaxes(values["a"], -1, -2), feed["r"])
    np.testing.assert_allclose(grads["b"], gb, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(grads["a"], -gb @ np.swapaxes(x, -1, -2), rtol=1e-10, atol=1e-12)
    for name in ("a", "b"):
        alone, _, _ = analytic_grads(values, op_of(Op.SOLVE), [name], seed=4)
        np.testing.assert_array_equal(alone[name], grads[name])


@covers(Op.SORT)
@SETTINGS
@given(data=st.data(), shape=array_shapes(min_dims=1, max_dims=3, max_side=4))
def test_sort_with_respect_to_x(data: st.DataObject, shape: tuple[int, ...]) -> None:
    rng, seed = seeded(data)
    axis = data.draw(st.integers(0, len(shape) - 1), label="axis")
    check_grad({"x": values_of("distinct", shape, rng)}, op_of(Op.SORT, d.AxisArg(axis)), ["x"], seed)


@covers(Op.SORT_GRAD)
def test_sort_grad_gives_x_no_gradient_and_has_none_for_g() -> None:
    """Ranks are piecewise constant in x; the gradient for g (g arranged in x's sorted order) is refused."""
    rng = np.random.default_rng(2)
    values = {"x": values_of("distinct", (3, 4), rng), "g": rng.standard_normal((3, 4))}
    check_zero_grad(values, op_of(Op.SORT_GRAD, d.AxisArg(1)), ["x"])
    fn = loss_function(values, op_of(Op.SORT_GRAD, d.AxisArg(1)))
    with pytest.raises(AutodiffError, match=r"no gradient through sort_grad: second-order gradients of sort"):
        grad(fn, "loss", ["g"])


def test_second_order_through_sort() -> None:
    """d/dx of sum(grad * x), grad = d sum(sort(x) * r)/dx = r routed back (constant in x): that grad itself.
    Where the cotangent reaching sort_grad depends on x (sum(sort(x)^2)), second order is refused."""
    x = input_node("x", d.Role.PARAM, DType.F32, (2, 5))
    r = input_node("r", d.Role.DATA, DType.F32, (2, 5))
    first = grad(Function("f", (x, r), (("loss", total(mul(make(Op.SORT, x, arg=d.AxisArg(1)), r))),)), "loss", ["x"])
    again = grad(Function("g", (x, r), (("loss", total(mul(first.output("grad/x"), x))),)), "loss", ["x"])
    rng = np.random.default_rng(3)
    feed = {"x": values_of("distinct", (2, 5), rng), "r": rng.standard_normal((2, 5))}
    out, routed = reference.run(again, feed), reference.run(first, feed)["grad/x"]
    np.testing.assert_allclose(out["grad/x"], routed, rtol=1e-12)
    squared = make(Op.SORT, x, arg=d.AxisArg(1))
    first = grad(Function("h", (x,), (("loss", total(mul(squared, squared))),)), "loss", ["x"])
    with pytest.raises(AutodiffError, match="sort_grad"):
        grad(Function("k", (x,), (("loss", total(first.output("grad/x"))),)), "loss", ["x"])


# -- indexing ---------------------------------------------------------------------------------------


def indexing_case(data: st.DataObject, rng: np.random.Generator) -> tuple[int, tuple[int, ...], np.ndarray]:
    """(rows, trailing shape, int32 indices), indices repeating whenever there are more than rows."""
    rows = data.draw(st.integers(1, 4), label="rows")
    rest = data.draw(array_shapes(min_dims=0, max_dims=2, max_side=3), label="rest")
    index_shape = data.draw(array_shapes(min_dims=0, max_dims=2, max_side=4), label="index_shape")
    return rows, rest, rng.integers(0, rows, index_shape).astype(np.int32)


@covers(Op.GATHER)
@SETTINGS
@given(data=st.data())
def test_gather_with_respect_to_the_table(data: st.DataObject) -> None:
    rng, seed = seeded(data)
    rows, rest, indices = indexing_case(data, rng)
    values = {"table": rng.standard_normal((rows, *rest)), "indices": indices}
    check_grad(values, op_of(Op.GATHER), ["table"], seed)


@covers(Op.SCATTER_ADD)
@SETTINGS
@given(data=st.data())
def test_scatter_add_with_respect_to_its_values(data: st.DataObject) -> None:
    rng, seed = seeded(data)
    rows, rest, indices = indexing_case(data, rng)
    values = {"indices": indices, "g": rng.standard_normal(indices.shape + rest)}
    check_grad(values, op_of(Op.SCATTER_ADD, d.RowsArg(rows)), ["g"], seed)


# -- per-example movement (augmentation) ------------------------------------------------------------


@covers(Op.SHIFT2D)
@SETTINGS
@given(data=st.data(), shape=array_shapes(min_dims=3, max_dims=4, max_side=4))
def test_shift2d_with_respect_to_x(data: st.DataObject, shape: tuple[int, ...]) -> None:
    rng, seed = seeded(data)
    shift = rng.integers(-5, 6, (shape[0], 2)).astype(np.int32)  # some past the edge: all zeros
    check_grad({"x": rng.standard_normal(shape), "shift": shift}, op_of(Op.SHIFT2D), ["x"], seed)


@covers(Op.FLIP_LAST)
@SETTINGS
@given(data=st.data(), shape=array_shapes(min_dims=2, max_dims=4, max_side=4))
def test_flip_last_with_respect_to_x(data: st.DataObject, shape: tuple[int, ...]) -> None:
    rng, seed = seeded(data)
    values = {"x": rng.standard_normal(shape), "flip": rng.random(shape[0]) < 0.5}
    check_grad(values, op_of(Op.FLIP_LAST), ["x"], seed)


def test_shift2d_and_flip_last_give_no_gradient_to_their_control_input() -> None:
    x = input_node("x", d.Role.PARAM, DType.F32, (2, 3, 4))
    shift = input_node("s", d.Role.DATA, DType.I32, (2, 2))
    flip = input_node("f", d.Role.DATA, DType.BOOL, (2,))
    for node in (make(Op.SHIFT2D, x, shift), make(Op.FLIP_LAST, x, flip)):
        g = input_node("g", d.Role.DATA, DType.F32, node.shape)
        dx, dcontrol = VJP[node.op](node, g, (True, True))
        assert dx is not None and dx.op is node.op and dcontrol is None


# -- ops without a gradient -------------------------------------------------------------------------

X = np.array([[0.3, -1.7, 2.2], [1.4, -0.6, 0.9]])
Y = np.array([[0.5, -1.7, 1.0], [1.4, 0.2, -3.0]])
NO_GRADIENT: list[tuple[str, tuple[Op, ...], dict[str, np.ndarray], Build]] = [
    ("sign", (Op.SIGN,), {"x": X}, lambda n: make(Op.SIGN, n["x"])),
    ("floor", (Op.FLOOR,), {"x": X}, lambda n: make(Op.FLOOR, n["x"])),
    ("is_finite", (Op.IS_FINITE,), {"x": X}, lambda n: cast(make(Op.IS_FINITE, n["x"]), DType.F32)),
    ("less", (Op.LESS,), {"x": X, "y": Y}, lambda n: cast(make(Op.LESS, n["x"], n["y"]), DType.F32)),
    ("equal", (Op.EQUAL,), {"x": X, "y": Y}, lambda n: cast(make(Op.EQUAL, n["x"], n["y"]), DType.F32)),
    ("argmax", (Op.ARGMAX,), {"x": X}, lambda n: cast(make(Op.ARGMAX, n["x"], arg=d.AxisArg(1)), DType.F32)),
    (
        "one_hot",
        (Op.ONE_HOT,),
        {"x": np.abs(X) + 0.5},
        lambda n: make(Op.ONE_HOT, cast(n["x"], DType.I32), arg=d.ClassesArg(4)),
    ),
    ("cast_from_int", (), {"x": X}, lambda n: cast(cast(n["x"], DType.I32), DType.F32)),
    (
        "random",
        (Op.RANDOM,),
        {"key": np.array([7.0, 11.0]), "position": np.array(3.0)},
        lambda n: make(
            Op.RANDOM,
            cast(n["key"], DType.U32),
            cast(n["position"], DType.U32),
            arg=d.RandomArg(d.Distribution.UNIFORM, "dropout", 0, (2, 3)),
        ),
    ),
]
COVERED.update(op for _, ops, _, _ in NO_GRADIENT for op in ops)


@pytest.mark.parametrize(("values", "build"), [c[2:] for c in NO_GRADIENT], ids=[c[0] for c in NO_GRADIENT])
def test_ops_without_a_gradient_give_zero(values: dict[str, np.ndarray], build: Build) -> None:
    check_zero_grad(values, build, list(values))


def test_rules_of_ops_without_a_gradient_return_none_for_every_input() -> None:
    x, i = input_node("x", d.Role.PARAM, DType.F32, (2, 3)), input_node("i", d.Role.DATA, DType.I32, (2,))
    key, position = input_node("k", d.Role.RNG, DType.U32, (2,)), input_node("p", d.Role.SETTING, DType.U32, ())
    nodes = [
        make(Op.SIGN, x),
        make(Op.FLOOR, x),
        make(Op.IS_FINITE, x),
        make(Op.LESS, x, x),
        make(Op.EQUAL, x, x),
        make(Op.ARGMAX, x, arg=d.AxisArg(0)),
        make(Op.ONE_HOT, i, arg=d.ClassesArg(3)),
        make(Op.RANDOM, key, position, arg=d.RandomArg(d.Distribution.NORMAL, "init", 0, (2, 3))),
        make(Op.CAST, i, arg=d.CastArg(DType.F32)),
        make(Op.CAST, x, arg=d.CastArg(DType.I32)),
    ]
    for node in nodes:
        g = input_node("g", d.Role.DATA, DType.F32, node.shape)
        assert VJP[node.op](node, g, (True,) * len(node.src)) == (None,) * len(node.src), node


def test_a_zero_gradient_path_does_not_hide_another_path() -> None:
    """loss = sum(x * floor(x) * r): the gradient is floor(x) * r (floor itself contributes nothing)."""
    fn = loss_function({"x": X}, lambda n: mul(n["x"], make(Op.FLOOR, n["x"])))
    r = np.arange(6.0).reshape(2, 3)
    out = reference.run(grad(fn, "loss", ["x"]), {"x": X, "r": r})
    np.testing.assert_array_equal(out["grad/x"], np.floor(X) * r)


# -- NF4 weights ------------------------------------------------------------------------------------


@covers(Op.NF4_MATMUL, Op.NF4_PACK, Op.NF4_UNPACK)
@pytest.mark.parametrize("transpose", [False, True])
def test_nf4_matmul_differentiates_x_and_leaves_the_packed_weight_frozen(transpose: bool) -> None:
    rng = np.random.default_rng(5)
    rows, cols = 3, 64
    packed = np.array(nf4.quantize(rng.normal(size=rows * cols).tolist(), rows, cols), dtype=np.uint32)
    x = rng.standard_normal((2, rows if transpose else cols))
    check_grad({"x": x, "p": packed}, op_of(Op.NF4_MATMUL, d.Nf4MatmulArg(rows, cols, transpose)), ["x"], seed=5)
    xs, ps = input_node("x", d.Role.DATA, DType.F32, x.shape), input_node("p", d.Role.PARAM, DType.U32, packed.shape)
    node = make(Op.NF4_MATMUL, xs, ps, arg=d.Nf4MatmulArg(rows, cols, transpose))
    g = input_node("g", d.Role.DATA, DType.F32, node.shape)
    dx, dp = VJP[Op.NF4_MATMUL](node, g, (True, True))
    assert dp is None and dx is not None and dx.arg == d.Nf4MatmulArg(rows, cols, not transpose)
    unpacked = make(Op.NF4_UNPACK, node.src[1], arg=d.Nf4Arg(rows, cols))
    assert VJP[Op.NF4_UNPACK](unpacked, input_node("g", d.Role.DATA, DType.F32, (rows, cols)), (True,)) == (None,)
    pack = make(Op.NF4_PACK, input_node("w", d.Role.PARAM, DType.F32, (rows, cols)), arg=d.Nf4Arg(rows, cols))
    with pytest.raises(Unsupported, match="quantising is no step of training"):
        VJP[Op.NF4_PACK](pack, input_node("g", d.Role.DATA, DType.F32, pack.shape), (True,))


# -- tables -----------------------------------------------------------------------------------------


def test_every_op_has_a_vjp_an_implementation_a_rule_and_an_argument_type() -> None:
    ops = set(Op)
    assert set(VJP) == ops
    assert set(reference.IMPLS) == ops - {Op.INPUT}
    assert set(RULES) == ops - {Op.INPUT, Op.CONST}
    assert set(d.ARG_TYPES) == ops


def test_every_op_with_a_vjp_rule_is_checked_here() -> None:
    assert set(Op) - COVERED == {Op.INPUT, Op.CONST}
