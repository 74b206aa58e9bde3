"""The page's run: one training run that the page drives a few steps at a time, so it can show progress,
pause, take a single step and go on; every checkpoint goes to the page's object store; a finished or
paused run gives its manifest and share link. A run opened from a share link re-runs the pinned run and,
at its end, compares every claim the run pins with what it recomputed (manifest.replay.compare).

Runs in Pyodide (the page passes its IndexedDB store, its device and the engine dist/build.json describes)
and in CPython (tests pass a DirectoryStore, wasmtime's CPU path and the installed engine): nothing here
touches the browser.
"""

from __future__ import annotations

import asyncio
import json
import math
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from scellis.datasets import Split
from scellis.levels import Level
from scellis.manifest import Engine, build_manifest, check_data, share_link, to_json
from scellis.manifest.replay import NotedDevice, Outcome, Pins, checkpoints_as, compare, new_session
from scellis.pipeline import Compiled
from scellis.plan.planned import Planned
from scellis.runtime.device import Device
from scellis.session import EpochResult, Phases, Session, checkpoints_to, timed
from scellis.store.checkpoint import load, save
from scellis.store.objects import Store, settle
from scellis.store.retention import KEEP
from scellis.store.tensorfile import encode

WEIGHTS_FORMAT = "scellis.weights/1"
RATE_WINDOW_S = 3.0  # steps/s is measured over about the last few seconds of running (pauses excluded)


@dataclass(frozen=True)
class Chunk:
    seconds: float
    steps: int


