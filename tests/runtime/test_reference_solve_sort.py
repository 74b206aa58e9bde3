"""The reference's SOLVE, SORT and SORT_GRAD against numpy (np.linalg.solve, np.sort's stable sort) and
against a plain Python stable sort: batched shapes, several right-hand sides, pivoting, singular matrices,
NaN, infinities, ties and signed zeros."""

from __future__ import annotations

import math
import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scellis.ir import Function
from scellis.ops import DType, Op, make
from scellis.ops import defs as d
from scellis.ops.node import input_node
from scellis.runtime.reference.oracle import eliminate, run

SETTINGS = settings(max_examples=25, deadline=None, derandomize=True, database=None)


def solve(a: np.ndarray, b: np.ndarray, float_dtype: type = np.float64) -> np.ndarray:
    nodes = [input_node(name, d.Role.DATA, DType.F32, v.shape) for name, v in (("a", a), ("b", b))]
    fn = Function("t", tuple(nodes), (("x", make(Op.SOLVE, *nodes)),))
    return run(fn, {"a": a, "b": b}, float_dtype)["x"]


def sort(op: Op, axis: int, *arrays: np.ndarray) -> np.ndarray:
    nodes = [input_node(f"x{i}", d.Role.DATA, DType.F32, v.shape) for i, v in enumerate(arrays)]
    fn = Function("t", tuple(nodes), (("y", make(op, *nodes, arg=d.AxisArg(axis))),))
    return run(fn, {f"x{i}": v for i, v in enumerate(arrays)})["y"]


# -- solve ----------------------------------------------------------------------------------------------


