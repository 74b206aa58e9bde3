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


def _batch_of(fn: Function) -> int:
    """The rows one call of an evaluation function takes (its data input's leading axis)."""
    return next(n.shape[0] for n in fn.inputs if input_role(n) is Role.DATA)


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
        eval_batch: int | None = None,
        eval_rows: int | None = None,
        examples: int | None = None,
    ) -> None:
        """Evaluation runs `eval_batch` rows a call (the training batch unless given); `eval_rows` is the
        held-out split's size, so the plan holds the evaluation of its last, smaller batch too (without
        it, evaluate takes whole batches only). `examples`: the training split's size, which a program
        keeping its data set on the device (`memory.data` resident) is compiled and planned for."""
        sizes = {"eval_batch": eval_batch, "eval_rows": eval_rows, "examples": examples}
        self.compiled: Compiled = compile_program(program, **sizes)
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
        self.eval_last: CompiledStep | None = None
        self.eval_batch = _batch_of(self.compiled.evaluate)
        last = self.compiled.evaluate_last
        self.eval_last_rows = _batch_of(last) if last is not None else 0
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
        evaluation, last, init_plan = (self.plan.function(n) for n in ("evaluation", "evaluation, last batch", "init"))
        assert evaluation is not None and init_plan is not None
        self.eval = await self._compile(evaluation.schedule)
        if last is not None:
            self.eval_last = await self._compile(last.schedule)
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
        """Loss and metrics on all of `test`, in batches of the evaluation's rows: each batch's values
        weighted by its rows (exact for per-example means such as the loss, accuracy and mse)."""
        calls = self._evaluation_calls(test.n)
        current = await self.step.fetch(self.carried)
        for evaluation in {id(e): e for _, _, e in calls}.values():
            for name, data in current.items():
                evaluation.write(name, data)
        sums = dict.fromkeys(self.metrics, 0.0)
        for start, rows, evaluation in calls:
            x, y = test.rows(list(range(start, start + rows)))
            out = await evaluation.step({self.features: x, self.labels: y}, self.metrics)
            for name, data in out.items():
                sums[name] += _f32(data) * rows
        return {name: total / test.n for name, total in sums.items()}

    def _evaluation_calls(self, n: int) -> list[tuple[int, int, CompiledStep]]:
        """(first row, rows, compiled evaluation) for each call over a held-out split of n rows."""
        if n < 1:
            raise ValueError("the held-out split is empty: there is nothing to evaluate")
        whole, rest = divmod(n, self.eval_batch)
        calls = [(i * self.eval_batch, self.eval_batch, self.eval) for i in range(whole)]
        if rest and (self.eval_last is None or rest != self.eval_last_rows):
            planned = f"{self.eval_last_rows}" if self.eval_last is not None else "no"
            raise ValueError(
                f"the held-out split has {n} rows: {whole} batches of {self.eval_batch} and {rest} more, but the "
                f"plan holds {planned} last-batch evaluation; give the session eval_rows={n}"
            )
        if rest:
            assert self.eval_last is not None
            calls.append((whole * self.eval_batch, rest, self.eval_last))
        return calls

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
