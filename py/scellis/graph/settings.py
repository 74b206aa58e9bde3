"""Program-level settings besides the graph: the optimizer (with its LR schedule) and the loop.

The loop settings hold what a run needs today (epochs, batch size, shuffling); the loop program with
its control rules extends this object, so programs written now stay valid.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from scellis.graph.errors import Issue
from scellis.graph.params import REQUIRED, Param, check
from scellis.graph.rules import Rule, read_rules

MAX_BATCH = 2**24  # examples a step, or replicas of a program without data (16,777,216 paths)
OPTIMIZERS = ("sgd", "momentum", "adam", "adamw")
SCHEDULES = ("constant", "step", "cosine")


@dataclass(frozen=True)
class Schedule:
    """Learning rate over steps: constant, step decay (x gamma every step_size steps) or cosine decay to
    min_lr over total_steps; any of them after a linear warmup of warmup_steps."""

    kind: str = "constant"
    warmup_steps: int = 0
    step_size: int = 1000
    gamma: float = 0.1
    total_steps: int = 10000
    min_lr: float = 0.0


@dataclass(frozen=True)
class Optimizer:
    kind: str = "adam"
    lr: float = 1e-3
    momentum: float = 0.9
    nesterov: bool = False
    beta1: float = 0.9
    beta2: float = 0.999
    eps: float = 1e-8
    weight_decay: float = 0.0  # L2 added to the gradient; decoupled (AdamW) for adamw
    clip_norm: float | None = None  # clip gradients to this global norm
    schedule: Schedule = Schedule()


@dataclass(frozen=True)
class LossScaling:
    """Dynamic loss scaling (level fast): gradients come from loss * scale and are divided by it; a step
    with a non-finite gradient is skipped and multiplies the scale by `backoff` (not below `floor`);
    after `growth_interval` finite steps in a row the scale is multiplied by `growth` (not above
    `ceiling`, so an ever-finite run cannot push it to inf). Powers of two keep unscaling exact."""

    initial: float = 2.0**15
    growth: float = 2.0
    growth_interval: int = 2000
    backoff: float = 0.5
    floor: float = 1.0
    ceiling: float = 2.0**24


@dataclass(frozen=True)
class Loop:
    """`batch_size`: examples a step takes, or, in a program without data, the replicas each step runs
    side by side (paths, chains: the batch axis of batched state and draws). `steps`: the steps of one
    epoch of a program without data, 1 unless given (one with data has one step per batch of its training
    split)."""

    epochs: int = 10
    batch_size: int = 64
    shuffle: bool = True
    evaluate_every: int = 0  # steps between evaluations on the held-out split; 0: at each epoch's end
    rules: tuple[Rule, ...] = ()  # scellis.loop.program
    steps: int | None = None


@dataclass(frozen=True)
class Memory:
    """How a training step holds its memory; the memory plan's remedies change these. `checkpoint`:
    keep only the activations at segment boundaries and recompute the others segment by segment in
    backward (same gradients, less memory, more compute). `storage` "float16": parameters and the
    activations kept for backward are stored in float16, with float32 master weights for the optimizer
    (optim.storage; only on a device with shader-f16)."""

    checkpoint: bool = False
    storage: str = "float32"
    data: str = "stream"  # "resident": the training split is held on the device, batches gathered there


SCHEDULE_PARAMS = (
    Param("kind", "str", "constant", choices=SCHEDULES),
    Param("warmup_steps", "int", 0, low=0),
    Param("step_size", "int", 1000, low=1),
    Param("gamma", "float", 0.1, low=0, high=1),
    Param("total_steps", "int", 10000, low=1),
    Param("min_lr", "float", 0.0, low=0),
)
COMMON = (
    Param("kind", "str", REQUIRED, choices=OPTIMIZERS),
    Param("lr", "float", 1e-3, low=0),
    Param("weight_decay", "float", 0.0, low=0),
    Param("clip_norm", "float", None, low=0, optional=True),
    Param("schedule", "schedule", None, optional=True),
)
OPTIMIZER_PARAMS = {
    "sgd": COMMON,
    "momentum": (*COMMON, Param("momentum", "float", 0.9, low=0, high=1), Param("nesterov", "bool", False)),
    "adam": (
        *COMMON,
        Param("beta1", "float", 0.9, low=0, high=0.999999),
        Param("beta2", "float", 0.999, low=0, high=0.999999),
        Param("eps", "float", 1e-8, low=0),
    ),
}
OPTIMIZER_PARAMS["adamw"] = OPTIMIZER_PARAMS["adam"]
LOOP_PARAMS = (
    Param("epochs", "int", 10, low=1),
    Param("batch_size", "int", 64, low=1, high=MAX_BATCH),
    Param("shuffle", "bool", True),
    Param("evaluate_every", "int", 0, low=0),
    Param("rules", "rules", None, optional=True),
    Param("steps", "int", None, low=1, optional=True, doc="steps of one epoch of a program without data"),
)

DATA_PLACEMENTS = ("stream", "resident")
STORAGE_TYPES = ("float32", "float16")
MEMORY_PARAMS = (
    Param("checkpoint", "bool", False),
    Param("data", "str", "stream", choices=DATA_PLACEMENTS),
    Param("storage", "str", "float32", choices=STORAGE_TYPES),
)


def read_fields(data: Any, specs: tuple[Param, ...], path: str, issues: list[Issue]) -> dict[str, Any]:
    """Checked values of an object's fields (defaults for absent ones); problems go to `issues`."""
    if not isinstance(data, dict):
        issues.append(Issue(path, f"must be an object, got {type(data).__name__}"))
        return {}
    known = {p.name: p for p in specs}
    for key in data:
        if key not in known:
            issues.append(Issue(f"{path}.{key}", f"unknown setting (known: {', '.join(sorted(known))})"))
    values: dict[str, Any] = {}
    for p in specs:
        if p.name not in data:
            if p.default is REQUIRED:
                issues.append(Issue(f"{path}.{p.name}", "is required"))
            values[p.name] = p.default
        elif p.kind == "schedule":
            values[p.name] = read_schedule(data[p.name], f"{path}.{p.name}", issues)
        elif p.kind == "rules":
            values[p.name] = read_rules(data[p.name], f"{path}.{p.name}", issues)
        else:
            value, error = check(p, data[p.name])
            if error:
                issues.append(Issue(f"{path}.{p.name}", error))
            values[p.name] = None if error else value  # an invalid value keeps the default (no cascade)
    return values


