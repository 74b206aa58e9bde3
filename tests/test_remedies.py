"""Remedies: the largest batch that plans green on a budget-limited device, and the capacity facts when
no batch fits (no device: budgets are given)."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from scellis import cli
from scellis.examples import deep_chain, digits_cnn
from scellis.levels import Level
from scellis.pipeline import compile_program, planner
from scellis.plan.budget import GREEN_SHARE, Budget, DeviceLimits
from scellis.plan.remedies import Judge, Target, advise, apply, capacity, device_judge, fsdp_bytes, smaller_batch

LIMITS = DeviceLimits(1 << 30, 1 << 30, 32)


def fixed(budget: int) -> Judge:
    return device_judge(LIMITS, Budget(budget, "a test budget"))


def target(budget: int) -> Target:
    return Target(planner(Level.PROD, frozenset()), fixed(budget))


def test_the_largest_green_batch_is_found_and_one_more_is_not() -> None:
    data = digits_cnn()
    full = compile_program(data).at(Level.PROD, frozenset()).plan
    budget = int(full.total * 0.7)  # batch 64 does not fit
    remedy = smaller_batch(data, full.batch, target(budget))
    assert remedy is not None and remedy.verdict.color == "green" and remedy.change == {"batch": remedy.plan.batch}
    assert remedy.plan.total <= GREEN_SHARE * budget
    above = compile_program(data, batch=remedy.plan.batch + 1).at(Level.PROD, frozenset()).plan
    assert above.total > GREEN_SHARE * budget  # re-planned at batch + 1: no longer green


def test_checkpointing_is_offered_between_the_two_totals_and_plans_green() -> None:
    data = deep_chain(40, width=16)  # activations a large share of the total: checkpointing saves 24 %
    plain = compile_program(data).at(Level.PROD, frozenset()).plan.total
    cut = compile_program(apply(data, {"checkpoint": True})).at(Level.PROD, frozenset()).plan.total
    budget = math.ceil(cut / GREEN_SHARE)  # green with checkpointing, red without
    assert cut < budget < plain
    planned = compile_program(data).at(Level.PROD, frozenset()).plan
    advice = advise(data, planned, Budget(budget, "a test budget"), target(budget))
    remedy = next(r for r in advice.remedies if r.name == "activation checkpointing")
    assert remedy.change == {"checkpoint": True} and remedy.verdict.color == "green" and remedy.plan.total == cut
    applied = compile_program(apply(data, remedy.change)).at(Level.PROD, frozenset()).plan
    assert applied.total == cut and fixed(budget)(applied).color == "green"
    assert fixed(budget)(compile_program(data).at(Level.PROD, frozenset()).plan).color == "red"


def test_capacity_when_no_batch_can_fit() -> None:
    compiled = compile_program(digits_cnn())
    plan = compiled.at(Level.PROD, frozenset()).plan
    fixed_bytes = sum(plan.totals.get(k, 0) for k in ("parameters", "gradients", "optimizer state"))
    assert capacity(plan, Budget(fixed_bytes, "enough for the fixed part")) == []
    lines = capacity(plan, Budget(fixed_bytes - 1, "too little"))
    assert lines[0] == (
        f"no batch size fits: parameters, gradients and optimizer state alone need {fixed_bytes:,} bytes, "
        f"more than the budget of {fixed_bytes - 1:,}"
    )
    assert lines[1].startswith("QLoRA-style adapters") and "sharded over 2 devices" in lines[2]
    found = re.match(
        r"fully sharded \(FSDP\) over (\d+) devices, each taking 1/\1 of a batch: about ([\d,]+) bytes", lines[3]
    )
    assert found is not None, lines[3]
    devices, each = int(found[1]), int(found[2].replace(",", ""))
    assert each == fsdp_bytes(plan, devices) <= fixed_bytes - 1 < fsdp_bytes(plan, devices - 1)
    assert fsdp_bytes(plan, 4) < fsdp_bytes(plan, 2) < plan.total
    assert "each device still needs all of the above" in lines[4]
    assert smaller_batch(digits_cnn(), 64, target(fixed_bytes - 1)) is None


def test_cli_plan_with_a_budget_offers_the_remedy(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    program = tmp_path / "cnn.json"
    program.write_text(json.dumps(digits_cnn()))
    total = compile_program(digits_cnn()).at(Level.PROD, frozenset()).plan.total
    budget = int(total * 0.7)
    assert cli.main(["plan", str(program), "--device", "cpu", "--level", "prod", "--budget", str(budget)]) == 1
    out = capsys.readouterr().out
    assert f"verdict: red\n  - needs {total:,} bytes, more than the budget of {budget:,}" in out
    assert "remedies:\n  - batch " in out and ", green" in out
