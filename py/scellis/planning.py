"""The memory plan of a compiled program as a device will hold it: each function a session compiles (the
training step, evaluation, init) lowered for a level and a device's features, updated in place and
planned, with the step's bytes by category at its peak. What `scellis plan` prints and the app shows."""

from __future__ import annotations

import inspect
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from scellis.ir.function import input_role
from scellis.levels import Level
from scellis.lower import Schedule, lower
from scellis.ops.defs import Role
from scellis.pipeline import Compiled
from scellis.plan import plan_memory, update_in_place
from scellis.plan.breakdown import Breakdown, breakdown, categories
from scellis.plan.budget import Budget, DeviceLimits, Verdict, verdict

if TYPE_CHECKING:
    from scellis.remedies import Advice
    from scellis.runtime.device import Device


@dataclass(frozen=True)
class FunctionPlan:
    name: str  # "training step", "evaluation", "evaluation, last batch" or "init"
    allocated: int  # bytes the device allocates for its buffers
    allocations: int
    naive: int  # bytes with one allocation per buffer and no in-place update
    largest: int  # the largest single allocation (what the device's per-buffer limits must admit)
    kernels: int
    bindings: int  # the most buffers one kernel binds
    schedule: Schedule  # what the device compiles: lowered for the level and features, updated in place


@dataclass(frozen=True)
class ProgramPlan:
    program: str
    level: Level
    features: frozenset[str]
    batch: int
    functions: tuple[FunctionPlan, ...]
    step: Breakdown  # the training step's bytes by category at its peak
    totals: dict[str, int]  # the training step's bytes by category over the whole step

    @property
    def total(self) -> int:
        """Bytes a session holds on the device while it trains: the step and evaluation (and the held-out
        split's last batch's, when it is smaller) stay compiled.
        Init runs once before them (WebGPU frees it; the CPU path's memory never shrinks, so there it
        stays reserved too)."""
        return sum(f.allocated for f in self.functions if f.name != "init")

    def function(self, name: str) -> FunctionPlan | None:
        return next((f for f in self.functions if f.name == name), None)


def plan_program(compiled: Compiled, level: Level, features: frozenset[str]) -> ProgramPlan:
    """Plan every function a session compiles for `level` on a device with `features`."""
    step_fn = compiled.step_for(level, features)
    functions = []
    step_breakdown = None
    named = [("training step", step_fn), ("evaluation", compiled.evaluate)]
    if compiled.evaluate_last is not None:
        named.append(("evaluation, last batch", compiled.evaluate_last))
    for title, fn in (*named, ("init", compiled.init_for(level, features))):
        logical = lower(fn, level, features)
        schedule = update_in_place(logical)
        memory = plan_memory(schedule)
        naive = memory.naive(logical)
        slots, kernels = memory.slot_bytes, schedule.kernels
        bindings = max((len({k.out.buffer, *(v.buffer for v in k.inputs)}) for k in kernels), default=0)
        functions.append(
            FunctionPlan(title, memory.allocated, len(slots), naive, max(slots), len(kernels), bindings, schedule)
        )
        if fn is step_fn:
            kinds = categories(schedule, step_fn, compiled.forward.fn, compiled.backward_for(level, features))
            step_breakdown = breakdown(schedule, memory, kinds)
            totals: dict[str, int] = {}
            for buffer, kind in zip(schedule.buffers, kinds, strict=True):
                if memory.slot_of[buffer.id] >= 0:
                    totals[kind] = totals.get(kind, 0) + buffer.nbytes
    assert step_breakdown is not None
    data = [n for n in step_fn.inputs if input_role(n) is Role.DATA]
    batch = data[0].shape[0] if data and data[0].shape else compiled.program.loop.batch_size
    return ProgramPlan(compiled.program.name, level, features, batch, tuple(functions), step_breakdown, totals)


