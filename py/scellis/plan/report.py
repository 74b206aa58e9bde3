"""Stage: memory. A program planned on a device, as `scellis plan` prints it and the page's plan panel
shows it: the plan, the budget it was judged against, the verdict and, when it is not green, the advice.

Expects a plan (plan.program), the measured budget, the verdict and the advice (plan.remedies) already
made; it only presents them."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from scellis.plan.budget import Budget, Verdict
from scellis.plan.program import ProgramPlan, describe
from scellis.plan.remedies import Advice


@dataclass(frozen=True)
class Report:
    """A program planned on a device: the plan, the budget it was judged against, the verdict, and when
    the verdict is not green what could help (remedies re-planned, capacity figures)."""

    device: str
    plan: ProgramPlan
    budget: Budget
    verdict: Verdict
    advice: Advice | None

    def lines(self) -> list[str]:
        """The report as text (what `scellis plan` prints)."""
        out = [f"device: {self.device}", *describe(self.plan), f"verdict: {self.verdict.color}"]
        out += [f"  - {reason}" for reason in self.verdict.reasons]
        if self.advice is not None:
            found = [
                f"{r.name}: {r.plan.total:,} bytes, {r.verdict.color} ({_change(r.change)})"
                for r in self.advice.remedies
            ]
            found += self.advice.capacity
            out.append("remedies:" if found else "remedies: none found")
            out += [f"  - {line}" for line in found]
        return out


def _change(change: dict[str, Any]) -> str:
    return ", ".join(f"{key} {json.dumps(value)}" for key, value in change.items())