def well_conditioned(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    n = shape[-1]
    return rng.standard_normal(shape) + n * np.eye(n)


@SETTINGS
@given(
    batch=st.lists(st.integers(1, 3), max_size=2).map(tuple),
    n=st.integers(1, 7),
    k=st.integers(1, 4),
    seed=st.integers(0, 2**32 - 1),
)
def test_solve_matches_numpy_on_batches_and_several_right_hand_sides(
    batch: tuple[int, ...], n: int, k: int, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    a, b = well_conditioned(rng, (*batch, n, n)), rng.standard_normal((*batch, n, k))
    x = solve(a, b)
    assert x.shape == (*batch, n, k)
    np.testing.assert_allclose(x, np.linalg.solve(a, b), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(np.matmul(a, x), b, rtol=1e-10, atol=1e-12)


def test_solve_at_the_workflows_sizes() -> None:
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((2000, 4, 4)), rng.standard_normal((2000, 4, 1))
    np.testing.assert_allclose(solve(a, b), np.linalg.solve(a, b), rtol=1e-7, atol=1e-9)
    a, b = rng.standard_normal((4, 4)), rng.standard_normal((4, 4))
    np.testing.assert_allclose(solve(a, b), np.linalg.solve(a, b), rtol=1e-9, atol=1e-12)


def test_solve_pivots_past_a_zero_on_the_diagonal() -> None:
    """Without row exchanges the first step would divide by a[0][0] = 0; so would the second, by a[1][1]."""
    a = np.array([[0.0, 2.0, 1.0], [3.0, 0.0, 1.0], [1.0, 1.0, 0.0]])
    b = np.array([[1.0, 0.0], [2.0, 1.0], [3.0, -1.0]])
    np.testing.assert_allclose(solve(a, b), np.linalg.solve(a, b), rtol=1e-12)
    permutation = np.array([[0.0, 1.0], [1.0, 0.0]])
    np.testing.assert_array_equal(solve(permutation, np.array([[2.0], [3.0]])), [[3.0], [2.0]])


def test_solve_chooses_the_first_row_of_largest_magnitude_and_never_a_nan() -> None:
    """The reduced matrix's first row is the pivot row: |-4| beats 3, and -4 ties 4 but comes first; a NaN
    is never chosen (the devices compare the bits of |value|)."""
    a = np.array([[3.0, 1.0, 2.0], [-4.0, 2.0, 1.0], [4.0, 5.0, -1.0]])
    b = np.array([[1.0], [2.0], [3.0]])
    np.testing.assert_array_equal(eliminate(a, b)[0, :3], [-4.0, 2.0, 1.0])
    np.testing.assert_allclose(solve(a, b), np.linalg.solve(a, b), rtol=1e-12)
    with_nan = np.array([[np.nan, 1.0], [-2.0, 1.0]])
    np.testing.assert_array_equal(eliminate(with_nan, np.ones((2, 1)))[0, :2], [-2.0, 1.0])


@pytest.mark.parametrize("float_dtype", [np.float64, np.float32])
def test_a_singular_matrix_gives_non_finite_values_not_an_exception(float_dtype: type) -> None:
    a = np.array([[[1.0, 2.0], [2.0, 4.0]], [[2.0, 0.0], [0.0, 2.0]], [[0.0, 0.0], [0.0, 0.0]]])
    b = np.ones((3, 2, 1))
    x = solve(a, b, float_dtype)
    assert not np.isfinite(x[0]).all() and not np.isfinite(x[2]).all()
    np.testing.assert_array_equal(x[1], [[0.5], [0.5]])  # the others in the batch are unaffected


# -- sort -------------------------------------------------------------------------------------------------


def python_order(values: list[float]) -> list[int]:
    """Positions in ascending order by Python's stable sort: NaN last, -0.0 == 0.0."""
    return sorted(range(len(values)), key=lambda i: (1, 0.0) if math.isnan(values[i]) else (0, values[i]))


def bits(x: np.ndarray) -> list[int]:
    return [struct.unpack("<Q", struct.pack("<d", v))[0] for v in np.asarray(x, dtype=np.float64).ravel()]


SPECIAL = np.array([3.0, np.nan, -0.0, 0.0, -np.inf, np.inf, 1.0, -np.nan, 1.0, -0.0, 0.0, np.nan, -1e-30, 5e-324])


def test_sort_orders_nan_last_and_keeps_ties_and_signed_zeros_in_index_order() -> None:
    got = sort(Op.SORT, 0, SPECIAL)
    order = python_order(SPECIAL.tolist())
    assert bits(got) == bits(SPECIAL[order])
    assert bits(got) == bits(np.sort(SPECIAL, kind="stable"))
    assert np.signbit(got[2:6]).tolist() == [True, False, True, False]  # -0.0, 0.0, -0.0, 0.0 as given
    assert got[-4] == np.inf and np.isnan(got[-3:]).all()


@SETTINGS
@given(shape=st.lists(st.integers(1, 6), min_size=1, max_size=3).map(tuple), data=st.data())
def test_sort_and_sort_grad_along_any_axis(shape: tuple[int, ...], data: st.DataObject) -> None:
    axis = data.draw(st.integers(0, len(shape) - 1), label="axis")
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    x = rng.choice(SPECIAL, shape) if data.draw(st.booleans(), label="special") else rng.integers(-2, 3, shape) * 0.5
    g = rng.standard_normal(shape)
    sorted_x, routed = sort(Op.SORT, axis, x), sort(Op.SORT_GRAD, axis, x, g)
    assert bits(sorted_x) == bits(np.sort(x, axis=axis, kind="stable"))
    for line in np.ndindex(*(s for i, s in enumerate(shape) if i != axis)):
        index = (*line[:axis], slice(None), *line[axis:])
        order = python_order(x[index].tolist())
        assert bits(sorted_x[index]) == bits(x[index][order])
        rank = np.argsort(order)
        np.testing.assert_array_equal(routed[index], g[index][rank])  # gx[i] = g[rank(i)]


def test_sort_grad_is_the_adjoint_of_sort() -> None:
    """<sort(x) routing of h, g> = <h, sort_grad(x, g)>: the permutation and its transpose."""
    rng = np.random.default_rng(1)
    x = np.floor(rng.uniform(-2, 2, (7, 30)))  # many ties
    h, g = rng.standard_normal((7, 30)), rng.standard_normal((7, 30))
    order = np.argsort(x, axis=1, kind="stable")
    routed_h = np.take_along_axis(h, order, axis=1)  # h moved where sort moves x
    np.testing.assert_allclose(np.sum(routed_h * g), np.sum(h * sort(Op.SORT_GRAD, 1, x, g)), rtol=1e-12)
