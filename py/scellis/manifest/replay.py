"""Pinned runs: running a program so that its manifest can be pinned, and re-running a pinned run (from a
manifest or a share link: `Pins`) to verify it.

Both build their session the same way (`new_session`), so a re-run compiles what the run compiled. A
re-run writes each checkpoint under the pinned run's device name: a checkpoint records its device, and
two CPU paths (wasmtime here, the browser's there) or two wasmtime versions name themselves differently,
while the state they reach at level debug is the same bits. The key a re-run compares is thus the key of
its state, wherever it ran.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from scellis.datasets import Split
from scellis.levels import Level
from scellis.lower import Schedule
from scellis.manifest.link import Shared
from scellis.manifest.pins import Engine, Settings
from scellis.manifest.record import Manifest, Written
from scellis.plan.budget import Budget
from scellis.runtime.device import Device
from scellis.session import Checkpointer, EpochResult, Session
from scellis.store.checkpoint import save
from scellis.store.objects import Store


def new_session(
    program: dict[str, Any], device: Device, *, level: Level, seed: int, train: Split, test: Split
) -> Session:
    """The session a pinned run trains in: evaluation of the whole held-out split in training-sized
    batches, planned for the training split's size (as the app's session)."""
    return Session(program, device, seed=seed, level=level, eval_rows=test.n, examples=train.n)


class NotedDevice:
    """A device that keeps the budget its memory check measured (`noted`), so the manifest can pin it;
    everything else is the device's own."""

    def __init__(self, device: Device) -> None:
        self.device = device
        self.noted: Budget | None = None
        self.name, self.features, self.limits = device.name, device.features, device.limits

    async def budget(self, need: int) -> Budget:
        measured = self.device.budget(need)
        self.noted = await measured if inspect.isawaitable(measured) else measured
        return self.noted

    def compile(self, schedule: Schedule) -> Any:
        return self.device.compile(schedule)


def checkpoints_as(store: Store, device: str) -> Checkpointer:
    """A checkpointer writing the session's checkpoints to `store` as if `device` had written them."""

    async def write(session: Session, why: str) -> str:
        return await save(store, replace(await session.checkpoint(), device=device))

    return write


@dataclass(frozen=True)
class Pins:
    """What a re-run is compared with: a manifest pins all of it; a share link pins the program, the
    settings and where it ran, but no program key, no checkpoints before the final one and no metrics."""

    program: dict[str, Any]
    settings: Settings
    device: str  # the device's name, as the run's checkpoints record it
    engine_version: str
    program_key: str | None = None
    checkpoints: tuple[Written, ...] = ()
    metrics: dict[str, float] | None = None

    @classmethod
    def of(cls, run: Manifest | Shared) -> Pins:
        if isinstance(run, Manifest):
            env, engine = run.environment, run.engine
            pinned = (run.program_key, run.checkpoints, run.metrics)
            return cls(run.program, run.settings, env.device, engine.engine_version, *pinned)
        if run.ran_on is None:
            raise ValueError("the link shares a program that has not been run: there is no result to compare with")
        return cls(run.program, run.settings, run.ran_on.device, run.ran_on.engine_version)


@dataclass(frozen=True)
class Outcome:
    """Where a re-run ended: its program key, the device it ran on, its steps, checkpoints and metrics."""

    program_key: str
    device: str
    steps: int
    final: str
    checkpoints: tuple[Written, ...]
    metrics: dict[str, float]


def replay_session(pins: Pins, device: Device, train: Split, test: Split, store: Store) -> Session:
    """The session that re-runs the pinned run on `device`, its checkpoints going to `store` (as if written
    by the pinned run's device: see the module's docstring)."""
    pinned = pins.settings
    session = new_session(pins.program, device, level=pinned.level, seed=pinned.seed, train=train, test=test)
    session.checkpointer = checkpoints_as(store, pins.device)
    return session


