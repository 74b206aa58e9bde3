"""The host's side of the loop program: the text the Guide shows, plateau decisions from given metrics,
skips logged from the device's counters, and the state's JSON round trip (what a checkpoint keeps)."""

from __future__ import annotations

import pytest

from scellis.examples import digits_mlp
from scellis.graph import validate
from scellis.loop import LoopState, loop_text

RULES = [
    {"on": "step", "if": {"non_finite": ["loss"]}, "then": ["skip_batch"]},
    {"on": "evaluation", "if": {"plateau": {"metric": "accuracy", "patience": 2, "mode": "max"}}, "then": ["stop"]},
    {"on": "end", "then": ["checkpoint"]},
]


def state() -> LoopState:
    program = digits_mlp()
    program["loop"] = {**program["loop"], "rules": RULES, "evaluate_every": 50}
    return LoopState(validate(program).loop.rules)


def test_the_loop_program_reads_as_text() -> None:
    program = digits_mlp()
    program["loop"] = {**program["loop"], "rules": RULES, "evaluate_every": 50}
    assert loop_text(validate(program).loop) == "\n".join(
        [
            "repeat 20 epochs:",
            "  for each batch of 64 examples (shuffled by the shuffle substream): one training step",
            "  evaluate on the held-out split every 50 steps",
            "after each step:",
            "  if the loss is not finite: skip this batch's update (decided on the device)",
            "after each evaluation:",
            "  if accuracy has not risen for 2 evaluations: stop",
            "at the end:",
            "  always: checkpoint",
        ]
    )
    assert loop_text(validate(digits_mlp()).loop).endswith(
        "no rules: every step updates, the learning rate follows its schedule, all epochs run"
    )


def test_a_plateau_counts_evaluations_without_improvement() -> None:
    loop = state()
    for step, accuracy in ((50, 0.5), (100, 0.6), (150, 0.6), (200, 0.59)):
        assert loop.after_evaluation(step, 1, {"loss": 1.0, "metric/accuracy": accuracy}) == []
        assert not loop.stopped or step == 200
    assert loop.stopped and [str(e) for e in loop.events] == [
        "step 200 (epoch 1): stop, accuracy has not improved on 0.6 for 2 evaluations"
    ]
    assert loop.at_end(200, 1) == ["checkpoint"]


def test_skips_are_logged_from_the_counters() -> None:
    loop = state()
    loop.note_skips(100, 1, 0, 0)
    loop.note_skips(100, 1, 1, 41)
    loop.note_skips(200, 2, 4, 187)
    loop.note_skips(300, 2, 4, 187)
    assert [str(e) for e in loop.events] == [
        "step 42 (epoch 1): skipped, the loss or a gradient was not finite",
        "step 200 (epoch 2): 3 steps skipped, the last at step 188: the loss or a gradient was not finite",
    ]


def test_the_state_round_trips_through_json_and_a_malformed_one_is_refused() -> None:
    loop = state()
    loop.after_evaluation(50, 1, {"loss": 1.0, "metric/accuracy": 0.5})
    loop.note_skips(60, 1, 2, 55)
    again = LoopState.from_json(loop.rules, loop.to_json())
    assert again == loop
    with pytest.raises(ValueError, match="the loop state is malformed"):
        LoopState.from_json(loop.rules, {"lr_scale": 1.0})