class PageRun:
    """A session, its data and store, and where the run stands. `pins`: what a re-run is compared with at
    its end (None for a run of the page's own), whose steps it takes (`limit`; else the loop's epochs) and
    whose device name its checkpoints carry (replay's module docstring). The page may ask for a manifest
    (the paused run's, for its Runs history) while a step is asked for: `busy` lets one call that runs the
    session or reads its state on the device go at a time, in the order they came. The session compiles its
    evaluation at the first evaluation, so the first steps wait for the step and init only; `warm` (where
    the device makes pipelines ahead: the page's WebGPU) has the device begin the evaluation's pipelines
    once the first steps are back, so that they are made, or under way, when the evaluation needs them."""

    def __init__(
        self,
        store: Store,
        device: Device,
        train: Split,
        test: Split,
        *,
        program: dict[str, Any],
        level: Level,
        seed: int,
        device_kind: str,
        epochs: int,
        engine: Engine,
        browser: str | None,
        pins: Pins | None = None,
        keep: int | None = KEEP,
        compiled: Compiled | None = None,
        model: dict[str, bytes] | None = None,
        warm: Callable[[Planned], None] | None = None,
    ) -> None:
        self.noted = NotedDevice(device)
        self.warm = warm  # until it has been asked to make the evaluation's pipelines
        weights = None if model is None else model["model.safetensors"]
        self.session = new_session(
            program, self.noted, level=level, seed=seed, train=train, test=test, compiled=compiled, weights=weights
        )
        self.model = model
        self.keep = keep if pins is None else None  # a re-run's checkpoints are as its pins say (replay)
        writer = checkpoints_to(store, keep) if pins is None else checkpoints_as(store, pins.device)
        self.session.checkpointer = writer
        self.gone: list[str] = []  # rule checkpoints of the resumed history no longer stored
        self.program = program
        self.train, self.test, self.store, self.pins = train, test, store, pins
        self.device_kind, self.epochs, self.engine, self.browser = device_kind, epochs, engine, browser
        self.limit = None if pins is None else pins.settings.steps
        self.rows: list[dict[str, Any]] = []  # finished epochs not yet handed to the page
        self.chunks: deque[Chunk] = deque()
        self.final: str | None = None  # the key of the final state, once saved
        self.saved: list[tuple[int, str]] = []  # (step, key) of each state saved from the page
        self.busy = asyncio.Lock()

    @classmethod
    async def open(
        cls,
        store: Store,
        device: Device,
        train: Split,
        test: Split,
        *,
        program: dict[str, Any],
        device_kind: str,
        level: Level,
        seed: int,
        epochs: int,
        engine: Engine,
        browser: str | None = None,
        resume: str | None = None,
        keep: int | None = KEEP,
        compiled: Compiled | None = None,
        model: dict[str, bytes] | None = None,
        phases: Phases | None = None,
        warm: Callable[[Planned], None] | None = None,
    ) -> PageRun:
        """A new run of `program`, started from init, or from the stored checkpoint `resume` (a key): a
        missing or corrupt object, or a checkpoint of another program or level, is a ResumeError naming what
        differs. Its rule checkpoints are kept as store.retention says with `keep` (None: every one).
        `compiled`: replay.session_program's compile of `program`, when the caller made it first. `model`:
        the pretrained model's files (scellis.models.finetune.MODEL_FILES) when the program pins their weights.
        `phases` is told what each phase of opening it takes (session.timed); `warm` as the class says.
        Nothing runs until `advance`; a red memory plan raises PlanRefused here."""
        with timed(phases, "lower and plan"):
            run = cls(
                store,
                device,
                train,
                test,
                program=program,
                level=level,
                seed=seed,
                device_kind=device_kind,
                epochs=epochs,
                engine=engine,
                browser=browser,
                keep=keep,
                compiled=compiled,
                model=model,
                warm=warm,
            )
        session = run.session
        session.phases = phases
        # the page shows the first steps without waiting for the evaluation, compiled when first needed
        if resume is None:
            await session.start(train, defer_evaluation=True)
        else:
            key = session.at.key
            checkpoint = await load(store, resume, expect_program=key, expect_level=level)
            await session.resume(checkpoint, train, defer_evaluation=True)
            run.gone = [k for _, k in session.checkpoints if not await settle(store.has(k))]
        return run

    @classmethod
    async def replay(
        cls,
        store: Store,
        device: Device,
        train: Split,
        test: Split,
        *,
        pins: Pins,
        device_kind: str,
        engine: Engine,
        browser: str | None = None,
        model: dict[str, bytes] | None = None,
        warm: Callable[[Planned], None] | None = None,
    ) -> PageRun:
        """A re-run of a pinned run (a share link's or a manifest's) on `device`: the data must be the pinned
        data (ValueError naming each split that differs, before anything is compiled); `model` and `warm` as
        `open`'s."""
        differ = check_data(pins.settings.data, train, test)
        if differ:
            raise ValueError("; ".join(differ))
        pinned = pins.settings
        run = cls(
            store,
            device,
            train,
            test,
            program=pins.program,
            level=pinned.level,
            seed=pinned.seed,
            device_kind=device_kind,
            epochs=pinned.epochs,
            engine=engine,
            browser=browser,
            pins=pins,
            model=model,
            warm=warm,
        )
        await run.session.start(train, defer_evaluation=True)
        return run

    @property
    def done(self) -> bool:
        """Whether the run has reached its end: its epochs, a rule's stop, or a re-run's pinned steps."""
        s = self.session
        if self.limit is not None and s.steps >= self.limit:
            return True
        return s.loop.stopped or s.epoch >= self.epochs

    async def advance(self, steps: int) -> dict[str, Any]:
        """Run up to `steps` more steps (fewer at the run's end) and say where the run stands (`state`)."""
        if steps < 1:
            raise ValueError(f"steps must be at least 1, got {steps}")
        async with self.busy:
            if self.session.steps > 0:  # after the first steps' answer, not before it
                self._warm_evaluation()
            if not self.done:
                if self.limit is not None:
                    steps = min(steps, self.limit - self.session.steps)
                before, began = self.session.steps, time.perf_counter()
                await self.session.run(self.train, self.test, epochs=self.epochs, steps=steps, report=self._row)
                self._clock(time.perf_counter() - began, self.session.steps - before)
            return self.state()

    def _warm_evaluation(self) -> None:
        """The device begins making the evaluation's pipelines (once, unless it is compiled already)."""
        warm, self.warm = self.warm, None
        if warm is None or self.session.eval is not None:
            return
        for name in ("evaluation", "evaluation, last batch"):
            function = self.session.plan.function(name)
            if function is not None:
                warm(function.planned)

    def _row(self, result: EpochResult) -> None:
        self.rows.append(epoch_json(result, self.session))

    def _clock(self, seconds: float, steps: int) -> None:
        self.chunks.append(Chunk(seconds, steps))
        while len(self.chunks) > 1 and sum(c.seconds for c in self.chunks) - self.chunks[0].seconds >= RATE_WINDOW_S:
            self.chunks.popleft()

    @property
    def steps_per_s(self) -> float | None:
        seconds, steps = sum(c.seconds for c in self.chunks), sum(c.steps for c in self.chunks)
        return steps / seconds if seconds > 0 and steps else None

    @property
    def total(self) -> int:
        """The steps the whole run takes (without a rule stopping it early)."""
        if self.limit is not None:
            return self.limit
        return self.epochs * self.session.steps_per_epoch(self.train)

    def state(self) -> dict[str, Any]:
        """Where the run stands, for the run panel: steps done of the total, epoch (from 1), the latest loss
        read back and held-out metrics, steps/s and the estimated seconds left (None until measured), the
        decision log, the checkpoints written (step, key), the epochs finished since the last call, and
        whether the run is done (and stopped by a rule). `saved`: the states saved from the page. `retired`:
        the keys of `checkpoints` no longer stored (the retention rule deleted them, this run or the run it
        resumed); `keep`: how many of the last the rule keeps (None: every one). `host_us_per_dispatch`: what
        recording and submitting a step cost the host a kernel (a GPU's executor measures it; else None)."""
        s, rate = self.session, self.steps_per_s
        rows, self.rows = self.rows, []
        left = max(self.total - s.steps, 0)
        return {
            "step": s.steps,
            "total": self.total,
            "epoch": min(s.epoch + 1, self.epochs),
            "epochs": self.epochs,
            "loss": _number(s.last_loss),
            "metrics": {name: _number(value) for name, value in s.last_metrics.items()},
            "steps_per_s": rate,
            "eta_s": None if rate is None else (0.0 if self.done else left / rate),
            "events": [str(event) for event in s.loop.events],
            "checkpoints": [{"step": step, "key": key} for step, key in s.checkpoints],
            "saved": [{"step": step, "key": key} for step, key in self.saved],
            "retired": list(dict.fromkeys([*self.gone, *s.retired])),
            "keep": self.keep,
            "epochs_done": rows,
            "done": self.done,
            "stopped": s.loop.stopped,
            "level": s.level.value,
            "device": s.device.name,
            "host_us_per_dispatch": _host_us(s.step),
            "trains": s.trains,  # false: a simulation or an analysis (no loss; its metrics are its results)
        }

    async def checkpoint(self) -> str:
        """Save the state as it is now (between chunks). It is the page's copy, not one of the loop
        program's: it joins neither the run's checkpoints nor its decision log, so saving changes nothing
        that a re-run of the run would compare."""
        s = self.session
        async with self.busy:
            key = await save(self.store, await s.checkpoint())
            self.saved.append((s.steps, key))
        return key

    async def weights(self) -> bytes:
        """The model as it is now, as one safetensors file: the tensors evaluation reads (parameters, and
        state such as batch norm's running statistics; no optimizer state), by their names in the program
        (`node.param`), with metadata naming the format, the program (its JSON and key), the level, the
        device and the step. Any safetensors reader loads it (torch, numpy, JAX)."""
        s = self.session
        async with self.busy:
            state = await s.checkpoint()
            tensors = {**state.tensors, **await s.tensors([n for n in s.carried if n not in state.tensors])}
        metadata = {
            "format": WEIGHTS_FORMAT,
            "program": json.dumps(self.program, sort_keys=True),
            "program_key": state.program,
            "level": state.level.value,
            "device": state.device,
            "step": str(state.step),
        }
        return encode({name: tensors[name] for name in s.carried}, metadata)

    async def export(self, what: str) -> bytes:
        """As a ZIP: the run handed to PyTorch as it is now (`torch`: scellis.torchexport, the state saved as a
        checkpoint first), or the fine-tuned model's files (scellis.models.finetune.exported's `what`)."""
        # the exporters' modules are imported when first used: a run that never exports waits for none of them
        if what == "torch":
            from scellis.torchexport.page import export_zip

            weights = None if self.model is None else self.model["model.safetensors"]
            async with self.busy:
                data = (self.train, self.test)
                return await export_zip(
                    self.session, self.program, data, engine=self.engine, store=self.store, weights=weights
                )
        if self.model is None:
            raise ValueError("this run starts from no pretrained model: there is no fine-tuned model to export")
        from scellis.models.finetune import exported

        async with self.busy:
            return await exported(self.session, what, self.model)

    async def manifest(self, base: str) -> dict[str, Any]:
        """The run's manifest (as JSON text) and its share link on the page's address `base`; the state
        as it is now is saved first as the run's final checkpoint (a paused run's manifest pins where it
        stopped)."""
        s = self.session
        async with self.busy:
            final = self.final = await save(self.store, await s.checkpoint())
            manifest = build_manifest(
                s,
                self.train,
                self.test,
                device_kind=self.device_kind,
                epochs=self.epochs,
                final=final,
                engine=self.engine,
                budget=self.noted.noted,
                browser=self.browser,
            )
        return {"manifest": to_json(manifest), "link": share_link(manifest, base), "final": final}

    async def verdict(self) -> dict[str, Any]:
        """A finished re-run compared with the pinned run: `verified` and the lines saying how it compares."""
        if self.pins is None:
            raise ValueError("this run was not opened from a pinned run: there is nothing to compare it with")
        if not self.done:
            raise ValueError(f"the re-run is at step {self.session.steps} of {self.total}: let it finish first")
        s = self.session
        assert s.checkpointer is not None
        async with self.busy:
            final = await s.checkpointer(s, "the final state")
        outcome = Outcome.of(s, final, self.train, self.test, device_kind=self.device_kind, epochs=self.epochs)
        ok, lines = compare(self.pins, outcome, self.engine)
        return {"verified": ok, "final": final, "pinned": self.pins.settings.final, "lines": lines}


