"""Op shape/dtype rules: inferred types, and ShapeError naming the offending input (`port`) on misuse."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import BroadcastableShapes, array_shapes, mutually_broadcastable_shapes

from scellis.ops import DType, Node, Op, ShapeError, const, make
from scellis.ops import defs as d
from scellis.ops.node import broadcast_shapes, input_node, sliced_shape

SETTINGS = settings(max_examples=50, deadline=None, derandomize=True, database=None)


def f32(*shape: int) -> Node:
    return input_node("x", d.Role.DATA, DType.F32, shape)


def i32(*shape: int) -> Node:
    return input_node("i", d.Role.DATA, DType.I32, shape)


def boolean(*shape: int) -> Node:
    return input_node("b", d.Role.DATA, DType.BOOL, shape)


def u32(*shape: int) -> Node:
    return input_node("u", d.Role.RNG, DType.U32, shape)


def type_of(node: Node) -> tuple[DType, tuple[int, ...]]:
    return node.dtype, node.shape


def fails(port: int | None, op: Op, *src: Node, arg: object = None, match: str = "") -> ShapeError:
    with pytest.raises(ShapeError, match=match) as info:
        make(op, *src, arg=arg)
    assert info.value.port == port, f"port {info.value.port}, expected {port}: {info.value}"
    return info.value


# -- make itself ------------------------------------------------------------------------------------


def test_make_names_the_expected_argument_type() -> None:
    fails(None, Op.SUM, f32(2), arg=d.AxisArg(0), match="sum takes a ReduceArg, got AxisArg")
    fails(None, Op.ADD, f32(2), f32(2), arg=d.AxisArg(0), match="add takes a NoArg, got AxisArg")
    fails(None, Op.CONV2D, f32(1, 1, 3, 3), f32(1, 1, 1, 1), match="conv2d takes a ConvArg, got NoArg")


def test_inputs_and_constants_are_not_built_with_make() -> None:
    fails(None, Op.INPUT, arg=d.InputArg("x", d.Role.DATA), match="not built with make")
    fails(None, Op.CONST, arg=d.ConstArg(1.0), match="not built with make")


def test_input_and_const_checks() -> None:
    with pytest.raises(ShapeError, match="non-positive"):
        input_node("x", d.Role.DATA, DType.F32, (2, 0))
    assert type_of(const(3.0, DType.I32)) == (DType.I32, ())
    for bad in (2.5, float("inf"), float("nan")):
        with pytest.raises(ShapeError, match="not an integer"):
            const(bad, DType.I32)


def test_arity_is_checked() -> None:
    fails(None, Op.EXP, f32(2), f32(2), match=r"exp takes 1 input\(s\), got 2")
    fails(None, Op.ADD, f32(2), match=r"add takes 2 input\(s\), got 1")
    fails(None, Op.WHERE, boolean(2), f32(2), match=r"where takes 3 input\(s\)")


# -- elementwise and broadcasting -------------------------------------------------------------------


@SETTINGS
@given(shapes=mutually_broadcastable_shapes(num_shapes=3, max_dims=5, max_side=4))
def test_broadcast_shapes_agrees_with_numpy(shapes: BroadcastableShapes) -> None:
    inputs, result = shapes.input_shapes, shapes.result_shape
    assert broadcast_shapes(*inputs) == result == np.broadcast_shapes(*inputs)


@pytest.mark.parametrize(
    ("shapes", "port"),
    [
        (((2, 3), (4, 3)), 1),
        (((3,), (1, 3), (2, 4)), 2),
        (((2, 1), (1, 3), (4, 3)), 2),
        (((5, 1, 3), (2, 3)), None),  # fits
    ],
)
def test_broadcast_shapes_names_the_first_input_that_does_not_fit(shapes: tuple, port: int | None) -> None:
    if port is None:
        assert broadcast_shapes(*shapes) == (5, 2, 3)
        return
    with pytest.raises(ShapeError, match="do not broadcast") as info:
        broadcast_shapes(*shapes)
    assert info.value.port == port


def test_binary_ops_broadcast_and_compare_to_bool() -> None:
    assert type_of(make(Op.ADD, f32(4, 1, 3), f32(2, 1))) == (DType.F32, (4, 2, 3))
    assert type_of(make(Op.MUL, f32(), f32(2, 3))) == (DType.F32, (2, 3))
    assert type_of(make(Op.MAXIMUM, i32(3), i32(2, 1))) == (DType.I32, (2, 3))
    assert type_of(make(Op.LESS, f32(3), f32(2, 3))) == (DType.BOOL, (2, 3))
    assert type_of(make(Op.EQUAL, i32(1), i32(5))) == (DType.BOOL, (5,))
    assert type_of(make(Op.ADD, f32(3), const(1.0))) == (DType.F32, (3,))


def test_binary_misuse() -> None:
    fails(1, Op.ADD, f32(2, 3), f32(4, 3), match="do not broadcast")
    fails(1, Op.MUL, f32(3), i32(3), match="one dtype")
    fails(0, Op.ADD, boolean(3), boolean(3), match="not defined for bool")
    fails(0, Op.DIV, i32(3), i32(3), match="div is not defined for int32")
    fails(0, Op.POW, i32(3), i32(3), match="pow is not defined for int32")


def test_unary_ops_need_floats_and_valid_arguments() -> None:
    assert type_of(make(Op.GELU, f32(2, 5), arg=d.GeluArg("tanh"))) == (DType.F32, (2, 5))
    assert type_of(make(Op.LEAKY_RELU, f32(7), arg=d.LeakyReluArg(0.1))) == (DType.F32, (7,))
    fails(0, Op.EXP, i32(3), match="exp needs a float32 input, got int32")
    fails(0, Op.SIGN, boolean(3), match="float32")
    fails(None, Op.GELU, f32(3), arg=d.GeluArg("erf"), match="'tanh' or 'none'")


def test_where_broadcasts_its_three_inputs() -> None:
    assert type_of(make(Op.WHERE, boolean(2, 1, 1), f32(3, 1), f32(4))) == (DType.F32, (2, 3, 4))
    assert type_of(make(Op.WHERE, boolean(3), i32(), i32(3))) == (DType.I32, (3,))


def test_where_misuse() -> None:
    fails(0, Op.WHERE, f32(3), f32(3), f32(3), match="condition must be bool, got float32")
    fails(0, Op.WHERE, i32(3), f32(3), f32(3), match="condition must be bool")
    fails(2, Op.WHERE, boolean(3), f32(3), i32(3), match="differ in dtype")
    fails(2, Op.WHERE, boolean(3), f32(3), f32(2), match="do not broadcast")
    fails(1, Op.WHERE, boolean(3), f32(4), f32(3), match="do not broadcast")


def test_cast_keeps_the_shape() -> None:
    assert type_of(make(Op.CAST, f32(2, 3), arg=d.CastArg(DType.I32))) == (DType.I32, (2, 3))
    assert type_of(make(Op.CAST, boolean(4), arg=d.CastArg(DType.F32))) == (DType.F32, (4,))


# -- reductions -------------------------------------------------------------------------------------


@pytest.mark.parametrize("op", sorted(d.REDUCE, key=str), ids=lambda op: op.value)
def test_reductions(op: Op) -> None:
    x = f32(2, 3, 4)
    assert type_of(make(op, x, arg=d.ReduceArg((0, 2), False))) == (DType.F32, (3,))
    assert type_of(make(op, x, arg=d.ReduceArg((0, 2), True))) == (DType.F32, (1, 3, 1))
    assert type_of(make(op, x, arg=d.ReduceArg((0, 1, 2), False))) == (DType.F32, ())
    assert type_of(make(op, x, arg=d.ReduceArg((), False))) == (DType.F32, (2, 3, 4))
    fails(None, op, x, arg=d.ReduceArg((2, 0), False), match=r"axes \(2, 0\) must be sorted")
    fails(None, op, x, arg=d.ReduceArg((1, 1), False), match="must be sorted, unique")
    fails(None, op, x, arg=d.ReduceArg((3,), False), match="within 3 dimensions")
    fails(None, op, x, arg=d.ReduceArg((-1,), False), match="within 3 dimensions")
    fails(0, op, i32(3), arg=d.ReduceArg((0,), False), match="float32")


def test_var_correction_must_leave_something_to_divide_by() -> None:
    assert make(Op.VAR, f32(2, 3), arg=d.ReduceArg((1,), False, 2)).shape == (2,)
    fails(None, Op.VAR, f32(2, 3), arg=d.ReduceArg((1,), False, 3), match="correction 3 must be below the 3")
    fails(None, Op.VAR, f32(2, 3), arg=d.ReduceArg((), False, 1), match="correction 1")


def test_argmax_softmax_and_their_axis() -> None:
    assert type_of(make(Op.ARGMAX, f32(2, 3, 4), arg=d.AxisArg(1))) == (DType.I32, (2, 4))
    assert type_of(make(Op.SOFTMAX, f32(2, 3), arg=d.AxisArg(0))) == (DType.F32, (2, 3))
    assert type_of(make(Op.LOG_SOFTMAX, f32(5), arg=d.AxisArg(0))) == (DType.F32, (5,))
    fails(None, Op.ARGMAX, f32(2, 3), arg=d.AxisArg(2), match="axis 2 is out of range for 2 dimensions")
    fails(None, Op.SOFTMAX, f32(2, 3), arg=d.AxisArg(-1), match="out of range")
    fails(0, Op.LOG_SOFTMAX, i32(3), arg=d.AxisArg(0), match="float32")


# -- movement ---------------------------------------------------------------------------------------


def test_expand() -> None:
    assert type_of(make(Op.EXPAND, f32(3, 1), arg=d.ShapeArg((2, 3, 4)))) == (DType.F32, (2, 3, 4))
    assert type_of(make(Op.EXPAND, i32(), arg=d.ShapeArg((5,)))) == (DType.I32, (5,))
    fails(0, Op.EXPAND, f32(3), arg=d.ShapeArg((4,)), match=r"cannot expand \(3,\) to \(4,\)")
    fails(0, Op.EXPAND, f32(2, 3), arg=d.ShapeArg((3,)), match="cannot expand")
    fails(0, Op.EXPAND, f32(1), arg=d.ShapeArg((0,)), match="cannot expand")


def test_reshape() -> None:
    assert type_of(make(Op.RESHAPE, f32(2, 6), arg=d.ShapeArg((3, 1, 4)))) == (DType.F32, (3, 1, 4))
    assert make(Op.RESHAPE, f32(1, 1), arg=d.ShapeArg(())).shape == ()
    fails(0, Op.RESHAPE, f32(2, 6), arg=d.ShapeArg((5, 2)), match=r"cannot reshape \(2, 6\) \(12 values\) to \(5, 2\)")
    fails(0, Op.RESHAPE, f32(2, 6), arg=d.ShapeArg((-1, 12)), match="cannot reshape")
    fails(0, Op.RESHAPE, f32(2, 6), arg=d.ShapeArg((-2, -6)), match="cannot reshape")


def test_permute() -> None:
    assert make(Op.PERMUTE, f32(2, 3, 4), arg=d.PermuteArg((2, 0, 1))).shape == (4, 2, 3)
    fails(None, Op.PERMUTE, f32(2, 3), arg=d.PermuteArg((0, 0)), match="not a permutation of 2 axes")
    fails(None, Op.PERMUTE, f32(2, 3), arg=d.PermuteArg((0, 1, 2)), match="not a permutation")


def test_concat() -> None:
    assert type_of(make(Op.CONCAT, f32(2, 3), f32(2, 1), f32(2, 4), arg=d.AxisArg(1))) == (DType.F32, (2, 8))
    assert make(Op.CONCAT, i32(3), arg=d.AxisArg(0)).shape == (3,)
    fails(2, Op.CONCAT, f32(2, 3), f32(2, 1), f32(3, 4), arg=d.AxisArg(1), match=r"\(3, 4\) does not fit \(2, 3\)")
    fails(1, Op.CONCAT, f32(2, 3), f32(2, 3, 1), arg=d.AxisArg(0), match="does not fit")
    fails(1, Op.CONCAT, f32(2), i32(2), arg=d.AxisArg(0), match="differ in dtype")
    fails(None, Op.CONCAT, f32(2), f32(2), arg=d.AxisArg(1), match="out of range")
    fails(None, Op.CONCAT, arg=d.AxisArg(0), match="at least one input")


@SETTINGS
@given(data=st.data(), shape=array_shapes(min_dims=1, max_dims=4, max_side=6))
def test_slice_shape_agrees_with_numpy(data: st.DataObject, shape: tuple[int, ...]) -> None:
    starts = tuple(data.draw(st.integers(0, n - 1)) for n in shape)
    stops = tuple(data.draw(st.integers(a + 1, n)) for a, n in zip(starts, shape, strict=True))
    steps = tuple(data.draw(st.integers(1, 4)) for _ in shape)
    expected = np.empty(shape)[tuple(map(slice, starts, stops, steps))].shape
    assert sliced_shape(shape, starts, stops, steps) == expected
    assert make(Op.SLICE, f32(*shape), arg=d.SliceArg(starts, stops, steps)).shape == expected
    g = f32(*expected)
    assert make(Op.SLICE_GRAD, g, arg=d.SliceGradArg(shape, starts, stops, steps)).shape == shape


def test_slice_misuse() -> None:
    x = f32(4, 5)
    fails(None, Op.SLICE, x, arg=d.SliceArg((0,), (2,), (1,)), match="for each of 2 axes")
    fails(None, Op.SLICE, x, arg=d.SliceArg((0, 2), (4, 2), (1, 1)), match="axis 1: slice 2:2:1")
    fails(None, Op.SLICE, x, arg=d.SliceArg((0, 0), (4, 6), (1, 1)), match="axis 1")
    fails(None, Op.SLICE, x, arg=d.SliceArg((0, 0), (4, 5), (0, 1)), match="axis 0: slice 0:4:0")
    fails(None, Op.SLICE, x, arg=d.SliceArg((-1, 0), (4, 5), (1, 1)), match="axis 0")
    grad_arg = d.SliceGradArg((4, 5), (0, 0), (4, 5), (2, 2))
    fails(0, Op.SLICE_GRAD, f32(2, 2), arg=grad_arg, match=r"gradient of shape \(2, 2\) does not match")


# -- matmul -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b", "arg", "out"),
    [
        ((2, 3), (3, 4), d.MatmulArg(), (2, 4)),
        ((3, 2), (3, 4), d.MatmulArg(transpose_a=True), (2, 4)),
        ((2, 3), (4, 3), d.MatmulArg(transpose_b=True), (2, 4)),
        ((3, 2), (4, 3), d.MatmulArg(True, True), (2, 4)),
        ((5, 1, 2, 3), (6, 3, 4), d.MatmulArg(), (5, 6, 2, 4)),
        ((2, 3), (7, 3, 4), d.MatmulArg(), (7, 2, 4)),
        ((7, 3, 2), (4, 3), d.MatmulArg(transpose_a=True, transpose_b=True), (7, 2, 4)),
    ],
)
def test_matmul_shapes(a: tuple[int, ...], b: tuple[int, ...], arg: d.MatmulArg, out: tuple[int, ...]) -> None:
    assert type_of(make(Op.MATMUL, f32(*a), f32(*b), arg=arg)) == (DType.F32, out)
    lhs, rhs = np.empty(a), np.empty(b)
    assert (
        out
        == np.matmul(
            np.swapaxes(lhs, -1, -2) if arg.transpose_a else lhs, np.swapaxes(rhs, -1, -2) if arg.transpose_b else rhs
        ).shape
    )


def test_matmul_misuse() -> None:
    fails(1, Op.MATMUL, f32(2, 3), f32(4, 5), arg=d.MatmulArg(), match=r"inner dimensions differ .* k=3 vs 4")
    fails(1, Op.MATMUL, f32(2, 3), f32(3, 4), arg=d.MatmulArg(transpose_a=True), match="k=2 vs 3")
    fails(1, Op.MATMUL, f32(2, 3), f32(3, 4), arg=d.MatmulArg(transpose_b=True), match="k=3 vs 4")
    fails(1, Op.MATMUL, f32(2, 2, 3), f32(3, 3, 4), arg=d.MatmulArg(), match="do not broadcast")
    fails(0, Op.MATMUL, f32(3), f32(3, 4), arg=d.MatmulArg(), match="at least 2 dimensions")
    fails(1, Op.MATMUL, f32(2, 3), f32(3), arg=d.MatmulArg(), match="at least 2 dimensions")
    fails(0, Op.MATMUL, i32(2, 3), f32(3, 4), arg=d.MatmulArg(), match="float32")


# -- convolution and pooling ------------------------------------------------------------------------


def conv(stride: int = 1, padding: int = 0, dilation: int = 1, groups: int = 1) -> d.ConvArg:
    return d.ConvArg((stride, stride), (padding, padding), (dilation, dilation), groups)


@pytest.mark.parametrize(
    ("x", "w", "arg", "out"),
    [
        ((1, 3, 32, 32), (8, 3, 3, 3), conv(padding=1), (1, 8, 32, 32)),
        ((1, 3, 32, 32), (8, 3, 3, 3), conv(stride=2, padding=1), (1, 8, 16, 16)),
        ((2, 3, 32, 32), (8, 3, 3, 3), conv(dilation=2), (2, 8, 28, 28)),
        ((1, 3, 7, 7), (4, 3, 3, 3), conv(stride=2), (1, 4, 3, 3)),
        ((1, 3, 8, 8), (4, 3, 3, 3), conv(stride=3, padding=2), (1, 4, 4, 4)),
        ((2, 4, 5, 5), (6, 2, 3, 3), conv(groups=2), (2, 6, 3, 3)),
        ((1, 6, 4, 4), (6, 1, 1, 1), conv(groups=6), (1, 6, 4, 4)),
        ((1, 1, 5, 9), (1, 1, 2, 4), d.ConvArg((1, 2), (0, 1), (2, 1), 1), (1, 1, 3, 4)),
    ],
)
def test_conv2d_output_sizes(x: tuple, w: tuple, arg: d.ConvArg, out: tuple) -> None:
    y = make(Op.CONV2D, f32(*x), f32(*w), arg=arg)
    assert type_of(y) == (DType.F32, out)
    g = f32(*out)
    assert make(Op.CONV2D_GRAD_INPUT, g, f32(*w), arg=d.ConvGradArg(arg, x)).shape == x
    assert make(Op.CONV2D_GRAD_WEIGHT, f32(*x), g, arg=d.ConvGradArg(arg, w)).shape == w


def test_conv2d_misuse() -> None:
    x, w = f32(1, 4, 6, 6), f32(2, 4, 3, 3)
    fails(1, Op.CONV2D, x, f32(2, 3, 3, 3), arg=conv(), match="4 input channels")
    fails(1, Op.CONV2D, x, f32(3, 2, 3, 3), arg=conv(groups=2), match="groups=2 do not fit")
    fails(1, Op.CONV2D, f32(1, 3, 6, 6), f32(3, 1, 3, 3), arg=conv(groups=2), match="groups=2")
    fails(0, Op.CONV2D, f32(1, 4, 2, 6), w, arg=conv(), match="does not fit the padded 2x6 input")
    fails(0, Op.CONV2D, f32(1, 4, 3, 3), w, arg=conv(dilation=2), match="does not fit")
    fails(0, Op.CONV2D, f32(4, 6, 6), w, arg=conv(), match="NCHW")
    fails(1, Op.CONV2D, x, f32(4, 3, 3), arg=conv(), match="OIHW")
    fails(None, Op.CONV2D, x, w, arg=conv(stride=0), match="stride must be two integers >= 1")
    fails(None, Op.CONV2D, x, w, arg=conv(padding=-1), match="padding must be two integers >= 0")
    fails(None, Op.CONV2D, x, w, arg=d.ConvArg((1,), (0, 0), (1, 1), 1), match="stride")
    fails(0, Op.CONV2D, i32(1, 4, 6, 6), w, arg=conv(), match="float32")
    fails(1, Op.CONV2D, x, i32(2, 4, 3, 3), arg=conv(), match="float32")


def test_conv2d_gradient_shapes_are_checked() -> None:
    arg = conv(padding=1)
    fails(
        0,
        Op.CONV2D_GRAD_INPUT,
        f32(1, 2, 5, 5),
        f32(2, 4, 3, 3),
        arg=d.ConvGradArg(arg, (1, 4, 6, 6)),
        match="expected",
    )
    fails(
        1,
        Op.CONV2D_GRAD_WEIGHT,
        f32(1, 4, 6, 6),
        f32(1, 3, 6, 6),
        arg=d.ConvGradArg(arg, (2, 4, 3, 3)),
        match="expected",
    )


def pool(kernel: int, stride: int, padding: int = 0) -> d.PoolArg:
    return d.PoolArg((kernel, kernel), (stride, stride), (padding, padding))


@pytest.mark.parametrize(
    ("x", "arg", "out"),
    [
        ((1, 3, 32, 32), pool(2, 2), (1, 3, 16, 16)),
        ((1, 3, 7, 7), pool(2, 2), (1, 3, 3, 3)),
        ((2, 5, 7, 7), pool(3, 2, 1), (2, 5, 4, 4)),
        ((1, 1, 5, 5), pool(3, 1, 1), (1, 1, 5, 5)),
        ((1, 1, 4, 9), d.PoolArg((2, 3), (1, 3), (1, 0)), (1, 1, 5, 3)),
    ],
)
@pytest.mark.parametrize("op", [Op.MAX_POOL2D, Op.AVG_POOL2D], ids=lambda op: op.value)
def test_pool_output_sizes(op: Op, x: tuple, arg: d.PoolArg, out: tuple) -> None:
    assert type_of(make(op, f32(*x), arg=arg)) == (DType.F32, out)
    assert make(Op.AVG_POOL2D_GRAD, f32(*out), arg=d.PoolGradArg(arg, x)).shape == x
    assert make(Op.MAX_POOL2D_GRAD, f32(*x), f32(*out), arg=d.PoolGradArg(arg, x)).shape == x


def test_pool_misuse() -> None:
    fails(None, Op.MAX_POOL2D, f32(1, 1, 6, 6), arg=pool(2, 2, 2), match="at most half the kernel")
    fails(0, Op.AVG_POOL2D, f32(1, 1, 2, 6), arg=pool(3, 1), match="does not fit the padded 2x6 input")
    fails(0, Op.MAX_POOL2D, f32(1, 6, 6), arg=pool(2, 2), match="NCHW")
    fails(None, Op.AVG_POOL2D, f32(1, 1, 6, 6), arg=pool(0, 1), match="kernel must be two integers >= 1")
    fails(0, Op.MAX_POOL2D, i32(1, 1, 6, 6), arg=pool(2, 2), match="float32")
    arg = d.PoolGradArg(pool(2, 2), (1, 1, 6, 6))
    fails(0, Op.AVG_POOL2D_GRAD, f32(1, 1, 2, 3), arg=arg, match=r"gradient \(1, 1, 2, 3\) does not match")
    fails(1, Op.MAX_POOL2D_GRAD, f32(1, 1, 6, 6), f32(1, 1, 3, 2), arg=arg, match="does not match")
    fails(0, Op.MAX_POOL2D_GRAD, f32(1, 1, 6, 5), f32(1, 1, 3, 3), arg=arg, match=r"input \(1, 1, 6, 5\) differs")


# -- indexing and randomness ------------------------------------------------------------------------


def test_gather_scatter_add_and_one_hot() -> None:
    assert type_of(make(Op.GATHER, f32(10, 4), i32(2, 3))) == (DType.F32, (2, 3, 4))
    assert type_of(make(Op.GATHER, f32(10), i32())) == (DType.F32, ())
    assert type_of(make(Op.SCATTER_ADD, i32(2, 3), f32(2, 3, 4), arg=d.RowsArg(10))) == (DType.F32, (10, 4))
    assert type_of(make(Op.ONE_HOT, i32(2, 3), arg=d.ClassesArg(5))) == (DType.F32, (2, 3, 5))


def test_indexing_misuse() -> None:
    fails(1, Op.GATHER, f32(10, 4), f32(3), match="int32 indices, got float32")
    fails(0, Op.GATHER, f32(), i32(3), match="at least one dimension")
    fails(0, Op.SCATTER_ADD, f32(3), f32(3, 4), arg=d.RowsArg(5), match="int32 indices")
    fails(1, Op.SCATTER_ADD, i32(3), f32(4, 4), arg=d.RowsArg(5), match=r"must start with the indices' shape \(3,\)")
    fails(1, Op.SCATTER_ADD, i32(3), i32(3, 4), arg=d.RowsArg(5), match="float32")
    fails(None, Op.SCATTER_ADD, i32(3), f32(3, 4), arg=d.RowsArg(0), match="at least one row, got 0")
    fails(0, Op.ONE_HOT, f32(3), arg=d.ClassesArg(5), match="int32")
    fails(None, Op.ONE_HOT, i32(3), arg=d.ClassesArg(0), match="at least one class")


def test_random() -> None:
    def random(dist: d.Distribution, shape: tuple[int, ...] = (2, 3), p: float = 0.0, site: int = 0) -> d.RandomArg:
        return d.RandomArg(dist, "dropout", site, shape, p)

    key, pos = u32(2), u32()
    assert type_of(make(Op.RANDOM, key, pos, arg=random(d.Distribution.UNIFORM))) == (DType.F32, (2, 3))
    assert type_of(make(Op.RANDOM, key, pos, arg=random(d.Distribution.NORMAL, (4,)))) == (DType.F32, (4,))
    assert type_of(make(Op.RANDOM, key, pos, arg=random(d.Distribution.BERNOULLI, p=0.5))) == (DType.BOOL, (2, 3))
    fails(0, Op.RANDOM, u32(3), pos, arg=random(d.Distribution.UNIFORM), match="key must be u32")
    fails(0, Op.RANDOM, i32(2), pos, arg=random(d.Distribution.UNIFORM), match="key must be u32")
    fails(1, Op.RANDOM, key, u32(1), arg=random(d.Distribution.UNIFORM), match="position must be a u32 scalar")
    fails(1, Op.RANDOM, key, i32(), arg=random(d.Distribution.UNIFORM), match="position")
    for bad in (random(d.Distribution.BERNOULLI, p=1.0), random(d.Distribution.BERNOULLI, p=-0.1)):
        fails(None, Op.RANDOM, key, pos, arg=bad, match="must be valid")
    fails(None, Op.RANDOM, key, pos, arg=random(d.Distribution.UNIFORM, (2, 0)), match="must be valid")
    fails(None, Op.RANDOM, key, pos, arg=random(d.Distribution.UNIFORM, site=-1), match="must be valid")
    fails(None, Op.RANDOM, key, pos, arg=random(d.Distribution.UNIFORM, site=2**32), match="must be valid")


def test_random_integers_are_int32_in_a_range_that_int32_holds() -> None:
    key, pos = u32(2), u32()
    for n in (1, 7, 2**31):
        arg = d.RandomArg(d.Distribution.INTEGER, "augment", 0, (4, 2), n=n)
        assert type_of(make(Op.RANDOM, key, pos, arg=arg)) == (DType.I32, (4, 2))
    for n in (0, -3, 2**31 + 1, 3_000_000_000):
        arg = d.RandomArg(d.Distribution.INTEGER, "augment", 0, (4,), n=n)
        fails(None, Op.RANDOM, key, pos, arg=arg, match=rf"need 1 <= n <= 2\*\*31 \(int32\), got n={n}")


def test_shift2d_and_flip_last_keep_the_shape_of_x() -> None:
    assert type_of(make(Op.SHIFT2D, f32(4, 3, 8, 5), i32(4, 2))) == (DType.F32, (4, 3, 8, 5))
    assert type_of(make(Op.SHIFT2D, f32(2, 8, 5), i32(2, 2))) == (DType.F32, (2, 8, 5))
    assert type_of(make(Op.FLIP_LAST, f32(4, 3, 8, 5), boolean(4))) == (DType.F32, (4, 3, 8, 5))
    assert type_of(make(Op.FLIP_LAST, f32(4, 5), boolean(4))) == (DType.F32, (4, 5))


def test_shift2d_and_flip_last_misuse() -> None:
    fails(0, Op.SHIFT2D, f32(4, 8), i32(4, 2), match=r"needs a batch axis and 2 more, got \(4, 8\)")
    fails(0, Op.SHIFT2D, i32(4, 8, 8), i32(4, 2), match="float32")
    fails(1, Op.SHIFT2D, f32(4, 8, 8), i32(3, 2), match=r"second input must be i32\[4,2\] \(one row per example\)")
    fails(1, Op.SHIFT2D, f32(4, 8, 8), f32(4, 2), match=r"must be i32\[4,2\].*got f32\[4,2\]")
    fails(1, Op.SHIFT2D, f32(4, 8, 8), i32(4), match=r"must be i32\[4,2\]")
    fails(None, Op.SHIFT2D, f32(4, 8, 8), match="takes 2 input")
    fails(0, Op.FLIP_LAST, f32(4), boolean(4), match=r"needs a batch axis and 1 more, got \(4,\)")
    fails(1, Op.FLIP_LAST, f32(4, 5), boolean(5), match=r"must be bool\[4\]")
    fails(1, Op.FLIP_LAST, f32(4, 5), i32(4), match=r"must be bool\[4\]")


def test_solve_gives_x_of_the_shape_of_b() -> None:
    assert type_of(make(Op.SOLVE, f32(4, 4), f32(4, 1))) == (DType.F32, (4, 1))
    assert type_of(make(Op.SOLVE, f32(4, 4), f32(4, 4))) == (DType.F32, (4, 4))
    assert type_of(make(Op.SOLVE, f32(2000, 4, 4), f32(2000, 4, 1))) == (DType.F32, (2000, 4, 1))
    assert type_of(make(Op.SOLVE, f32(2, 3, 5, 5), f32(2, 3, 5, 7))) == (DType.F32, (2, 3, 5, 7))


def test_solve_misuse_names_both_shapes() -> None:
    fails(0, Op.SOLVE, f32(4), f32(4, 1), match=r"solve needs at least 2 dimensions, got \(4,\)")
    fails(1, Op.SOLVE, f32(4, 4), f32(4), match=r"solve needs at least 2 dimensions, got \(4,\)")
    fails(0, Op.SOLVE, f32(4, 3), f32(4, 1), match=r"a must be square in its last two axes, got \(4, 3\)")
    fails(1, Op.SOLVE, f32(4, 4), f32(3, 1), match=r"b \(3, 1\) must have the 4 rows of a \(4, 4\)")
    no_broadcast = r"a \(2, 4, 4\) and b \(3, 4, 1\) must have equal batch axes \(no broadcasting\)"
    fails(1, Op.SOLVE, f32(2, 4, 4), f32(3, 4, 1), match=no_broadcast)
    fails(1, Op.SOLVE, f32(4, 4), f32(2, 4, 1), match=r"a \(4, 4\) and b \(2, 4, 1\) must have equal batch")
    fails(1, Op.SOLVE, f32(1, 4, 4), f32(2, 4, 1), match="no broadcasting")
    fails(0, Op.SOLVE, i32(4, 4), f32(4, 1), match="float32")
    fails(1, Op.SOLVE, f32(4, 4), i32(4, 1), match="float32")
    fails(None, Op.SOLVE, f32(4, 4), match="takes 2 input")
    fails(None, Op.SOLVE, f32(4, 4), f32(4, 1), arg=d.AxisArg(0), match="solve takes a NoArg, got AxisArg")


def test_sort_and_sort_grad_keep_the_shape_of_x() -> None:
    assert type_of(make(Op.SORT, f32(2000), arg=d.AxisArg(0))) == (DType.F32, (2000,))
    assert type_of(make(Op.SORT, f32(2000, 4), arg=d.AxisArg(0))) == (DType.F32, (2000, 4))
    assert type_of(make(Op.SORT_GRAD, f32(3, 5), f32(3, 5), arg=d.AxisArg(1))) == (DType.F32, (3, 5))


def test_sort_and_sort_grad_misuse() -> None:
    fails(None, Op.SORT, f32(3, 5), arg=d.AxisArg(2), match="axis 2 is out of range for 2 dimensions")
    fails(None, Op.SORT, f32(), arg=d.AxisArg(0), match="axis 0 is out of range for 0 dimensions")
    fails(0, Op.SORT, i32(5), arg=d.AxisArg(0), match="float32")
    fails(None, Op.SORT, f32(5), match="sort takes a AxisArg, got NoArg")
    fails(None, Op.SORT, f32(5), f32(5), arg=d.AxisArg(0), match="takes 1 input")
    fails(1, Op.SORT_GRAD, f32(3, 5), f32(5, 3), arg=d.AxisArg(1), match=r"gradient \(5, 3\) must have the shape")
    fails(1, Op.SORT_GRAD, f32(3, 5), i32(3, 5), arg=d.AxisArg(1), match="float32")
    fails(None, Op.SORT_GRAD, f32(3, 5), f32(3, 5), arg=d.AxisArg(-1), match="out of range")
    fails(None, Op.SORT_GRAD, f32(3, 5), arg=d.AxisArg(0), match="takes 2 input")


def test_conv_grad_blames_the_argument_when_its_shape_is_at_fault() -> None:
    conv = d.ConvArg((1, 1), (0, 0), (1, 1), 1)
    x = input_node("x", d.Role.DATA, DType.F32, (1, 2, 5, 5))
    g = input_node("g", d.Role.DATA, DType.F32, (1, 3, 3, 3))
    with pytest.raises(ShapeError) as err:
        make(Op.CONV2D_GRAD_WEIGHT, x, g, arg=d.ConvGradArg(conv, (3, 7, 3, 3)))
    assert err.value.port is None
    w = input_node("w", d.Role.DATA, DType.F32, (3, 2, 3, 3))
    with pytest.raises(ShapeError) as err:
        make(Op.CONV2D_GRAD_INPUT, g, w, arg=d.ConvGradArg(conv, (1, 2, 2, 2)))
    assert err.value.port is None
