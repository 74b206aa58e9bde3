"""A training session on one device: a program compiled to the device's kernels, parameters initialised
on the device from the seed, epochs of steps driven from Python with one device call per step, and
evaluation. The same code runs in the browser (async FFI) and in CPython (wgpu-py, wasmtime).

The loop program (rules, checkpoints, pause/resume) will grow out of this driver; today it runs fixed
epochs of shuffled full batches.
"""

from __future__ import annotations

import inspect
import struct
from dataclasses import dataclass
from typing import Any

from scellis.datasets import Split
from scellis.graph.lowering import BATCH_ROWS, dataset_input
from scellis.ir.function import Function, input_name, input_role
from scellis.levels import Level
from scellis.lower import Schedule
from scellis.ops.defs import Role
from scellis.pipeline import Compiled, compile_program
from scellis.plan.budget import Verdict
from scellis.planning import judge, plan_program
from scellis.rng import RngState, permutation, position_substream
from scellis.runtime.device import CompiledStep, Device


class PlanRefused(RuntimeError):
    """The memory plan is red on this device: nothing was sent to it."""


@dataclass(frozen=True)
class EpochResult:
    epoch: int
    steps: int
    loss: float  # of the epoch's last step
    metrics: dict[str, float]  # on the held-out split
    loss_scale: float | None = None  # the loss scale the epoch's last step used (level fast only)


def _role_input(fn: Function, role: Role) -> str:
    return next(input_name(n) for n in fn.inputs if input_role(n) is role)


def _f32(data: bytes) -> float:
    return float(struct.unpack_from("<f", data)[0])


