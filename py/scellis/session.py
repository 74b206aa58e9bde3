"""A training session on one device: a program compiled to the device's kernels, parameters initialised
on the device from the seed, and its loop program run from Python with one device call per step:
epochs of full batches (shuffled by the `shuffle` substream, or in order), evaluation on the held-out
split every `evaluate_every` steps or at each epoch's end, and the loop's rules (graph.rules: skips
decided on the device, learning-rate changes, stops and checkpoints decided here, each logged as an
event). A run can stop after any number of steps and go on from there (`run(steps=N)`). The same code
runs in the browser (async FFI) and in CPython (wgpu-py, wasmtime).
"""

from __future__ import annotations

import contextlib
import math
import struct
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any

from scellis.datasets import Split
from scellis.graph import ValidProgram
from scellis.graph.building import BATCH_ROWS, dataset_input
from scellis.ir.function import Function, input_name, input_role
from scellis.levels import Level
from scellis.loop import Event, LoopState
from scellis.models.weights import WeightsError, bind, nf4_packer
from scellis.ops.defs import Role
from scellis.optim.optimizers import LAST_SKIPPED, LR_SCALE, SKIPPED
from scellis.pipeline import Compiled, compile_program
from scellis.plan.budget import Verdict
from scellis.plan.planned import lowered
from scellis.plan.program import judge
from scellis.rng import RngState, permutation, position_substream
from scellis.runtime.device import CompiledStep, Device
from scellis.store.checkpoint import Checkpoint, ResumeError, save
from scellis.store.history import History
from scellis.store.objects import Store, StoreError, check_key, key_of, settle
from scellis.store.retention import KEEP, Best, check_keep, retained
from scellis.store.tensorfile import Tensor


def checkpoints_to(store: Store, keep: int | None = KEEP) -> Checkpointer:
    """A checkpointer writing the session's checkpoints to `store` (set it as session.checkpointer). With
    `keep`, a rule checkpoint also deletes the earlier rule checkpoints the retention rule stops keeping
    (store.retention: the last `keep`, the best, `session.pinned`) and lists it in `session.retired`
    (deleted or not: the rule no longer keeps it); None keeps every one."""
    if keep is not None:
        check_keep(keep)

    async def write(session: Session, why: str) -> str:
        key = await save(store, await session.checkpoint())
        if keep is not None and session.by_rule:
            for gone in session.retired_by(key, keep):
                session.retired.append(gone)
                with contextlib.suppress(StoreError):  # gone already, or left for gc: never fails the run
                    await settle(store.delete(gone))
        return key

    return write


class PlanRefused(RuntimeError):
    """The memory plan is red on this device: nothing was sent to it. `needs`: the bytes the session would
    hold; `verdict`: the plan's, with its reasons."""

    def __init__(self, message: str, needs: int, verdict: Verdict) -> None:
        super().__init__(message)
        self.needs, self.verdict = needs, verdict


@dataclass(frozen=True)
class EpochResult:
    epoch: int
    steps: int
    loss: float  # of the epoch's last step
    metrics: dict[str, float]  # on the held-out split, at its latest evaluation
    loss_scale: float | None = None  # the loss scale the epoch's last step used (level fast only)


@dataclass(frozen=True)
class Progress:
    """Where a run is, told at each point where the host reads from the device (it never reads only to
    tell): steps done of all the loop's steps, the rate since this `run` began, and the time left at it."""

    step: int
    total: int
    epoch: int  # counted from 1
    epochs: int
    loss: float  # the latest step's loss read back (NaN for a program without a loss)
    steps_per_s: float
    eta_s: float | None  # None until a rate is known
    metrics: dict[str, float]  # the latest evaluation's (a program without a loss: its results)
    trains: bool = True

    def __str__(self) -> str:
        eta = "?" if self.eta_s is None else f"{self.eta_s:.0f} s"
        metrics = ", ".join(f"{k.removeprefix('metric/')} {v:.4g}" for k, v in sorted(self.metrics.items()))
        loss = f", loss {self.loss:.4g}" if self.trains else ""
        heading = "held-out" if self.trains else "results"
        return (
            f"step {self.step}/{self.total} (epoch {self.epoch}/{self.epochs}){loss}, "
            f"{self.steps_per_s:.1f} steps/s, {eta} left" + (f"; {heading}: {metrics}" if metrics else "")
        )