async def replay(
    session: Session, pins: Pins, train: Split, test: Split, *, report: Callable[[EpochResult], None] | None
) -> Outcome:
    """Run `session` (replay_session's) at the pinned level and seed on `train` and `test` (checked against
    the pinned data before: pins.check_data) for as many epochs and steps as the run took; `report` gets
    each finished epoch. The final state is saved like the rest."""
    pinned = pins.settings
    await session.start(train)
    await session.run(train, test, epochs=pinned.epochs, steps=pinned.steps, report=report)
    assert session.checkpointer is not None
    final = await session.checkpointer(session, "the final state")
    key = session.compiled.key(pinned.level, session.device.features)
    written = tuple(Written(step, key) for step, key in session.checkpoints)
    return Outcome(key, session.device.name, session.steps, final, written, dict(session.last_metrics))


def _differences(pins: Pins, outcome: Outcome, engine: Engine) -> list[str]:
    """What the re-run had or reached otherwise than the pinned run, one line each (of what is pinned)."""
    out = []
    pairs = (
        ("program key", pins.program_key, outcome.program_key),
        ("engine", pins.engine_version, engine.engine_version),
        ("steps", pins.settings.steps, outcome.steps),
    )
    out += [f"{what}: pinned {want}, here {got}" for what, want, got in pairs if want is not None and want != got]
    if pins.program_key is not None:  # a manifest: every checkpoint the run wrote is pinned
        written = list(zip(pins.checkpoints, outcome.checkpoints, strict=False))
        first = next((w for w, g in written if w != g), None)
        if first is not None:
            out.append(f"the first checkpoint to differ is the one at step {first.step} (pinned {first.key})")
        elif len(pins.checkpoints) != len(outcome.checkpoints):
            out.append(f"checkpoints written: pinned {len(pins.checkpoints)}, here {len(outcome.checkpoints)}")
    if pins.metrics is None:  # a link: no metrics pinned; the re-run's are shown as they are
        out += [f"{name}: here {value!r} (the link pins no metrics)" for name, value in sorted(outcome.metrics.items())]
        return out
    for name in sorted(set(pins.metrics) | set(outcome.metrics)):
        want, got = pins.metrics.get(name, math.nan), outcome.metrics.get(name, math.nan)
        if want != got:
            out.append(f"{name}: pinned {want!r}, here {got!r} (difference {got - want:+.3g})")
    return out


def _promised(pins: Pins, outcome: Outcome, engine: Engine) -> str | None:
    """Where the pinned level promises this re-run the very same bits (levels.PROMISES), or None: debug on
    the CPU path anywhere or on one device, prod on one device, each with one engine version; fast never."""
    level, kind = pins.settings.level, pins.settings.device
    if engine.engine_version != pins.engine_version or level is Level.FAST:
        return None
    if level is Level.DEBUG and kind == "cpu":
        return "on the CPU path everywhere"
    return "on one device" if outcome.device == pins.device else None


def compare(pins: Pins, outcome: Outcome, engine: Engine) -> tuple[bool, list[str]]:
    """Whether the re-run reached the pinned final checkpoint, and what to tell the user about it."""
    pinned, level = pins.settings, pins.settings.level.value
    lines = []
    if outcome.device != pins.device:
        lines.append(
            f"note: this device is {outcome.device!r}, the run's was {pins.device!r}; the "
            "re-run's checkpoints carry the run's device name, so their keys compare the state alone"
        )
    if outcome.final == pinned.final:
        lines.append(
            f"verified: the re-run reached the pinned final checkpoint {pinned.final} bit for bit "
            f"(level {level}, seed {pinned.seed}, {pinned.device}, {outcome.steps} steps)"
        )
        return True, lines
    keys = f"the re-run's final checkpoint is {outcome.final}, the run pins {pinned.final}."
    promised = _promised(pins, outcome, engine)
    if promised is not None:
        lines.append(
            f"MISMATCH: {keys} Level {level} promises bit-identical results {promised} with one engine version, "
            "so the run did not reproduce."
        )
    else:
        lines.append(
            f"DIFFERENT: {keys} Level {level} does not promise the same bits here: another device or engine "
            "version may legitimately differ, within the level's declared tolerance; compare the metrics below."
        )
    lines += [f"  {line}" for line in _differences(pins, outcome, engine)]
    return False, lines