def _host_us(step: object) -> float | None:
    """µs the host spent a dispatch on the steps so far (recording and submitting), where the step's device
    measures it (a GPU's executor); None on the CPU path, which runs a step as one call."""
    cost = getattr(step, "host_cost", None)
    measured = cost() if cost is not None else None
    return None if measured is None else measured["us_per_dispatch"]


def _number(value: float) -> float | str:
    """A float for JSON; 'nan', 'inf' or '-inf' where it is not finite (JSON has no such numbers)."""
    return value if math.isfinite(value) else str(value)


def epoch_json(result: EpochResult, session: Session) -> dict[str, Any]:
    """A finished epoch for the page's table: epochs count from 1 on screen; metrics are the held-out split's
    (`loss`, `metric/<node>`), or a program without a loss's results; `notes` say what the level could not
    use on this device; `memory` is what the session holds on the device and the memory plan's verdict;
    `batch` the program's batch; where fast scales its loss, `loss_scale` is the scale the epoch's last
    step used."""
    out = {
        "epoch": result.epoch + 1,
        "steps": result.steps,
        "batch": session.batch,
        "train_loss": _number(result.loss),
        "test": {name: _number(value) for name, value in result.metrics.items()},
        "level": session.level.value,
        "trains": session.trains,  # false: `test` holds a simulation's or an analysis's results
        "notes": list(session.plan.functions[0].schedule.notes),
        "memory": memory_json(session),
    }
    return out if result.loss_scale is None else {**out, "loss_scale": result.loss_scale}


def memory_json(session: Session) -> dict[str, Any]:
    """What the session holds on the device and its memory plan's verdict."""
    return {"bytes": session.plan.total, "verdict": session.verdict.color, "reasons": list(session.verdict.reasons)}