Checkpointer = Callable[["Session", str], Awaitable[str]]  # (session, why) -> the checkpoint's key
# Told each phase of opening a run as it ends: (name, start, end) in time.perf_counter() seconds (the page's
# engine worker puts them on the page's timeline: app/src/timeline.js).
Phases = Callable[[str, float, float], None]


@contextlib.contextmanager
def timed(phases: Phases | None, name: str) -> Iterator[None]:
    """The body's time told to `phases` as the phase `name` (failed or not); nothing when `phases` is None."""
    start = time.perf_counter()
    try:
        yield
    finally:
        if phases is not None:
            phases(name, start, time.perf_counter())


def _program_input(program: ValidProgram, role: str) -> str | None:
    """The id of the program's input node of `role` (features or labels), if it has one."""
    return next((n.id for n in program.nodes if n.op == "input" and n.params["role"] == role), None)


def _batch_of(fn: Function, default: int) -> int:
    """The rows one call of an evaluation function takes (its data input's leading axis; `default` for a
    function without data)."""
    return next((n.shape[0] for n in fn.inputs if input_role(n) is Role.DATA), default)


def _f32(data: bytes) -> float:
    return float(struct.unpack_from("<f", data)[0])


LOOP_FIELDS: dict[str, type | tuple[type, ...]] = {
    "state": dict,
    "order_drawn": bool,
    "by_rule": bool,
    "best": (list, type(None)),
    "loss": (float, int, type(None)),
}


def checked_loop(checkpoint: Checkpoint) -> tuple[History, Best | None]:
    """The history (read by store.checkpoint.load) and the best rule checkpoint of a checkpoint a session
    wrote; ResumeError ('not a checkpoint') naming what is missing or malformed."""
    loop, history = checkpoint.loop, checkpoint.history

    def refuse(why: str) -> ResumeError:
        return ResumeError(key_of(checkpoint.to_bytes()), ["not a checkpoint"], [f"its loop state {why}"])

    for name, kind in LOOP_FIELDS.items():
        if name not in loop or not isinstance(loop[name], kind):
            raise refuse(f"has no valid {name!r}")
    if not isinstance(history, History):
        raise refuse("names a history that was not read (load checkpoints with store.checkpoint.load)")
    if any(step > checkpoint.step for step, _ in history.written):
        raise refuse(f"lists a checkpoint after its own step {checkpoint.step}")
    best = loop["best"]
    if best is None:
        return history, None
    ok = len(best) == 3 and isinstance(best[0], int | float) and type(best[1]) is int and isinstance(best[2], str)
    if not ok or not 0 <= best[1] <= checkpoint.step:
        raise refuse(f"has a malformed 'best': {best!r}"[:200])
    return history, Best(float(best[0]), best[1], check_key(best[2]))


