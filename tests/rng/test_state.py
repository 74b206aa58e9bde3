"""RNG state: substreams advance independently, the state round-trips through JSON, keys are derived
from (seed, name) alone, integer draws have no modulo bias."""

from __future__ import annotations

import asyncio
import json
from collections import Counter

import pytest

from scellis.datasets import digits_csv, read_digits
from scellis.examples import digits_cnn
from scellis.levels import Level
from scellis.rng import RngState, counter, integer, permutation, substream_key
from scellis.runtime.reference.device import ReferenceDevice
from scellis.session import Session


def test_substreams_advance_independently() -> None:
    a, b = RngState(7), RngState(7)
    assert [a.take("dropout") for _ in range(3)] == [0, 1, 2]
    assert b.take("shuffle") == 0 and a.take("shuffle") == 0  # extra dropout draws moved nothing else
    assert a.key("shuffle") == b.key("shuffle") == substream_key(7, "shuffle")
    assert permutation(40, a.seed, a.peek("shuffle")) == permutation(40, b.seed, b.peek("shuffle"))
    assert len({substream_key(7, s) for s in ("init", "shuffle", "dropout", "augment", "mine")}) == 5
    assert substream_key(7, "init") != substream_key(8, "init")


def test_state_round_trips_through_json() -> None:
    state = RngState(2**40 + 3)
    for name in ("dropout", "dropout", "shuffle", "augment"):
        state.take(name)
    data = json.loads(json.dumps(state.to_json()))
    assert data == {
        "format": "scellis.rng/1",
        "seed": 2**40 + 3,
        "positions": {"augment": 1, "dropout": 2, "shuffle": 1},
    }
    again = RngState.from_json(data)
    assert again == state and again.take("dropout") == 2


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"seed": 1, "positions": {}}, "not an RNG state"),
        ({"format": "scellis.rng/1", "seed": "1", "positions": {}}, "integer seed"),
        ({"format": "scellis.rng/1", "seed": 1, "positions": {"dropout": -1}}, "non-negative"),
    ],
)
def test_bad_state_is_named(data: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        RngState.from_json(data)


def test_positions_run_out_loudly() -> None:
    state = RngState(1, {"dropout": 2**32})
    with pytest.raises(OverflowError, match="'dropout' has used all"):
        state.take("dropout")


def test_integers_are_unbiased_and_reproducible() -> None:
    key = substream_key(3, "augment")
    draws = [integer(6, counter(i, 0, 0), key) for i in range(60_000)]
    assert draws == [integer(6, counter(i, 0, 0), key) for i in range(60_000)]
    counts = Counter(draws)
    expected = len(draws) / 6
    chi2 = sum((counts[v] - expected) ** 2 / expected for v in range(6))
    assert sorted(counts) == list(range(6)) and chi2 < 20.5  # 5 dof, p = 0.001
    assert integer(2**32, counter(5, 0, 0), key) < 2**32
    with pytest.raises(ValueError, match="1 <= n <= 2\\*\\*32"):
        integer(0, counter(0, 0, 0), key)


def test_a_session_records_what_each_substream_used() -> None:
    train, test = read_digits(digits_csv().read_bytes())
    session = Session(digits_cnn(), ReferenceDevice(), seed=5, level=Level.DEBUG, eval_batch=test.n)
    asyncio.run(session.fit(train, test, epochs=1))
    steps = train.n // 64
    assert session.rng.positions == {"init": 1, "shuffle": 1, "dropout": steps}


def test_distributions_pass_sanity_checks() -> None:
    """Mean, variance and a chi-square test for uniform, normal and bernoulli draws (reference Philox)."""
    import math

    import numpy as np

    from scellis.ir import Function
    from scellis.ops import DType, Op, const, make
    from scellis.ops import defs as d
    from scellis.ops.node import input_node
    from scellis.runtime.reference.oracle import run

    n = 200_000

    def draw(dist: d.Distribution, p: float = 0.0) -> np.ndarray:
        key = input_node("rng.test", d.Role.RNG, DType.U32, (2,))
        node = make(Op.RANDOM, key, const(4, DType.U32), arg=d.RandomArg(dist, "test", 0, (n,), p))
        return run(Function("draw", (key,), (("x", node),)), {"rng.test": np.array(substream_key(9, "test"))})["x"]

    u = draw(d.Distribution.UNIFORM)
    assert u.min() >= 0 and u.max() < 1 and abs(u.mean() - 0.5) < 0.005 and abs(u.var() - 1 / 12) < 0.002
    counts = np.histogram(u, bins=20, range=(0, 1))[0]
    assert float(((counts - n / 20) ** 2 / (n / 20)).sum()) < 43.8  # 19 dof, p = 0.001
    z = draw(d.Distribution.NORMAL)
    assert abs(z.mean()) < 0.01 and abs(z.var() - 1) < 0.02
    edges = np.array([-np.inf, -1.5, -0.5, 0.0, 0.5, 1.5, np.inf])
    cdf = np.array([0.5 * (1 + math.erf(e / math.sqrt(2))) if np.isfinite(e) else float(e > 0) for e in edges])
    expected = np.diff(cdf) * n
    observed = np.histogram(z, bins=edges)[0]
    assert float(((observed - expected) ** 2 / expected).sum()) < 20.5  # 5 dof, p = 0.001
    keep = draw(d.Distribution.BERNOULLI, 0.3)
    assert abs(keep.mean() - 0.7) < 4 * math.sqrt(0.21 / n)


def test_epoch_permutations_are_uniform() -> None:
    """Every ordering of 4 examples about equally often over 4,800 epochs (chi-square, 23 dof), and each
    epoch's order is a permutation that depends on the seed."""
    orders = [tuple(permutation(4, 11, epoch)) for epoch in range(4_800)]
    assert all(sorted(order) == [0, 1, 2, 3] for order in orders)
    counts = Counter(orders)
    expected = len(orders) / 24
    chi2 = sum((counts[o] - expected) ** 2 / expected for o in counts) + expected * (24 - len(counts))
    assert len(counts) == 24 and chi2 < 49.7  # 23 dof, p = 0.001
    assert permutation(50, 11, 0) != permutation(50, 12, 0)