class Session:
    def __init__(
        self,
        program: dict[str, Any],
        device: Device,
        *,
        seed: int,
        level: Level,
        eval_batch: int,
        examples: int | None = None,
    ) -> None:
        """`examples`: the training split's size, which a program keeping its data set on the device
        (`memory.data` resident) is compiled and planned for."""
        self.compiled: Compiled = compile_program(program, eval_batch=eval_batch, examples=examples)
        self.examples = examples
        self.device, self.rng, self.steps, self.level = device, RngState(seed), 0, level
        self.step_fn = step_fn = self.compiled.step_for(level, device.features)
        self.reported = [name for name, _ in step_fn.outputs if name in ("loss", "loss_scale")]
        self.loss_scale: float | None = None
        self.batch = self.compiled.program.loop.batch_size
        evaluate = self.compiled.evaluate  # evaluation streams its rows, as a streaming step does
        self.features, self.labels = _role_input(evaluate, Role.DATA), _role_input(evaluate, Role.LABEL)
        self.resident = any(input_role(n) is Role.DATASET for n in step_fn.inputs)
        # the memory plan lowers every function a session compiles; start compiles those very schedules
        self.plan = plan_program(self.compiled, level, device.features)
        self.schedule = self.plan.functions[0].schedule
        self.step: CompiledStep
        self.eval: CompiledStep
        self.carried = [
            input_name(n) for n in self.compiled.evaluate.inputs if input_role(n) in (Role.PARAM, Role.STATE)
        ]
        self.metrics = [
            name for name, _ in self.compiled.evaluate.outputs if name == "loss" or name.startswith("metric/")
        ]

    def _keys(self, fn: Function) -> dict[str, bytes]:
        return {
            input_name(n): struct.pack("<2I", *self.rng.key(input_name(n).removeprefix("rng.")))
            for n in fn.inputs
            if input_role(n) is Role.RNG
        }

    def _positions(self) -> dict[str, bytes]:
        """This step's position of every substream the step draws from (each advances by one)."""
        out = {}
        for node in self.step_fn.inputs:
            substream = position_substream(input_name(node))
            if substream is not None:
                out[input_name(node)] = struct.pack("<I", self.rng.take(substream))
        return out

    async def _compile(self, schedule: Schedule) -> CompiledStep:
        """Device compiles may be immediate (CPython) or awaitable (the browser checks its pipelines)."""
        compiled = self.device.compile(schedule)
        return await compiled if inspect.isawaitable(compiled) else compiled

    async def check_memory(self) -> Verdict:
        """The memory plan's verdict on this device; a red plan is refused here, before any work
        reaches the device (PlanRefused names every reason)."""
        plan = self.plan
        budget = self.device.budget(plan.total)  # the page's WebGPU probes asynchronously
        budget = await budget if inspect.isawaitable(budget) else budget
        self.verdict = judge(plan, self.device.limits, budget)
        if self.verdict.color == "red":
            raise PlanRefused(f"{plan.program} does not fit on {self.device.name}: " + "; ".join(self.verdict.reasons))
        return self.verdict

    async def start(self, train: Split | None = None) -> None:
        """Check the memory plan (a red one is refused); compile on the device; initialise parameters and
        state there (the init function's draws and, at fast, the loss scale); other optimizer state
        starts at zero (device buffers are created zeroed). A resident data set is written to the
        device here, once: `train` is the split it holds."""
        if self.resident and (train is None or train.n != self.examples):
            got = "none" if train is None else f"{train.n} examples"
            raise ValueError(f"the resident data set was planned for {self.examples} examples, got {got}")
        await self.check_memory()
        self.step = await self._compile(self.schedule)
        _, evaluation, init_plan = self.plan.functions
        self.eval = await self._compile(evaluation.schedule)
        init_fn = self.compiled.init_for(self.level, self.device.features)
        init = await self._compile(init_plan.schedule)
        names = [name for name, _ in init_fn.outputs]
        values = await init.step(self._keys(init_fn), names)
        self.rng.take("init")  # the init function draws at position 0
        for name, data in values.items():
            self.step.write(name.split("/", 1)[1], data)
        for name, data in self._keys(self.step_fn).items():
            self.step.write(name, data)
        if self.resident and train is not None:
            self.step.write(dataset_input(self.features), train.features)
            self.step.write(dataset_input(self.labels), train.labels)

    async def train_epoch(self, train: Split) -> float:
        """One epoch of full batches in the order of the `shuffle` substream's next position; returns
        the last step's loss (and keeps the loss scale it used, at fast)."""
        order = permutation(train.n, self.rng.seed, self.rng.take("shuffle"))
        pending = None
        starts = range(0, train.n - self.batch + 1, self.batch)
        for start in starts:
            rows = order[start : start + self.batch]
            if self.resident:  # the batch is gathered on the device: only its example indices travel
                writes = {BATCH_ROWS: struct.pack(f"<{len(rows)}i", *rows), **self._positions()}
            else:
                x, y = train.rows(rows)
                writes = {self.features: x, self.labels: y, **self._positions()}
            self.steps += 1
            pending = self.step.submit(writes, self.reported if start == starts[-1] else [])
        if pending is None:
            raise ValueError(f"the training split has {train.n} examples, fewer than one batch of {self.batch}")
        out = await pending
        self.loss_scale = _f32(out["loss_scale"]) if "loss_scale" in out else None
        return _f32(out["loss"])

    async def evaluate(self, test: Split) -> dict[str, float]:
        """Loss and metrics on `test` (all of it: the eval function's batch is its size)."""
        current = await self.step.fetch(self.carried)
        for name, data in current.items():
            self.eval.write(name, data)
        x, y = test.rows(list(range(test.n)))
        out = await self.eval.step({self.features: x, self.labels: y}, self.metrics)
        return {name: _f32(data) for name, data in out.items()}

    async def fit(self, train: Split, test: Split, epochs: int, report: Any = None) -> list[EpochResult]:
        await self.start(train)
        results = []
        for epoch in range(epochs):
            loss = await self.train_epoch(train)
            result = EpochResult(epoch, self.steps, loss, await self.evaluate(test), self.loss_scale)
            results.append(result)
            if report is not None:
                report(result)
        return results
