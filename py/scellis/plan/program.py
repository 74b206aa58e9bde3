"""Stage: memory. The plan of every function a session compiles (the training step, evaluation, init) at
one level on a device with given features: each planned once (plan.planned), with the step's bytes by
category at its peak. What `scellis plan` prints and the app shows.

Expects the functions as the pipeline decided them for the level (pipeline.Compiled.at), the step first.
Guarantees: each FunctionPlan's `planned` is exactly what a device compiles and allocates."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from scellis.ir import Function
from scellis.ir.function import input_name, input_role
from scellis.levels import Level
from scellis.lower import Schedule
from scellis.ops.defs import Role
from scellis.plan.breakdown import Breakdown, breakdown, categories
from scellis.plan.budget import Budget, DeviceLimits, Verdict, verdict
from scellis.plan.planned import Planned, alongside, lowered, planned


@dataclass(frozen=True)
class FunctionPlan:
    name: str  # "training step", "evaluation", "evaluation, last batch" or "init"
    planned: Planned  # what the device compiles and allocates
    bindings: int  # the most buffers one kernel binds

    @property
    def schedule(self) -> Schedule:
        return self.planned.schedule

    @property
    def allocated(self) -> int:
        """Bytes the device allocates for its buffers (not those it borrows: planned.alongside)."""
        return self.planned.allocated

    @property
    def allocations(self) -> int:
        return sum(1 for slot in range(len(self.planned.memory.slot_bytes)) if self.planned.owns(slot))

    @property
    def naive(self) -> int:
        """Bytes with one allocation per buffer and no in-place update."""
        return self.planned.naive

    @property
    def largest(self) -> int:
        """The largest single allocation (what the device's per-buffer limits must admit)."""
        sizes = self.planned.memory.slot_bytes
        return max((size for slot, size in enumerate(sizes) if self.planned.owns(slot)), default=0)

    @property
    def kernels(self) -> int:
        return len(self.planned.schedule.kernels)


@dataclass(frozen=True)
class ProgramPlan:
    program: str
    level: Level
    features: frozenset[str]
    batch: int
    functions: tuple[FunctionPlan, ...]  # the training step first
    step: Breakdown  # the training step's bytes by category at its peak
    totals: dict[str, int]  # the training step's bytes by category over the whole step
    kinds: tuple[str, ...]  # the category of each of the step's buffers (breakdown.CATEGORIES)
    parameters: tuple[tuple[int, ...], ...]  # the shapes of the step's parameters

    @property
    def total(self) -> int:
        """Bytes a session holds on the device while it trains: the step and evaluation (and the held-out
        split's last batch's, when it is smaller) stay compiled.
        Init runs once before them (WebGPU frees it; the CPU path's memory never shrinks, so there it
        stays reserved too)."""
        return sum(f.allocated for f in self.functions if f.name != "init")

    def function(self, name: str) -> FunctionPlan | None:
        return next((f for f in self.functions if f.name == name), None)


def plan_program(
    program: str,
    functions: Sequence[tuple[str, Function]],
    phases: tuple[Function, Function],
    level: Level,
    features: frozenset[str],
    *,
    batch: int,
    step_schedule: Schedule | None = None,
) -> ProgramPlan:
    """Plan every function in `functions` ((title, function), the training step first) for `level` on a
    device with `features`. `phases` are the forward and backward functions the step was built from (what
    its buffers are for); `batch` is the program's batch, used when the step reads no data;
    `step_schedule`, when given, is the step already lowered for this level (not lowered again)."""
    plans: list[FunctionPlan] = []
    for i, (title, fn) in enumerate(functions):
        done = planned(step_schedule) if i == 0 and step_schedule is not None else lowered(fn, level, features)
        kernels = done.schedule.kernels
        bindings = max((len({*(v.buffer for v in (*k.writes, *k.inputs))}) for k in kernels), default=0)
        if i and title.startswith("evaluation"):  # compiled alongside the step (planned.alongside)
            carried = [input_name(n) for n in fn.inputs if input_role(n) in (Role.PARAM, Role.STATE)]
            done = alongside(plans[0].planned, done, carried)
        plans.append(FunctionPlan(title, done, bindings))
    step_fn, step = functions[0][1], plans[0].planned
    kinds = categories(step.schedule, step_fn, *phases)
    totals: dict[str, int] = {}
    for buffer, kind in zip(step.schedule.buffers, kinds, strict=True):
        if step.memory.slot_of[buffer.id] >= 0:
            totals[kind] = totals.get(kind, 0) + buffer.nbytes
    data = [n for n in step_fn.inputs if input_role(n) is Role.DATA]
    batch = data[0].shape[0] if data and data[0].shape else batch
    params = tuple(n.shape for n in step_fn.inputs if input_role(n) is Role.PARAM)
    found = breakdown(step.schedule, step.memory, kinds)
    return ProgramPlan(program, level, features, batch, tuple(plans), found, totals, tuple(kinds), params)


def timeline(plan: ProgramPlan) -> dict[str, Any]:
    """The training step's buffers over its kernels, for the Guide's memory stage: each buffer's bytes,
    its allocation (slot), what it is for (breakdown.CATEGORIES) and the kernels it lives over (`first`
    and `last`, both included; null for a function input or output, which lives the whole step). Buffers
    no kernel uses have no slot and are left out."""
    schedule, memory = plan.functions[0].planned.schedule, plan.functions[0].planned.memory
    buffers = []
    for buffer, kind in zip(schedule.buffers, plan.kinds, strict=True):
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
