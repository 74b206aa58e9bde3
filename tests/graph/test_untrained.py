"""Programs without a loss (simulations, analyses): what validation refuses and names, what the new drawn
ops compute (against numpy, through the float64 reference of their lowered IR), and what such a
program's step, results, loop text and Guide stages are."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from scellis import examples
from scellis.graph import Program, ProgramError, Ref, validate
from scellis.graph.building import Mode
from scellis.guide import guide_links, stages
from scellis.ir import Function
from scellis.ir.from_program import forward_values
from scellis.ir.function import toposort
from scellis.levels import Level
from scellis.ops import Op
from scellis.pipeline import compile_program
from scellis.rng import substream_key
from scellis.runtime.reference import oracle as reference
from scellis.runtime.reference.device import ReferenceDevice
from scellis.session import Session

RNG = np.random.default_rng(5)


def issues(data: dict) -> list[tuple[str, str | None, str]]:
    with pytest.raises(ProgramError) as caught:
        validate(data)
    return [(i.path, i.node, i.message) for i in caught.value.issues]


def simulation() -> Program:
    """A counter: a state that grows by one a step, reported as a result."""
    p = Program("counter")
    total = p.state([], value=0.0, id="total")
    p.update(total, p.add(total, p.constant(1.0, id="one"), id="grown"), id="next_total")
    p.add_metric(p.mean(total, id="count"))
    p.set_loop(epochs=2, steps=5, batch_size=3)
    return p


# -- validation --------------------------------------------------------------------------------------


def test_a_simulation_validates_without_loss_or_optimizer() -> None:
    data = simulation().to_json()
    assert data["loss"] is None and "optimizer" not in data
    valid = validate(data)
    assert not valid.trains and not valid.has_data and valid.loop.steps == 5


def test_a_program_without_a_loss_trains_nothing() -> None:
    p = Program("no-loss")
    h = p.linear(p.input("x", [4]), 2, id="layer")
    p.add_metric(p.sum(h, id="total"))
    p.set_optimizer("sgd", lr=0.1)
    assert issues(p.to_json()) == [
        ("optimizer", None, "the program has no loss, so nothing is trained: remove the optimizer"),
        (
            "nodes",
            "layer",
            "its parameters are trainable, but the program has no loss to train them: set trainable to false, or "
            "name a loss",
        ),
    ]


def test_a_program_without_a_loss_must_report_or_carry_something() -> None:
    p = Program("idle")
    p.relu(p.input("x", [4]))
    [(path, node, message)] = issues(p.to_json())
    assert (path, node) == ("metrics", None) and "list at least one node" in message


def test_rules_about_the_loss_are_refused_without_one() -> None:
    data = simulation().to_json()
    data["loop"]["rules"] = [
        {"on": "step", "if": {"non_finite": ["loss"]}, "then": ["skip_batch"]},
        {"on": "evaluation", "if": {"plateau": {"metric": "loss", "patience": 2}}, "then": ["stop"]},
    ]
    found = issues(data)
    assert ("loop.rules[0]", None, "watches the loss or gradients, but the program has no loss") in found
    assert ("loop.rules[1]", None, "watches the loss, but the program has no loss") in found


def test_update_takes_a_state_straight_and_once() -> None:
    p = simulation()
    p.update(p.add(Ref("total"), p.constant(2.0, id="two"), id="shifted"), Ref("grown"), id="bad")
    p.update(Ref("total"), Ref("grown"), id="again")
    found = issues(p.to_json())
    assert ("nodes", "bad", "the state input must come straight from a state node") in found
    assert ("nodes", "again", "total.value has its next value from another node already: one update a state") in found


def test_update_needs_the_states_type() -> None:
    p = Program("mismatch")
    lattice = p.state([2, 2], id="lattice")
    p.update(lattice, p.constant(1.0, id="one"), id="flat")
    p.add_metric(p.sum(lattice, id="total"))
    [(path, node, message)] = issues(p.to_json())
    assert (path, node) == (
        "nodes",
        "flat",
    ) and message == "the next value f32[] must have the state's type f32[64,2,2]"


@pytest.mark.parametrize(
    ("substream", "message"),
    [
        ("init", "the substream 'init' is the engine's own (init, shuffle are): name another"),
        ("x y", "must be a name of letters, digits, _ or - (not starting with a digit), got 'x y'"),
    ],
)
def test_substream_names_are_checked(substream: str, message: str) -> None:
    p = Program("draws")
    p.add_metric(p.mean(p.random([3], substream=substream, id="draw"), id="average"))
    [(_, node, got)] = issues(p.to_json())
    assert (node, got) == ("draw", message)


# -- what the new ops compute -------------------------------------------------------------------------


def evaluate(build: Callable[[Program], Ref], inputs: dict[str, np.ndarray], batch: int) -> np.ndarray:
    """The value of the node `build` returns, in evaluation mode, by the float64 reference."""
    p = Program("op")
    out = build(p)
    p.add_metric(p.sum(out, id="reported"))
    p.set_loop(batch_size=batch, **({} if any(n["op"] == "input" for n in p.nodes) else {"steps": 1}))
    _, values = forward_values(validate(p.to_json()), Mode.EVAL)
    node = values[out.node]
    used = [n for n in toposort([node]) if n.op is Op.INPUT]
    fn = Function("op", tuple(used), (("out", node),))
    return np.asarray(reference.run(fn, inputs)["out"])


def test_roll_is_numpys_roll() -> None:
    x = RNG.standard_normal((3, 4, 5))
    for shift, axis in ((1, 1), (-1, 2), (7, 1), (0, 2), (2, 0)):
        got = evaluate(lambda p, s=shift, a=axis: p.roll(p.input("x", [4, 5]), s, axis=a), {"x": x}, 3)
        np.testing.assert_array_equal(got, np.roll(x, shift, axis=axis))


@pytest.mark.parametrize(("shape", "parity"), [((4, 6), 0), ((5, 3), 1), ((1, 1), 0), ((2, 7), 1)])
def test_checkerboard_colours_squares_by_the_parity_of_row_plus_column(shape: tuple, parity: int) -> None:
    got = evaluate(lambda p: p.checkerboard(list(shape), parity=parity), {}, 2)
    rows, cols = np.indices(shape)
    np.testing.assert_array_equal(got, ((rows + cols) % 2 == parity).astype(float)[None])


def test_std_error_is_the_standard_error_of_the_mean() -> None:
    x = RNG.standard_normal((50, 3))
    got = evaluate(lambda p: p.std_error(p.input("x", [3]), axes=[0]), {"x": x}, 50)
    np.testing.assert_allclose(got, x.std(axis=0, ddof=1) / np.sqrt(50))


@pytest.mark.parametrize("n", [1, 2, 7, 2000])
@pytest.mark.parametrize("q", [0.0, 0.025, 0.5, 0.975, 1.0])
def test_quantile_is_numpys_linear_quantile(n: int, q: float) -> None:
    x = RNG.standard_normal((n, 2))
    got = evaluate(lambda p: p.quantile(p.input("x", [2]), q, axis=0), {"x": x}, n)
    np.testing.assert_allclose(got, np.quantile(x, q, axis=0), rtol=1e-12)


def test_sort_element_diagonal_and_inverse() -> None:
    x, a = RNG.standard_normal((6, 3)), RNG.standard_normal((2, 4, 4)) + 4 * np.eye(4)
    np.testing.assert_array_equal(evaluate(lambda p: p.sort(p.input("x", [3]), axis=0), {"x": x}, 6), np.sort(x, 0))
    assert evaluate(lambda p: p.element(p.input("x", [3]), [-1, 1]), {"x": x}, 6) == x[-1, 1]
    np.testing.assert_array_equal(
        evaluate(lambda p: p.diagonal(p.input("a", [4, 4])), {"a": a}, 2), np.diagonal(a, axis1=1, axis2=2)
    )
    np.testing.assert_allclose(evaluate(lambda p: p.inverse(p.input("a", [4, 4])), {"a": a}, 2), np.linalg.inv(a))


def test_constants_with_a_shape_and_float_casts() -> None:
    got = evaluate(lambda p: p.constant(2.5, shape=[2], batched=True), {}, 3)
    np.testing.assert_array_equal(got, np.full((3, 2), 2.5))
    k = np.array([[1, 0, 3]])
    np.testing.assert_array_equal(evaluate(lambda p: p.float(p.input("k", [3], dtype="int32")), {"k": k}, 1), k)


def test_bootstrap_resamples_whole_rows() -> None:
    x = np.arange(10.0).reshape(5, 2) * [1, 100]
    key = np.array(substream_key(3, "bootstrap"), dtype=np.uint32)
    got = evaluate(lambda p: p.bootstrap(p.input("x", [2]), resamples=4), {"x": x, "rng.bootstrap": key}, 5)
    assert got.shape == (4, 5, 2)
    assert all(any((row == x).all(axis=1)) for row in got.reshape(-1, 2))  # every row is one of x's rows
    assert len({tuple(r) for r in got[:, :, 0].tolist()}) == 4  # four different resamples


# -- a run of a program without a loss ----------------------------------------------------------------


def run_counter(program: dict[str, Any], steps: int | None = None) -> tuple[list, Session]:
    async def go() -> tuple[list, Session]:
        session = Session(program, ReferenceDevice(), seed=1, level=Level.DEBUG)
        await session.start()
        return await session.run(None, None, steps=steps), session

    return asyncio.run(go())


def test_a_simulation_carries_its_state_and_reports_results_each_epoch() -> None:
    results, session = run_counter(simulation().to_json())
    assert [(r.epoch, r.steps, r.metrics) for r in results] == [
        (0, 5, {"metric/count": 5.0}),
        (1, 10, {"metric/count": 10.0}),
    ]
    assert np.isnan(results[-1].loss) and session.steps == 10


def test_per_run_draws_repeat_at_every_step_and_per_step_draws_do_not() -> None:
    p = Program("draws")
    seen = {}
    for per in ("run", "step"):
        kept = p.state([], id=f"kept_{per}")
        draw = p.random([], substream="noise", per=per, id=f"draw_{per}")
        first = p.state([], value=-1.0, id=f"first_{per}")  # the first step's draw, kept
        unset = p.less(first, p.constant(0.0, id=f"zero_{per}"), id=f"unset_{per}")
        p.update(first, p.where(unset, draw, first, id=f"keep_{per}"), id=f"next_first_{per}")
        p.update(kept, draw, id=f"next_kept_{per}")
        changed = p.sub(kept, first, id=f"changed_{per}")
        seen[per] = p.max(p.abs(changed, id=f"gap_{per}"), id=f"moved_{per}")
        p.add_metric(seen[per])
    p.set_loop(epochs=1, steps=4, batch_size=16)
    results, _ = run_counter(p.to_json())
    assert results[-1].metrics["metric/moved_run"] == 0.0
    assert results[-1].metrics["metric/moved_step"] > 0.0


def test_the_loop_text_and_the_guide_say_what_a_simulation_does() -> None:
    compiled = compile_program(examples.option_pricing(1024, 8))
    shown = dict(stages(compiled.at(Level.PROD)))
    assert (
        "8 steps, each on 1024 replicas side by side: one step (its states carried to the next)"
        in shown["loop program"]
    )
    assert "compute the results from the states at the end of each epoch" in shown["loop program"]
    assert shown["backward IR"].startswith("# none: the program has no loss")
    assert "random[distribution=normal, substream=paths" in shown["typed IR"]
    assert "metric/european" in shown["evaluation IR"]
    assert guide_links(compiled.at(Level.PROD))["kernels"]


def test_progress_of_a_simulation_names_results_not_a_loss() -> None:
    said = []

    async def go() -> None:
        session = Session(simulation().to_json(), ReferenceDevice(), seed=1, level=Level.DEBUG)
        session.progress = said.append
        await session.start()
        await session.run(None, None)

    asyncio.run(go())
    assert str(said[-1]).startswith("step 10/10 (epoch 2/2), ")
    assert "loss" not in str(said[-1]) and "results: count 10" in str(said[-1])


def test_a_simulation_fits_any_data_and_the_analysis_only_the_breast_cancer_data() -> None:
    from scellis.app import _builtin_fits
    from scellis.datafit import fit_problems
    from scellis.datasets import CANCER_INFO, DIGITS_INFO

    option = examples.option_pricing(64, 4)
    assert fit_problems(option, compile_program(option), DIGITS_INFO) == []
    analysis = examples.logistic_bootstrap(resamples=10)
    compiled = compile_program(analysis)
    assert fit_problems(analysis, compiled, CANCER_INFO) == []
    [problem] = fit_problems(analysis, compiled, DIGITS_INFO)
    assert problem.startswith("input 'features' takes examples of shape [30] (30 values)")
    assert _builtin_fits(analysis, compiled) == ["cancer"]
