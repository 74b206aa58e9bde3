"""The storage a share link's re-run takes (scellis.rerunstorage): the checkpoints its rules write at most,
over the steps it takes (its pinned steps, or its epochs' when fewer), each the size of the run's state."""

from __future__ import annotations

from scellis.examples import digits_mlp, ising
from scellis.graph.rules import Every, Plateau, Rule
from scellis.graph.settings import Loop
from scellis.rerunstorage import METADATA_BYTES, checkpoint_count, rerun_storage


def with_rules(program: dict, *rules: dict) -> dict:
    return {**program, "loop": {**program["loop"], "rules": list(rules)}}


EVERY_STEP = {"on": "step", "if": {"every": 1}, "then": ["checkpoint"]}


def test_every_step_for_the_most_steps_a_link_may_pin() -> None:
    program = with_rules(ising(), EVERY_STEP)  # 100 steps an epoch, no data
    bounded = rerun_storage(program, 10, 2**53, None)  # its 10 epochs end it first
    assert (bounded.steps, bounded.checkpoints) == (1000, 1001)  # every step, and the final state
    assert bounded.per_checkpoint == 64 * 64 * 64 * 1 + METADATA_BYTES  # the lattice, one byte a site
    assert bounded.bytes == bounded.checkpoints * bounded.per_checkpoint
    huge = rerun_storage(program, 10**9, 2**53, None)
    assert huge.steps == 10**11 and huge.checkpoints == 10**11 + 1


def test_runs_with_data_count_their_batches_and_no_rule_writes_only_the_final_state() -> None:
    plain = rerun_storage(digits_mlp(), 20, None, 1438)  # 22 batches of 64 an epoch
    assert (plain.steps, plain.checkpoints) == (440, 1)
    pinned = rerun_storage(
        with_rules(digits_mlp(), {"on": "step", "if": {"every": 10}, "then": ["checkpoint"]}), 20, 300, 1438
    )
    assert (pinned.steps, pinned.checkpoints) == (300, 31)


def test_each_hook_counts_at_most_what_it_can_fire() -> None:
    loop = Loop(epochs=5, evaluate_every=0, rules=(Rule("epoch", None, ("checkpoint",)),))
    assert checkpoint_count(loop, 50, 10, 5) == 5 + 1
    every2 = Loop(epochs=5, rules=(Rule("epoch", Every(2), ("checkpoint",)), Rule("end", None, ("checkpoint",))))
    assert checkpoint_count(every2, 50, 10, 5) == 2 + 1 + 1
    plateau = Loop(evaluate_every=5, rules=(Rule("evaluation", Plateau("loss", 3), ("checkpoint", "stop")),))
    assert checkpoint_count(plateau, 50, 10, 5) == (10 + 5 + 1) // 3 + 1
    no_checkpoint = Loop(rules=(Rule("step", Every(1), ("stop",)),))
    assert checkpoint_count(no_checkpoint, 50, 10, 5) == 1
