"""The loop program's rules as data: valid rules read into their forms, and every malformed rule gets an
issue naming its path and what is wrong."""

from __future__ import annotations

from typing import Any

import pytest

from scellis.examples import digits_mlp
from scellis.graph import ProgramError, validate
from scellis.graph.rules import Every, NonFinite, Plateau, Rule, SetLr, rule_text

RULES = [
    {"on": "step", "if": {"non_finite": ["loss", "gradients"]}, "then": ["skip_batch"]},
    {"on": "evaluation", "if": {"plateau": {"metric": "loss", "patience": 3}}, "then": [{"set_lr": {"scale": 0.5}}]},
    {"on": "evaluation", "if": {"plateau": {"metric": "accuracy", "patience": 10, "mode": "max"}}, "then": ["stop"]},
    {"on": "step", "if": {"every": 200}, "then": ["checkpoint"]},
    {"on": "end", "then": ["checkpoint"]},
]


def with_loop(**loop: Any) -> dict[str, Any]:
    program = digits_mlp()
    program["loop"] = {**program["loop"], **loop}
    return program


def test_rules_read_into_their_forms_and_print_as_text() -> None:
    loop = validate(with_loop(rules=RULES, evaluate_every=100)).loop
    assert loop.evaluate_every == 100
    assert loop.rules == (
        Rule("step", NonFinite(("loss", "gradients")), ("skip_batch",)),
        Rule("evaluation", Plateau("loss", 3), (SetLr(0.5),)),
        Rule("evaluation", Plateau("accuracy", 10, 0.0, "max"), ("stop",)),
        Rule("step", Every(200), ("checkpoint",)),
        Rule("end", None, ("checkpoint",)),
    )
    assert [rule_text(r) for r in loop.rules] == [
        "if the loss or any gradient is not finite: skip this batch's update (decided on the device)",
        "if loss has not fallen for 3 evaluations: learning rate x 0.5",
        "if accuracy has not risen for 10 evaluations: stop",
        "every 200 steps: checkpoint",
        "always: checkpoint",
    ]
    assert loop.rules[0].skips and not loop.rules[1].skips


@pytest.mark.parametrize(
    ("rule", "path", "message"),
    [
        ("stop", "loop.rules[0]", "a rule is an object with on, if and then, got str"),
        ({"on": "batch", "then": ["stop"]}, "loop.rules[0].on", "must be one of step, evaluation, epoch, end"),
        ({"on": "end", "then": ["checkpoint"], "when": 1}, "loop.rules[0].when", "unknown field (known: on, if, then)"),
        ({"on": "end", "then": []}, "loop.rules[0].then", "must be a non-empty list of actions"),
        ({"on": "end", "then": ["explode"]}, "loop.rules[0].then[0]", "unknown action 'explode'"),
        ({"on": "end", "then": ["stop"]}, "loop.rules[0].then[0]", "on end, the actions are checkpoint; got stop"),
        (
            {"on": "step", "then": ["skip_batch"]},
            "loop.rules[0].if",
            "on step, the condition must be non_finite or every",
        ),
        (
            {"on": "step", "if": {"non_finite": ["loss"]}, "then": ["checkpoint"]},
            "loop.rules[0]",
            "skip_batch goes with a non_finite condition",
        ),
        ({"on": "step", "if": {"non_finite": ["weights"]}, "then": ["skip_batch"]}, "loop.rules[0].if.non_finite", ""),
        ({"on": "step", "if": {"every": 0}, "then": ["checkpoint"]}, "loop.rules[0].if.every", "positive whole"),
        ({"on": "step", "if": {"sometimes": 1}, "then": ["checkpoint"]}, "loop.rules[0].if.sometimes", "unknown"),
        (
            {"on": "evaluation", "if": {"plateau": {"metric": "loss", "patience": 0}}, "then": ["stop"]},
            "loop.rules[0].if.plateau.patience",
            "must be a positive whole number of evaluations, got 0",
        ),
        (
            {"on": "evaluation", "if": {"plateau": {"metric": "loss", "patience": 2, "mode": "up"}}, "then": ["stop"]},
            "loop.rules[0].if.plateau.mode",
            "must be min or max",
        ),
        (
            {"on": "evaluation", "if": {"plateau": {"metric": "f1", "patience": 2}}, "then": ["stop"]},
            "loop.rules[0].if.plateau.metric",
            "'f1' is not one of loss, accuracy",
        ),
        (
            {"on": "evaluation", "then": [{"set_lr": {"scale": -1}}]},
            "loop.rules[0].then[0].set_lr",
            'must be {"scale": a positive number}',
        ),
    ],
)
def test_a_malformed_rule_is_named_with_its_path(rule: Any, path: str, message: str) -> None:
    with pytest.raises(ProgramError) as caught:
        validate(with_loop(rules=[rule]))
    issues = [(issue.path, issue.message) for issue in caught.value.issues]
    assert any(p == path and message in m for p, m in issues), issues


def test_rules_must_be_a_list_and_evaluate_every_a_count() -> None:
    with pytest.raises(ProgramError, match=r"loop\.rules: must be a list of rules, got dict"):
        validate(with_loop(rules={"on": "end"}))
    with pytest.raises(ProgramError, match=r"loop\.evaluate_every: must be at least 0"):
        validate(with_loop(evaluate_every=-1))
