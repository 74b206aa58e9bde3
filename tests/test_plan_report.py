"""`scellis.pipeline.plan_report`: a program planned and judged on a device of this machine, with the
remedies when it does not fit (what `scellis plan` prints)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from scellis.examples import digits_cnn
from scellis.levels import Level
from scellis.pipeline import compile_program, plan_report
from scellis.plan.budget import Budget, DeviceLimits
from scellis.plan.remedies import apply
from scellis.plan.report import Report
from scellis.runtime.cpu.device import CpuDevice


def plan(data: dict[str, Any], device: Any, level: Level, budget: int | None = None) -> Report:
    given = None if budget is None else Budget(budget, f"given: {budget:,} bytes")
    at = compile_program(data).at(level, device.features)
    return asyncio.run(plan_report(data, at, device, {}, given))


@pytest.fixture(scope="module")
def cpu() -> CpuDevice:
    return asyncio.run(CpuDevice.open())


def test_a_program_that_fits_is_green_with_no_advice(cpu: CpuDevice) -> None:
    report = plan(digits_cnn(), cpu, Level.PROD)
    assert report.verdict.color == "green" and report.advice is None
    assert report.plan.total == compile_program(digits_cnn()).at(Level.PROD, frozenset()).plan.total
    assert report.budget.bytes is not None and report.budget.bytes > report.plan.total
    lines = report.lines()
    assert lines[0] == f"device: {cpu.name}" and "verdict: green" in lines and not any("remed" in x for x in lines)


def test_a_smaller_budget_gets_red_with_remedies_that_each_plan_as_promised(cpu: CpuDevice) -> None:
    total = plan(digits_cnn(), cpu, Level.PROD).plan.total
    report = plan(digits_cnn(), cpu, Level.PROD, budget=int(total * 0.7))
    assert report.verdict.color == "red" and report.advice is not None and report.advice.remedies
    assert report.budget.how == f"given: {int(total * 0.7):,} bytes"
    for remedy in report.advice.remedies:  # applying a remedy is one call; its program plans what it said
        remedied = plan(apply(digits_cnn(), remedy.change), cpu, Level.PROD, budget=int(total * 0.7))
        assert remedied.plan.total == remedy.plan.total and remedied.verdict.color == remedy.verdict.color
    assert any(r.verdict.color == "green" for r in report.advice.remedies)
    assert "remedies:" in report.lines()


def test_a_device_that_measures_asynchronously_is_measured_once_around_the_need() -> None:
    class PageDevice:
        name, features, limits = "the page's WebGPU", frozenset(), DeviceLimits(1 << 30, 1 << 30, 32)

        def __init__(self) -> None:
            self.asked: list[int] = []

        async def budget(self, need: int) -> Budget:
            self.asked.append(need)
            return Budget(need // 2, "probed")

    device = PageDevice()
    report = plan(digits_cnn(), device, Level.PROD)
    assert device.asked == [report.plan.total] and report.verdict.color == "red" and report.advice is not None