def timeline(compiled: Compiled, plan: ProgramPlan) -> dict[str, Any]:
    """The training step's buffers over its kernels, for the Guide's memory stage: each buffer's bytes,
    its allocation (slot), what it is for (breakdown.CATEGORIES) and the kernels it lives over (`first`
    and `last`, both included; null for a function input or output, which lives the whole step). Buffers
    no kernel uses have no slot and are left out."""
    step = plan.functions[0]
    schedule, level, features = step.schedule, plan.level, plan.features
    memory = plan_memory(schedule)
    kinds = categories(
        schedule, compiled.step_for(level, features), compiled.forward.fn, compiled.backward_for(level, features)
    )
    buffers = []
    for buffer, kind in zip(schedule.buffers, kinds, strict=True):
        slot = memory.slot_of[buffer.id]
        if slot < 0:
            continue
        span = memory.lifetimes[buffer.id]
        first, last = (None, None) if span is None else span
        entry = {"id": buffer.id, "name": buffer.name, "bytes": buffer.nbytes, "slot": slot, "category": kind}
        buffers.append({**entry, "first": first, "last": last})
    return {
        "kernels": len(schedule.kernels),
        "slots": list(memory.slot_bytes),
        "peak_live": memory.peak_live,
        "peak_kernel": memory.peak_kernel,
        "buffers": buffers,
    }


def judge(plan: ProgramPlan, limits: DeviceLimits, budget: Budget) -> Verdict:
    """The plan's verdict on a device with `limits` and `budget` (thresholds: plan.budget)."""
    largest = max(f.largest for f in plan.functions)
    bindings = max(f.bindings for f in plan.functions)
    return verdict(plan.total, largest, bindings, limits, budget)


def describe(plan: ProgramPlan) -> list[str]:
    """The plan as text, a line per fact (bytes with thousands separators, so they can be checked)."""
    features = ", ".join(sorted(plan.features)) or "none"
    lines = [f"memory plan: {plan.program} at level {plan.level.value}, batch {plan.batch} (features: {features})"]
    for f in plan.functions:
        ratio = f.naive / f.allocated if f.allocated else 1.0
        lines.append(
            f"  {f.name}: {f.allocated:,} bytes in {f.allocations} allocations, the largest {f.largest:,} "
            f"({f.kernels} kernels; one allocation per buffer would take {f.naive:,}: {ratio:.2f}x)"
        )
    lines.append(f"  held while training (step and evaluation): {plan.total:,} bytes")
    where = f"kernel {plan.step.peak_kernel}" if plan.step.peak_kernel >= 0 else "the step's start"
    lines.append(f"  training step at its peak ({where}), by category:")
    lines += [f"    {name}: {size:,}" for name, size in plan.step.bytes.items() if size]
    return lines


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


def plan(
    program: dict[str, Any],
    device: Device,
    level: Level,
    *,
    eval_batch: int | None = None,
    eval_rows: int | None = None,
    examples: int | None = None,
    budget: int | None = None,
) -> Report:
    """Plan `program` (JSON) as a session on `device` would hold it, judge it against the device's
    measured budget (or `budget` bytes, when given: planning for a smaller device), and when the verdict
    is not green gather the remedies. For devices that measure synchronously (CPython's); the page
    plans through scellis.app, whose device probes asynchronously."""
    from scellis.pipeline import compile_program
    from scellis.remedies import advise, device_judge

    def budget_for(need: int) -> Budget:
        if budget is not None:
            return Budget(budget, f"given: {budget:,} bytes")
        measured = device.budget(need)
        if inspect.isawaitable(measured):
            if inspect.iscoroutine(measured):
                measured.close()  # never started: nothing reached the device
            raise TypeError(f"{device.name} measures its budget asynchronously: plan in the page (scellis.app)")
        return measured

    compiled = compile_program(program, eval_batch=eval_batch, examples=examples, eval_rows=eval_rows)
    planned = plan_program(compiled, level, device.features)
    given = budget_for(planned.total)
    judged = judge(planned, device.limits, given)
    advice = None
    if judged.color != "green":
        on_device = device_judge(device.limits, budget_for)
        sizes = {"eval_batch": eval_batch, "examples": examples, "eval_rows": eval_rows}
        advice = advise(program, level, device.features, given, on_device, **sizes)
    return Report(device.name, planned, given, judged, advice)
