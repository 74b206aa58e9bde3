"""What to do when a plan does not fit: each remedy re-planned with its new peak, and, when nothing that
depends on the batch can help, the capacity facts stated plainly. What `scellis plan` prints after a
verdict that is not green, and the app's plan panel offers as buttons.

Remedies here: streaming a resident data set, activation checkpointing, and a smaller batch (the largest
batch whose plan is green); float16 storage where the device has shader-f16. Each is a change to the
program JSON (`apply`), so applying one is one call and its plan is exactly what was promised. Capacity:
when parameters, gradients and optimizer state alone exceed the budget, no batch size fits; the figures
for QLoRA-style adapters, optimizer-state sharding and pooling devices follow."""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from scellis.graph import validate
from scellis.ir.function import input_role
from scellis.levels import Level
from scellis.ops.defs import Role
from scellis.optim.storage import STORAGES
from scellis.pipeline import Compiled, compile_program
from scellis.plan.budget import Budget, DeviceLimits, Verdict
from scellis.planning import ProgramPlan, judge, plan_program

FIXED = ("parameters", "gradients", "optimizer state", "mixed-precision master copy")
LORA_RANK = 8
QUANT_BLOCK = 64  # 4-bit weights in blocks of 64 with one float16 scale each


CHANGES = {  # a remedy's change -> where it goes in the program JSON
    "batch": ("loop", "batch_size"),
    "checkpoint": ("memory", "checkpoint"),
    "data": ("memory", "data"),
    "storage": ("memory", "storage"),
}


def apply(program: dict[str, Any], change: dict[str, Any]) -> dict[str, Any]:
    """The program with a remedy's change applied: a new program JSON (the given one is not touched),
    validated, so what a remedy's plan promised is what the program now plans."""
    unknown = sorted(set(change) - set(CHANGES))
    if unknown:
        raise ValueError(f"unknown remedy change {', '.join(unknown)} (known: {', '.join(CHANGES)})")
    out = copy.deepcopy(program)
    for key, value in change.items():
        section, field = CHANGES[key]
        if not isinstance(out.get(section, {}), dict):
            raise ValueError(f"the program's {section!r} must be an object to apply {key!r}")
        out.setdefault(section, {})[field] = value
    validate(out)
    return out


@dataclass(frozen=True)
class Remedy:
    name: str
    change: dict[str, Any]  # what to apply, e.g. {"batch": 32}
    plan: ProgramPlan
    verdict: Verdict


Judge = Callable[[ProgramPlan], Verdict]


def device_judge(limits: DeviceLimits, budget: Callable[[int], Budget]) -> Judge:
    """A plan's verdict on a device: its limits, and its budget measured for the plan's need."""
    return lambda plan: judge(plan, limits, budget(plan.total))


@dataclass(frozen=True)
class Target:
    """Where and how the remedied program would run: the level, the device's features and its verdict,
    and what the session compiles besides the program (`eval_batch`: rows evaluated a call, the training
    batch unless given; `examples`: the training split's size, for a resident data set; `eval_rows`: the
    held-out split's size, whose last batch may need an evaluation of its own)."""

    level: Level
    features: frozenset[str]
    judge: Judge
    eval_batch: int | None = None
    examples: int | None = None
    eval_rows: int | None = None

    def compile(self, data: dict[str, Any]) -> Compiled:
        return compile_program(data, eval_batch=self.eval_batch, examples=self.examples, eval_rows=self.eval_rows)

    def plan(self, data: dict[str, Any]) -> ProgramPlan:
        compiled = self.compile(data)
        return plan_program(compiled, self.level, self.features)

    def remedy(self, data: dict[str, Any], change: dict[str, Any], name: str) -> Remedy:
        """A remedy: the program with `change` applied, planned again and judged on the device."""
        plan = self.plan(apply(data, change))
        return Remedy(name, change, plan, self.judge(plan))


def replan(
    data: dict[str, Any],
    change: dict[str, Any],
    name: str,
    *,
    level: Level,
    features: frozenset[str],
    judge: Judge,
    eval_batch: int | None = None,
    examples: int | None = None,
    eval_rows: int | None = None,
) -> Remedy:
    """A remedy: the program with `change` applied, planned again and judged on the device (see Target)."""
    return Target(level, features, judge, eval_batch, examples, eval_rows).remedy(data, change, name)


