"""Stage: memory. What to do when a plan does not fit: each remedy re-planned with its new peak, and, when nothing that
depends on the batch can help, the capacity facts stated plainly. What `scellis plan` prints after a
verdict that is not green, and the app's plan panel offers as buttons.

Remedies here: streaming a resident data set, activation checkpointing, and a smaller batch (the largest
batch whose plan is green); float16 storage where the device has shader-f16; for a pretrained model
trained whole, LoRA adapters on its frozen linears, and QLoRA (the same on a 4-bit NF4 base). Each is a
change to the program JSON (`apply`), so applying one is one call and its plan is exactly what was promised. Capacity:
when parameters, gradients and optimizer state alone exceed the budget, no batch size fits; the figures
for QLoRA-style adapters, optimizer-state sharding, full sharding (FSDP, as an exported run uses it: the
fewest devices it fits on) and pooling devices follow.

Expects the program's plan and a planner (`Target.plan_of`: program JSON -> its plan at the same level,
features and sizes; the pipeline supplies it), so the remedies never compile anything themselves."""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from scellis.graph import validate
from scellis.graph.adapters import Adapters, adaptable, adapted
from scellis.optim.storage import STORAGES
from scellis.plan.budget import Budget, DeviceLimits, Verdict
from scellis.plan.program import ProgramPlan, judge

FIXED = ("parameters", "gradients", "optimizer state", "mixed-precision master copy")
LORA_RANK = 8
QUANT_BLOCK = 64  # 4-bit weights in blocks of 64 with one float16 scale each
MAX_DEVICES = 1024  # the most devices the fully sharded figure considers


CHANGES = {  # a remedy's change -> where it goes in the program JSON
    "batch": ("loop", "batch_size"),
    "checkpoint": ("memory", "checkpoint"),
    "data": ("memory", "data"),
    "storage": ("memory", "storage"),
}
TRANSFORMS = {  # a remedy's change that rewrites the graph -> how
    "adapters": lambda program, value: adapted(program, Adapters.read(value)),
}
LORA = {"rank": LORA_RANK}  # the adapters a pretrained program is offered: every linear, rank 8
QLORA = {"rank": LORA_RANK, "nf4": True}


def apply(program: dict[str, Any], change: dict[str, Any]) -> dict[str, Any]:
    """The program with a remedy's change applied: a new program JSON (the given one is not touched),
    validated, so what a remedy's plan promised is what the program now plans."""
    known = [*CHANGES, *TRANSFORMS]
    unknown = sorted(set(change) - set(known))
    if unknown:
        raise ValueError(f"unknown remedy change {', '.join(unknown)} (known: {', '.join(known)})")
    out = copy.deepcopy(program)
    for key, value in change.items():
        if key in TRANSFORMS:
            out = TRANSFORMS[key](out, value)
            continue
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
Planner = Callable[[dict[str, Any]], ProgramPlan]


def device_judge(limits: DeviceLimits, budget: Budget) -> Judge:
    """A plan's verdict on a device with `limits` and the measured `budget` (for WebGPU a lower bound of
    what can be allocated, so a remedy's green holds)."""
    return lambda plan: judge(plan, limits, budget)


@dataclass(frozen=True)
class Target:
    """How a remedied program is planned (at the level, on the features and with the sizes the session
    compiles with: the pipeline's planner) and judged on the device."""

    plan_of: Planner
    judge: Judge

    def remedy(self, data: dict[str, Any], change: dict[str, Any], name: str) -> Remedy:
        """A remedy: the program with `change` applied, planned again and judged on the device."""
        plan = self.plan_of(apply(data, change))
        return Remedy(name, change, plan, self.judge(plan))


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


def smaller_batch(data: dict[str, Any], batch: int, target: Target) -> Remedy | None:
    """The largest batch below `batch` whose plan is green (binary search: memory grows with the batch)."""
    return _largest_green_batch(data, batch, target)


@dataclass(frozen=True)
class Advice:
    remedies: tuple[Remedy, ...]  # each lowers the peak; green ones first, then by bytes
    capacity: tuple[str, ...]  # when no batch fits: the figures that would


def advise(data: dict[str, Any], plan: ProgramPlan, budget: Budget, target: Target) -> Advice:
    """What could make `data`, planned as `plan`, fit: every remedy that lowers its plan's bytes, each
    re-planned and judged (`target`), and the capacity facts when the batch-independent bytes alone exceed
    `budget`."""
    memory = validate(data).memory
    found: list[Remedy] = []
    if memory.data == "resident":
        found.append(target.remedy(data, {"data": "stream"}, "stream the data set"))
    if not memory.checkpoint:
        found.append(target.remedy(data, {"checkpoint": True}, "activation checkpointing"))
    if memory.storage != "float16" and not STORAGES["float16"] - plan.features:  # needs shader-f16
        found.append(target.remedy(data, {"storage": "float16"}, "float16 storage"))
    if adaptable(data):  # a pretrained model trained whole: adapters on a frozen base, or on a 4-bit one
        found.append(target.remedy(data, {"adapters": LORA}, f"LoRA adapters (rank {LORA_RANK}, base frozen)"))
        found.append(target.remedy(data, {"adapters": QLORA}, f"QLoRA (4-bit NF4 base, LoRA rank {LORA_RANK})"))
    batch = _largest_green_batch(data, plan.batch, target)
    if batch is not None:
        found.append(batch)
    useful = [r for r in found if r.plan.total < plan.total]
    useful.sort(key=lambda r: (r.verdict.color != "green", r.plan.total))
    return Advice(tuple(useful), tuple(capacity(plan, budget)))


def capacity(plan: ProgramPlan, budget: Budget) -> list[str]:
    """When the batch-independent bytes alone exceed the budget: say no batch fits, and what would."""
    fixed = sum(plan.totals.get(name, 0) for name in FIXED)
    if budget.bytes is None or fixed <= budget.bytes:
        return []
    weights = plan.parameters
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
    lines.append(fully_sharded(plan, budget.bytes, fixed))
    lines.append("pooling N devices multiplies throughput by about N; each device still needs all of the above")
    return lines


def fsdp_bytes(plan: ProgramPlan, devices: int) -> int:
    """About what each of `devices` holds when the run is fully sharded (PyTorch's FSDP, as an exported
    train.py runs it under torchrun): parameters, gradients and optimizer state split evenly, each device
    taking 1/N of every batch (so 1/N of the activations), and the largest parameter whole while it is
    gathered for its layer."""
    fixed = sum(plan.totals.get(name, 0) for name in FIXED)
    rest = max(plan.total - fixed, 0)
    largest = max((4 * math.prod(s) for s in plan.parameters), default=0)
    return -(-fixed // devices) + -(-rest // devices) + (largest if devices > 1 else 0)


def fully_sharded(plan: ProgramPlan, budget: int, fixed: int) -> str:
    """The fewest devices a fully sharded run fits on (up to MAX_DEVICES), and its bytes on each."""
    for devices in range(2, MAX_DEVICES + 1):
        each = fsdp_bytes(plan, devices)
        if each <= budget:
            how = "scellis export torch, then torchrun --nproc_per_node=N train.py --strategy fsdp"
            share = f"each taking 1/{devices} of a batch"
            return f"fully sharded (FSDP) over {devices} devices, {share}: about {each:,} bytes each ({how})"
    return f"fully sharded (FSDP) over {MAX_DEVICES} devices still needs {fsdp_bytes(plan, MAX_DEVICES):,} bytes each"