def _pretrained(compiled: Compiled, weights: bytes | memoryview | None) -> dict[str, memoryview]:
    """Each pretrained parameter's bytes in `weights`, checked against the program's pin."""
    program = compiled.program
    if weights is None:
        if program.weights is not None:
            pin = program.weights
            raise WeightsError(
                f"{program.name} starts from pretrained weights: give the session {pin.file} "
                f"({pin.bytes:,} bytes, SHA-256 {pin.sha256})"
            )
        return {}
    return bind(program, compiled.forward.params, weights)


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
        compiled: Compiled | None = None,
        weights: bytes | memoryview | None = None,
    ) -> None:
        """Evaluation runs `eval_batch` rows a call (the training batch unless given); `eval_rows` is the
        held-out split's size, so the plan holds the evaluation of its last, smaller batch too (without
        it, evaluate takes whole batches only). `examples`: the training split's size, which a program
        keeping its data set on the device (`memory.data` resident) is compiled and planned for.
        `compiled`: `program` already compiled with exactly these sizes (by a caller that needed it
        first, as the page's data fit check), so the pipeline runs once. `weights`: the bytes of the
        weights file a program with pretrained parameters pins (checked here: WeightsError names what
        does not fit); start writes each pretrained parameter from it."""
        sizes = {"eval_batch": eval_batch, "eval_rows": eval_rows, "examples": examples}
        self.compiled: Compiled = compiled or compile_program(program, **sizes)
        self.pretrained = _pretrained(self.compiled, weights)
        self.examples = examples
        self.device, self.rng, self.steps, self.level = device, RngState(seed), 0, level
        self.at = self.compiled.at(level, device.features)  # the level decided once: functions and plan
        self.step_fn = step_fn = self.at.step
        self.reported = [name for name, _ in step_fn.outputs if name in ("loss", "loss_scale")]
        self.loss_scale: float | None = None
        valid = self.compiled.program
        self.batch = valid.loop.batch_size
        self.trains, self.has_data = valid.trains, valid.has_data
        # evaluation streams its rows, as a streaming step does; a program without data has neither input
        self.features, self.labels = _program_input(valid, "features"), _program_input(valid, "labels")
        self.resident = any(input_role(n) is Role.DATASET for n in step_fn.inputs)
        # the memory plan lowered and planned every function a session compiles; start compiles those
        self.plan = self.at.plan
        self.step: CompiledStep
        self.eval: CompiledStep | None = None  # compiled by compile_evaluation
        self.eval_last: CompiledStep | None = None
        # what an evaluation that draws (e.g. a bootstrap's results) is given: the keys of the seed it started with
        self.evaluation_keys: tuple[dict[str, bytes], dict[str, bytes]] = ({}, {})
        self.eval_batch = _batch_of(self.compiled.evaluate, self.batch)
        last = self.compiled.evaluate_last
        self.eval_last_rows = _batch_of(last, self.batch) if last is not None else 0
        self.carried = [
            input_name(n) for n in self.compiled.evaluate.inputs if input_role(n) in (Role.PARAM, Role.STATE)
        ]
        frozen = {s.name for s in self.compiled.forward.params if s.init.kind == "pretrained" and not s.trainable}
        # what a checkpoint holds: every PARAM and STATE input of the step but the frozen pretrained weights
        self.kept = [
            input_name(n)
            for n in step_fn.inputs
            if input_role(n) in (Role.PARAM, Role.STATE) and input_name(n) not in frozen
        ]
        self.metrics = [
            name for name, _ in self.compiled.evaluate.outputs if name == "loss" or name.startswith("metric/")
        ]
        # the loop program's state: where the run is, and what its rules have seen and decided
        self.loop = LoopState(self.compiled.program.loop.rules)
        self.epoch, self.cursor = 0, 0  # the epoch under way (from 0) and its next batch
        self.order: list[int] | None = None  # the epoch's order of examples, once drawn
        self.last_loss = float("nan")
        self.last_metrics: dict[str, float] = {}
        self.checkpointer: Checkpointer | None = None
        self.checkpoints: list[tuple[int, str]] = []  # (step, key) of each checkpoint the run's rules wrote
        self.by_rule = False  # whether the checkpoint being taken is one a rule asked for
        # the history segment of the latest rule checkpoint, and the log entries and keys it covers
        self.log_base: tuple[str | None, int, int] = (None, 0, 0)
        self.best: Best | None = None  # the rule checkpoint with the lowest held-out loss
        self.pinned: set[str] = set()  # keys retention never deletes (kept by a manifest or a record)
        self.retired: list[str] = []  # rule checkpoints retention stopped keeping, in the order it did
        self.held_out_loss: float | None = None  # the latest held-out loss a resumed checkpoint held
        step_inputs = {input_name(n) for n in step_fn.inputs}
        self.counts_skips, self.scales_lr = SKIPPED in step_inputs, LR_SCALE in step_inputs
        self.lr_scale_written: float | None = None
        self.progress: Callable[[Progress], None] | None = None  # told at each read (see Progress)
        self.phases: Phases | None = None  # told what each phase of `start` took
        self._clock = (0.0, 0, 0)  # when this run call began, the steps done then, and its epochs
        self.per_epoch = 0  # steps an epoch of this run call (0: no run call yet)

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

    def _latest_positions(self, fn: Function) -> dict[str, bytes]:
        """For an evaluation that draws per step: each substream's position of the latest step (0 before
        any), so results see that step's draws."""
        out = {}
        for node in fn.inputs:
            substream = position_substream(input_name(node))
            if substream is not None:
                out[input_name(node)] = struct.pack("<I", max(self.rng.peek(substream) - 1, 0))
        return out

    def _data(self, fn: Function, x: bytes, y: bytes) -> dict[str, bytes]:
        """The writes of a batch's features and labels, for the ones `fn` reads."""
        names = {input_name(n) for n in fn.inputs}
        pairs = ((self.features, x), (self.labels, y))
        return {name: data for name, data in pairs if name is not None and name in names}

    async def check_memory(self) -> Verdict:
        """The memory plan's verdict on this device; a red plan is refused here, before any work
        reaches the device (PlanRefused names every reason)."""
        plan = self.plan
        budget = await self.device.budget(plan.total)
        self.verdict = judge(plan, self.device.limits, budget)
        if self.verdict.color == "red":
            why = "; ".join(self.verdict.reasons)
            raise PlanRefused(f"{plan.program} does not fit on {self.device.name}: {why}", plan.total, self.verdict)
        return self.verdict

    async def start(self, train: Split | None = None, *, defer_evaluation: bool = False) -> None:
        """Check the memory plan (a red one is refused); compile on the device (the evaluation too, unless
        `defer_evaluation`: then the first evaluation compiles it, so that the first steps wait for the step
        and init only); initialise parameters and state there (the init function's draws and, at fast, the
        loss scale); other optimizer state starts at zero (device buffers are created zeroed). A resident
        data set is written to the device here, once: `train` is the split it holds."""
        if self.resident and (train is None or train.n != self.examples):
            got = "none" if train is None else f"{train.n} examples"
            raise ValueError(f"the resident data set was planned for {self.examples} examples, got {got}")
        with timed(self.phases, "check the memory plan"):
            await self.check_memory()
        with timed(self.phases, "compile: training step"):
            self.step = await self.device.compile(self.plan.functions[0].planned)
        last = self.compiled.evaluate_last
        self.evaluation_keys = (self._keys(self.compiled.evaluate), {} if last is None else self._keys(last))
        if not defer_evaluation:
            await self.compile_evaluation()
        init_plan = self.plan.function("init")
        assert init_plan is not None
        init_fn = self.at.init
        with timed(self.phases, "compile: init"):
            init = await self.device.compile(init_plan.planned)
        names = [name for name, _ in init_fn.outputs]
        with timed(self.phases, "run init"):
            values = await init.step(self._keys(init_fn), names)
        self.rng.take("init")  # the init function draws at position 0
        for name, data in values.items():
            self.step.write(name.split("/", 1)[1], data)
        await self._write_pretrained()
        for name, data in self._keys(self.step_fn).items():
            self.step.write(name, data)
        self._write_lr_scale()
        if self.resident and train is not None:
            held = {input_name(n) for n in self.step_fn.inputs}
            for node, data in ((self.features, train.features), (self.labels, train.labels)):
                if node is not None and dataset_input(node) in held:
                    self.step.write(dataset_input(node), data)

    async def _write_pretrained(self) -> None:
        """Each pretrained parameter from the weights file, one tensor's copy at a time; an NF4 one packed
        on the device first (one compiled packer per shape)."""
        nf4 = {s.name: s.init.nf4 for s in self.compiled.forward.params if s.init.nf4}
        packers: dict[tuple[int, ...], CompiledStep] = {}
        for name, view in self.pretrained.items():
            shape = nf4.get(name)
            if not shape:
                self.step.write(name, bytes(view))
                continue
            if shape not in packers:
                packers[shape] = await self.device.compile(
                    lowered(nf4_packer(*shape), self.level, self.device.features)
                )
            self.step.write(name, (await packers[shape].step({"w": bytes(view)}, ["packed"]))["packed"])

    async def compile_evaluation(self) -> CompiledStep:
        """The evaluation, compiled alongside the step (its parameters are the step's buffers) with its last
        batch's, once: by `start`, or by the first evaluation when start deferred it."""
        if self.eval is not None:
            return self.eval
        evaluation, last = (self.plan.function(n) for n in ("evaluation", "evaluation, last batch"))
        assert evaluation is not None
        with timed(self.phases, "compile: evaluation"):
            compiled = await self.device.compile(evaluation.planned, self.step)
        if last is not None:
            with timed(self.phases, "compile: evaluation, last batch"):
                self.eval_last = await self.device.compile(last.planned, self.step)
        for step, keys in ((compiled, self.evaluation_keys[0]), (self.eval_last, self.evaluation_keys[1])):
            if step is not None:
                for name, data in keys.items():
                    step.write(name, data)
        self.eval = compiled
        return compiled

    async def train_epoch(self, train: Split) -> float:
        """One epoch of full batches, with no evaluation and no rules (tests drive steps this way);
        returns the last step's loss (and keeps the loss scale it used, at fast)."""
        self._draw_order(train)
        assert self.order is not None
        pending = None
        starts = self._starts(train)
        for start in starts:
            pending = self._submit(train, start, self.reported if start == starts[-1] else [])
        self.cursor, self.order, self.epoch = 0, None, self.epoch + 1
        assert pending is not None
        return self._note_step(await pending)

    def steps_per_epoch(self, train: Split | None) -> int:
        """Steps of one epoch: one a batch of `train`, or a program without data's `loop.steps`."""
        return len(self._starts(train))

    def _starts(self, train: Split | None) -> range:
        """Where each step of an epoch starts in its order of examples (a program without data: its steps)."""
        if train is None or not self.has_data:
            return range(self.compiled.program.loop.steps or 1)
        starts = range(0, train.n - self.batch + 1, self.batch)
        if not starts:
            raise ValueError(f"the training split has {train.n} examples, fewer than one batch of {self.batch}")
        return starts

    def _draw_order(self, train: Split | None) -> None:
        """The epoch's order of examples: a permutation drawn from the `shuffle` substream's next position,
        or in order when the loop does not shuffle (a program without data has none: an empty order)."""
        if train is None or not self.has_data:
            self.order = []
        elif self.compiled.program.loop.shuffle:
            self.order = permutation(train.n, self.rng.seed, self.rng.take("shuffle"))
        else:
            self.order = list(range(train.n))

    def _submit(self, train: Split | None, start: int, names: list[str]) -> Any:
        """Send one step (the batch at `start` of the epoch's order) to the device."""
        assert self.order is not None
        rows = self.order[start : start + self.batch]
        if train is None or not self.has_data:  # only the substreams' positions change
            writes = self._positions()
        elif self.resident:  # the batch is gathered on the device: only its example indices travel
            writes = {BATCH_ROWS: struct.pack(f"<{len(rows)}i", *rows), **self._positions()}
        else:
            x, y = train.rows(rows)
            writes = {**self._data(self.step_fn, x, y), **self._positions()}
        self.steps += 1
        return self.step.submit(writes, names)

    def _note_step(self, out: dict[str, bytes]) -> float:
        """A step read back (a program without a loss reads nothing: the step is done)."""
        self.loss_scale = _f32(out["loss_scale"]) if "loss_scale" in out else None
        if "loss" in out:
            self.last_loss = _f32(out["loss"])
        self._tell()
        return self.last_loss

    def _tell(self) -> None:
        if self.progress is None or self.per_epoch == 0:
            return
        began, steps_then, epochs = self._clock
        elapsed, done = time.perf_counter() - began, self.steps - steps_then
        rate = done / elapsed if elapsed > 0 and done else 0.0
        total = epochs * self.per_epoch
        eta = (total - self.steps) / rate if rate else None
        epoch = min(self.epoch + 1, epochs)
        metrics = dict(self.last_metrics)
        self.progress(Progress(self.steps, total, epoch, epochs, self.last_loss, rate, eta, metrics, self.trains))

    async def run(
        self,
        train: Split | None,
        test: Split | None,
        *,
        epochs: int | None = None,
        steps: int | None = None,
        report: Any = None,
    ) -> list[EpochResult]:
        """Run the loop program from where the session is, until its epochs (or `epochs`) are done, a rule
        stops it, or `steps` more steps have run: then it pauses, and `run` again goes on from the very
        next batch. `report` receives each finished epoch's result; the finished epochs are returned.
        A program without data takes no splits (None); one without a loss computes its results on the
        first batch of `train`, and needs no `test`."""
        self._check_splits(train, test)
        epochs = self.compiled.program.loop.epochs if epochs is None else epochs
        every = self.compiled.program.loop.evaluate_every
        results: list[EpochResult] = []
        self._clock, self.per_epoch = (time.perf_counter(), self.steps, epochs), len(self._starts(train))
        left = steps
        while self.epoch < epochs and not self.loop.stopped:
            left = await self._steps_of_epoch(train, test, left)
            if self.cursor < len(self._starts(train)):
                break  # paused, or a rule stopped the run, before the epoch's end
            if not every:
                await self._evaluate_and_decide(train, test)
            self.epoch, self.cursor, self.order = self.epoch + 1, 0, None
            for action in self.loop.after_epoch(self.steps, self.epoch):
                await self._checkpoint(action)
            result = EpochResult(self.epoch - 1, self.steps, self.last_loss, dict(self.last_metrics), self.loss_scale)
            results.append(result)
            if report is not None:
                report(result)
        if self.loop.stopped or self.epoch >= epochs:
            for action in self.loop.at_end(self.steps, self.epoch):
                await self._checkpoint(action)
        return results

    def _check_splits(self, train: Split | None, test: Split | None) -> None:
        if self.has_data and train is None:
            raise ValueError(f"{self.compiled.program.name} reads data: give it its training split")
        if self.has_data and self.trains and test is None:
            raise ValueError(f"{self.compiled.program.name} is evaluated on a held-out split: give it one")

    async def _steps_of_epoch(self, train: Split | None, test: Split | None, left: int | None) -> int | None:
        """The epoch's remaining steps, or `left` of them (None: all); returns how many of `left` remain."""
        if left == 0:
            return 0
        if self.order is None:
            self._draw_order(train)
        starts = self._starts(train)
        every = self.compiled.program.loop.evaluate_every
        while self.cursor < len(starts) and not self.loop.stopped:
            if left == 0:
                return 0
            last = self.cursor == len(starts) - 1
            evaluate = bool(every) and (self.steps + 1) % every == 0
            due = self.loop.after_step(self.steps + 1, self.epoch + 1)
            sync = bool(last or evaluate or due or left == 1)
            pending = self._submit(train, starts[self.cursor], self.reported if sync else [])
            self.cursor += 1
            left = None if left is None else left - 1
            if sync:
                self._note_step(await pending)
            if evaluate:
                await self._evaluate_and_decide(train, test)
            for action in due:
                await self._checkpoint(action)
        return left

    async def _evaluate_and_decide(self, train: Split | None, test: Split | None) -> None:
        """Evaluate (a program without a loss: compute its results), log the steps the device skipped since
        the last look, and apply the evaluation rules."""
        if self.trains:
            assert test is not None
            self.last_metrics = await self.evaluate(test)
        else:
            self.last_metrics = await self.results(train)
        epoch = self.epoch + 1
        if self.counts_skips:
            counters = await self.step.fetch([SKIPPED, LAST_SKIPPED])
            skipped, last = (struct.unpack("<i", counters[name])[0] for name in (SKIPPED, LAST_SKIPPED))
            self.loop.note_skips(self.steps, epoch, skipped, last)
        for action in self.loop.after_evaluation(self.steps, epoch, self.last_metrics):
            await self._checkpoint(action)
        self._write_lr_scale()
        self._tell()

    def _write_lr_scale(self) -> None:
        """The loop's learning-rate scale, on the device from the next step on (when a rule can change it)."""
        if self.scales_lr and self.lr_scale_written != self.loop.lr_scale:
            self.step.write(LR_SCALE, struct.pack("<f", self.loop.lr_scale))
            self.lr_scale_written = self.loop.lr_scale

    async def _checkpoint(self, action: str) -> None:
        """A rule's checkpoint (already in the decision log): written by the session's checkpointer; its
        key joins `checkpoints`, the keys this session wrote."""
        if self.checkpointer is None:
            raise RuntimeError(
                f"the loop program asks for a checkpoint at step {self.steps}, but the session has no store "
                "to write it to (set session.checkpointer)"
            )
        self.by_rule = True  # the checkpoint says so: resuming from it lists its own key with the others
        base = self.history().reference()
        try:
            key = await self.checkpointer(self, action)
        finally:
            self.by_rule = False
        self.best = self._best_after(key)
        self.checkpoints.append((self.steps, key))
        self.log_base = (base.key, base.events, base.written)

    def history(self) -> History:
        """The decision log and the rule checkpoints so far, extending the latest rule checkpoint's."""
        events = tuple((e.step, e.epoch, e.text) for e in self.loop.events)
        return History(events, tuple(self.checkpoints), *self.log_base)

    def _best_after(self, key: str) -> Best | None:
        """The best rule checkpoint once `key` is written now (by the latest held-out loss)."""
        loss = self._loss()
        return Best.first(loss, self.steps, key) if self.best is None else self.best.after(loss, self.steps, key)

    def _loss(self) -> float | None:
        """The latest held-out loss, when there is one and it is finite (what retention ranks by); a
        checkpoint keeps it, so a resumed run ranks its next checkpoints as an unbroken one does."""
        loss = self.last_metrics.get("loss", self.held_out_loss) if self.trains else None
        return loss if loss is not None and math.isfinite(loss) else None

    def retired_by(self, key: str, keep: int) -> list[str]:
        """The earlier rule checkpoints the retention rule (store.retention) stops keeping once `key` is
        written now by a rule."""
        before = retained(self.checkpoints, keep, self.best, self.pinned)
        after = retained([*self.checkpoints, (self.steps, key)], keep, self._best_after(key), self.pinned)
        return sorted(before - after)

    async def evaluate(self, test: Split) -> dict[str, float]:
        """Loss and metrics on all of `test`, in batches of the evaluation's rows: each batch's values
        weighted by its rows (exact for per-example means such as the loss, accuracy and mse)."""
        await self.compile_evaluation()
        calls = self._evaluation_calls(test.n)
        for evaluation in {id(e): e for _, _, e in calls}.values():
            self.step.copy_into(evaluation, self.carried)
        sums = dict.fromkeys(self.metrics, 0.0)
        for start, rows, evaluation in calls:
            x, y = test.rows(list(range(start, start + rows)))
            out = await evaluation.step(self._data(self.compiled.evaluate, x, y), self.metrics)
            for name, data in out.items():
                sums[name] += _f32(data) * rows
        return {name: total / test.n for name, total in sums.items()}

    async def results(self, train: Split | None = None) -> dict[str, float]:
        """A program without a loss: its results (`metric/<node>`) from the states as they are now, and,
        for a program with data, from the first batch of `train` in order (a whole-data analysis sets its
        batch size to the data's size)."""
        if self.has_data and train is None:
            raise ValueError(f"{self.compiled.program.name}'s results read its training data: give the split")
        fn = self.compiled.evaluate
        evaluation = await self.compile_evaluation()
        self.step.copy_into(evaluation, self.carried)
        writes = self._latest_positions(fn)
        if self.has_data and train is not None:
            if train.n < self.batch:
                raise ValueError(f"the training split has {train.n} examples, fewer than one batch of {self.batch}")
            writes.update(self._data(fn, *train.rows(list(range(self.batch)))))
        out = await evaluation.step(writes, self.metrics)
        return {name: _f32(data) for name, data in out.items()}

    def _evaluation_calls(self, n: int) -> list[tuple[int, int, CompiledStep]]:
        """(first row, rows, compiled evaluation) for each call over a held-out split of n rows (the
        evaluation compiled)."""
        if n < 1:
            raise ValueError("the held-out split is empty: there is nothing to evaluate")
        assert self.eval is not None
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

    async def tensors(self, names: list[str]) -> dict[str, Tensor]:
        """The step's inputs `names` as the device holds them now."""
        values = await self.step.fetch(names)
        nodes = {input_name(n): n for n in self.step_fn.inputs}
        return {name: Tensor.from_device(nodes[name].dtype, nodes[name].shape, values[name]) for name in names}

    async def checkpoint(self) -> Checkpoint:
        """Everything this run needs to go on exactly from here: parameters and optimizer state (the
        step's PARAM and STATE inputs, as the device holds them, but for the frozen pretrained weights,
        which the program pins by their file's hash and start writes from it), the step, epoch and position
        in it, the RNG state, and the loop's state. Between steps only (after `run` returns)."""
        tensors = await self.tensors(self.kept)
        state = self.loop.to_json()
        del state["events"]  # in the history, with the earlier checkpoints: the metadata's size stays put
        best = None if self.best is None else [self.best.loss, self.best.step, self.best.key]
        loop = {"state": state, "order_drawn": self.order is not None, "by_rule": self.by_rule, "best": best}
        loop["loss"] = self._loss()  # a rule checkpoint's own claim to be the best (store.retention)
        program = self.at.key
        rng = RngState(self.rng.seed, dict(self.rng.positions))
        return Checkpoint(
            program,
            self.level,
            self.device.name,
            self.steps,
            self.epoch,
            self.cursor,
            rng,
            loop,
            tensors,
            self.history(),
        )

    async def resume(
        self, checkpoint: Checkpoint, train: Split | None = None, *, defer_evaluation: bool = False
    ) -> None:
        """Start from `checkpoint` instead of from init (`defer_evaluation` as start's): the run goes on
        exactly where it was written (its program and level were checked when it was loaded:
        store.checkpoint.load). A checkpoint written on another device is taken, and the log says so."""
        history, best = checked_loop(checkpoint)
        await self.start(train, defer_evaluation=defer_evaluation)
        self.held_out_loss = None if checkpoint.loop["loss"] is None else float(checkpoint.loop["loss"])
        names = set(self.kept)
        if set(checkpoint.tensors) != names:
            missing, extra = sorted(names - set(checkpoint.tensors)), sorted(set(checkpoint.tensors) - names)
            raise ValueError(f"the checkpoint's tensors do not match the step: missing {missing}, unexpected {extra}")
        for name, tensor in checkpoint.tensors.items():
            self.step.write(name, tensor.device_bytes())
        self.rng = RngState(checkpoint.rng.seed, dict(checkpoint.rng.positions))
        self.steps, self.epoch, self.cursor = checkpoint.step, checkpoint.epoch, checkpoint.cursor
        state = {**checkpoint.loop["state"], "events": [list(e) for e in history.events]}
        self.loop = LoopState.from_json(self.compiled.program.loop.rules, state)
        self.checkpoints, self.best = list(history.written), best
        self.log_base = (history.base, history.base_events, history.base_written)
        if checkpoint.loop["by_rule"]:  # one of the loop program's own: the run's list holds it too
            ref = history.reference()  # and its history is the base the next one extends
            self.log_base = (ref.key, ref.events, ref.written)
            key = key_of(checkpoint.to_bytes())
            loss = checkpoint.loop["loss"]
            self.best = (
                Best.first(loss, checkpoint.step, key) if best is None else best.after(loss, checkpoint.step, key)
            )
            self.checkpoints.append((checkpoint.step, key))
        self.order = None
        if checkpoint.loop.get("order_drawn") and train is not None:  # the epoch under way: its order again
            shuffled = self.compiled.program.loop.shuffle
            position = self.rng.peek("shuffle") - 1
            self.order = permutation(train.n, self.rng.seed, position) if shuffled else list(range(train.n))
        for name, data in self._keys(self.step_fn).items():
            self.step.write(name, data)
        self.lr_scale_written = None
        self._write_lr_scale()
        if checkpoint.device != self.device.name:
            self.loop.events.append(
                Event(
                    self.steps,
                    self.epoch + 1,
                    f"resumed on {self.device.name} from a checkpoint of {checkpoint.device}",
                )
            )

    async def fit(
        self, train: Split | None, test: Split | None, epochs: int | None = None, report: Any = None
    ) -> list[EpochResult]:
        """Start, then run the loop program to its end (`epochs`: the program's unless given)."""
        await self.start(train)
        return await self.run(train, test, epochs=epochs, report=report)