def _largest_green_batch(data: dict[str, Any], batch: int, target: Target) -> Remedy | None:
    low, high, best = 1, batch - 1, None
    while low <= high:
        middle = (low + high) // 2
        remedy = target.remedy(data, {"batch": middle}, f"batch {middle}")
        if remedy.verdict.color == "green":
            best, low = remedy, middle + 1
        else:
            high = middle - 1
    return best


def smaller_batch(
    data: Any, level: Level, features: frozenset[str], batch: int, verdict_of: Judge, *, eval_batch: int | None = None
) -> Remedy | None:
    """The largest batch below `batch` whose plan is green (binary search: memory grows with the batch)."""
    return _largest_green_batch(data, batch, Target(level, features, verdict_of, eval_batch))


@dataclass(frozen=True)
class Advice:
    remedies: tuple[Remedy, ...]  # each lowers the peak; green ones first, then by bytes
    capacity: tuple[str, ...]  # when no batch fits: the figures that would


def advise(
    data: dict[str, Any],
    level: Level,
    features: frozenset[str],
    budget: Budget,
    verdict_of: Judge,
    *,
    eval_batch: int | None = None,
    examples: int | None = None,
    eval_rows: int | None = None,
) -> Advice:
    """What could make `data` fit: every remedy that lowers its plan's bytes, each re-planned and judged,
    and the capacity facts when the batch-independent bytes alone exceed `budget` (see Target for
    `eval_batch`, `examples` and `eval_rows`)."""
    target = Target(level, features, verdict_of, eval_batch, examples, eval_rows)
    compiled = target.compile(data)
    plan = plan_program(compiled, level, features)
    memory = compiled.program.memory
    found: list[Remedy] = []
    if memory.data == "resident":
        found.append(target.remedy(data, {"data": "stream"}, "stream the data set"))
    if not memory.checkpoint:
        found.append(target.remedy(data, {"checkpoint": True}, "activation checkpointing"))
    if memory.storage != "float16" and not STORAGES["float16"] - features:  # needs shader-f16
        found.append(target.remedy(data, {"storage": "float16"}, "float16 storage"))
    batch = _largest_green_batch(data, plan.batch, target)
    if batch is not None:
        found.append(batch)
    useful = [r for r in found if r.plan.total < plan.total]
    useful.sort(key=lambda r: (r.verdict.color != "green", r.plan.total))
    return Advice(tuple(useful), tuple(capacity(compiled, plan, budget)))


def capacity(compiled: Compiled, plan: ProgramPlan, budget: Budget) -> list[str]:
    """When the batch-independent bytes alone exceed the budget: say no batch fits, and what would."""
    fixed = sum(plan.totals.get(name, 0) for name in FIXED)
    if budget.bytes is None or fixed <= budget.bytes:
        return []
    weights = [n.shape for n in compiled.step.inputs if input_role(n) is Role.PARAM]
    count = sum(math.prod(s) for s in weights)
    matrices = [s for s in weights if len(s) >= 2]
    lora = sum(LORA_RANK * (s[0] + math.prod(s[1:])) for s in matrices)
    base = sum(math.prod(s) for s in matrices)
    quantized = base // 2 + 2 * -(-base // QUANT_BLOCK) + 16 * (count - base) + 16 * lora
    state = plan.totals.get("optimizer state", 0)
    shards = math.ceil(state / max(budget.bytes - (fixed - state), 1)) if budget.bytes > fixed - state else None
    lines = [
        f"no batch size fits: parameters, gradients and optimizer state alone need {fixed:,} bytes, "
        f"more than the budget of {budget.bytes:,}",
        f"QLoRA-style adapters (4-bit base weights in blocks of {QUANT_BLOCK}, LoRA of rank {LORA_RANK} trained with "
        f"Adam, other parameters as now): about {quantized:,} bytes before activations",
    ]
    if shards is not None:
        lines.append(f"optimizer state sharded over {shards} devices: {fixed - state + state // shards:,} bytes each")
    else:
        lines.append("sharding the optimizer state cannot help: parameters and gradients alone exceed the budget")
    lines.append("pooling N devices multiplies throughput by about N; each device still needs all of the above")
    return lines