def read_schedule(data: Any, path: str, issues: list[Issue]) -> Schedule:
    if data is None:
        return Schedule()
    values = read_fields(data, SCHEDULE_PARAMS, path, issues)
    return _build(Schedule, values)


def read_optimizer(data: Any, path: str, issues: list[Issue]) -> Optimizer:
    kind = data.get("kind") if isinstance(data, dict) else None
    specs = OPTIMIZER_PARAMS.get(kind, COMMON) if isinstance(kind, str) else COMMON
    values = read_fields(data, specs, path, issues)
    if values.get("schedule") is None:
        values["schedule"] = Schedule()
    return _build(Optimizer, values)


def read_loop(data: Any, path: str, issues: list[Issue]) -> Loop:
    return _build(Loop, read_fields(data, LOOP_PARAMS, path, issues))


def read_memory(data: Any, path: str, issues: list[Issue]) -> Memory:
    return _build(Memory, read_fields(data, MEMORY_PARAMS, path, issues))


def _build(cls: type, values: dict[str, Any]) -> Any:
    """An instance from the values that are valid; invalid ones (None) keep the field default."""
    names = {f.name for f in fields(cls)}
    good = {k: v for k, v in values.items() if k in names and v is not None and v is not REQUIRED}
    return cls(**good)


def optimizer_json(opt: Optimizer) -> dict[str, Any]:
    """Only the settings the optimizer's kind uses, in a fixed order."""
    names = [p.name for p in OPTIMIZER_PARAMS[opt.kind]]
    out = {n: getattr(opt, n) for n in names if n != "schedule"}
    out["schedule"] = {p.name: getattr(opt.schedule, p.name) for p in SCHEDULE_PARAMS}
    return out
