"""What the web app calls: the memory plan of the page's program on the page's device (with remedies),
applying a remedy, and training the program, reporting each epoch. Runs in Pyodide; the page passes the
data files, the program JSON and a callback, and opened the WebGPU device."""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from typing import Any

from scellis.datasets import from_files
from scellis.examples import digits_mlp
from scellis.levels import parse_level
from scellis.lower import Schedule
from scellis.pipeline import compile_program
from scellis.plan.breakdown import CATEGORIES
from scellis.plan.budget import GREEN_SHARE, Budget, Verdict
from scellis.planning import ProgramPlan, judge, plan_program
from scellis.remedies import Advice, advise, apply, device_judge
from scellis.runtime.device import Device
from scellis.session import EpochResult, PlanRefused, Session


async def _device(kind: str) -> Device:
    if kind == "webgpu":
        from scellis.runtime.browser_webgpu import BrowserWebGPU

        return BrowserWebGPU()
    if kind == "cpu":
        from scellis.runtime.cpu_device import CpuDevice

        return await CpuDevice.open()
    raise ValueError(f"unknown device kind {kind!r} (expected 'webgpu' or 'cpu')")


def capped(measured: Budget, cap: int | None) -> Budget:
    """The budget under the user's memory cap (bytes; None: no cap): the smaller of the two, saying which."""
    if cap is None:
        return measured
    if measured.bytes is not None and measured.bytes <= cap:
        return Budget(measured.bytes, f"{measured.how}; the memory cap of {cap:,} bytes is above it")
    return Budget(cap, f"limited to {cap:,} bytes by the memory cap set in the page; measured: {measured.how}")


class CappedDevice:
    """A device whose budget is at most the memory cap the user set (to leave room for other tabs, say);
    everything else is the device's own."""

    def __init__(self, device: Device, cap: int | None) -> None:
        if cap is not None and cap <= 0:
            raise ValueError(f"the memory cap must be a positive number of bytes, got {cap}")
        self.device, self.cap = device, cap
        self.name, self.features, self.limits = device.name, device.features, device.limits

    async def budget(self, need: int) -> Budget:
        measured = self.device.budget(need)  # the page's WebGPU probes asynchronously
        return capped(await measured if inspect.isawaitable(measured) else measured, self.cap)

    def compile(self, schedule: Schedule) -> Any:
        return self.device.compile(schedule)


def example_program() -> str:
    """The program the page starts with (and returns to on reset): the digits MLP, as JSON."""
    return json.dumps(digits_mlp())


def apply_remedy(program: str, change: str) -> str:
    """`program` (JSON) with a remedy's change (JSON, as the plan offered it) applied, as JSON."""
    return json.dumps(apply(json.loads(program), json.loads(change)))


async def plan_example(files: dict[str, bytes], program: str, device_kind: str, level: str, cap: int | None) -> str:
    """The memory plan of `program` (JSON) on the page's device at `level`, as the session that trains it
    on these data files would hold it (evaluating the held-out split in training-sized batches, with
    its last batch's own evaluation; a resident data set holding the training split), under the memory
    cap `cap` (bytes, or None). Remedies and capacity facts come with a verdict that is not green."""
    train, test = from_files(files)
    data, parsed = json.loads(program), parse_level(level)
    device = CappedDevice(await _device(device_kind), cap)
    compiled = compile_program(data, eval_rows=test.n, examples=train.n)
    plan = plan_program(compiled, parsed, device.features)
    budget = await device.budget(plan.total)
    verdict = judge(plan, device.limits, budget)
    advice = Advice((), ())
    if verdict.color != "green":
        # remedies are judged against the budget measured here: for WebGPU a lower bound of what can
        # be allocated, so a remedy's green holds; a session probes again around its own need
        verdict_of = device_judge(device.limits, lambda need: budget)
        advice = advise(data, parsed, device.features, budget, verdict_of, eval_rows=test.n, examples=train.n)
    return json.dumps(_plan_json(plan, device=device.name, budget=budget, cap=cap, verdict=verdict, advice=advice))


def _verdict_json(verdict: Verdict) -> dict[str, Any]:
    return {"color": verdict.color, "reasons": list(verdict.reasons)}


def _plan_json(
    plan: ProgramPlan, *, device: str, budget: Budget, cap: int | None, verdict: Verdict, advice: Advice
) -> dict[str, Any]:
    """The plan panel's content: `total` is what a session holds while training (the functions marked
    `held`); `breakdown` is the training step's bytes by category at its peak, every category in order;
    `green_share` is the share of the budget a green plan may take."""
    return {
        "program": plan.program,
        "level": plan.level.value,
        "device": device,
        "batch": plan.batch,
        "total": plan.total,
        "budget": {"bytes": budget.bytes, "how": budget.how, "cap": cap},
        "green_share": GREEN_SHARE,
        "verdict": _verdict_json(verdict),
        "breakdown": [{"category": name, "bytes": plan.step.bytes.get(name, 0)} for name in CATEGORIES],
        "functions": [{"name": f.name, "bytes": f.allocated, "held": f.name != "init"} for f in plan.functions],
        "remedies": [
            {
                "name": r.name,
                "change": r.change,
                "batch": r.plan.batch,
                "total": r.plan.total,
                "verdict": _verdict_json(r.verdict),
            }
            for r in advice.remedies
        ],
        "capacity": list(advice.capacity),
    }


async def train_example(
    files: dict[str, bytes],
    device_kind: str,
    level: str,
    epochs: int,
    report: Callable[[str], None],
    *,
    program: str | None = None,
    cap: int | None = None,
) -> str:
    """Train `program` (JSON; the digits MLP when None) at the chosen determinism level under the memory
    cap `cap` (bytes, or None); `report` receives each epoch as JSON; returns the last epoch as JSON, or,
    when the memory plan is red, `{"refused": why, "memory": ...}` (nothing reached the device)."""
    train, test = from_files(files)
    data = digits_mlp() if program is None else json.loads(program)
    device = CappedDevice(await _device(device_kind), cap)
    session = Session(data, device, seed=1, level=parse_level(level), eval_rows=test.n, examples=train.n)

    def send(result: EpochResult) -> None:
        report(json.dumps(_epoch_json(result, session)))

    try:
        results = await session.fit(train, test, epochs, send)
    except PlanRefused as refused:
        return json.dumps({"refused": str(refused), "memory": _memory_json(session)})
    return json.dumps(_epoch_json(results[-1], session))


def _memory_json(session: Session) -> dict[str, Any]:
    """What the session holds on the device and its memory plan's verdict."""
    return {"bytes": session.plan.total, "verdict": session.verdict.color, "reasons": list(session.verdict.reasons)}


def _epoch_json(result: EpochResult, session: Session) -> dict[str, Any]:
    """Epochs count from 1 on screen; metrics are the held-out split's (`loss`, `metric/<node>`); `notes`
    say what the level could not use on this device; `memory` is what the session holds on the device
    and the memory plan's verdict; `batch` the program's batch; where fast scales its loss, `loss_scale`
    is the scale the epoch's last step used."""
    out = {
        "epoch": result.epoch + 1,
        "steps": result.steps,
        "batch": session.batch,
        "train_loss": result.loss,
        "test": result.metrics,
        "level": session.level.value,
        "notes": list(session.schedule.notes),
        "memory": _memory_json(session),
    }
    return out if result.loss_scale is None else {**out, "loss_scale": result.loss_scale}
