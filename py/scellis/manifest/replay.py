"""Pinned runs: running a program so that its manifest can be pinned, and re-running a pinned run (from a
manifest or a share link: `Pins`) to verify it.

Both build their session the same way (`new_session`), so a re-run compiles what the run compiled. A
re-run writes each checkpoint under the pinned run's device name: a checkpoint records its device, and
two CPU paths (wasmtime here, the browser's there) or two wasmtime versions name themselves differently,
while the state they reach at level debug is the same bits. The key a re-run compares is thus the key of
its state, wherever it ran.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from scellis.datasets import Split
from scellis.levels import Level
from scellis.loop import Event
from scellis.manifest.claims import Difference, StoredClaim, check_stored, differences, unchecked_lines
from scellis.manifest.fields import number_json
from scellis.manifest.link import FORMAT as LINK_FORMAT
from scellis.manifest.link import Shared, link_json
from scellis.manifest.pins import DataVersion, Engine, Settings, data_json, data_versions
from scellis.manifest.record import FORMAT as MANIFEST_FORMAT
from scellis.manifest.record import Manifest, Written, manifest_json
from scellis.pipeline import Compiled, compile_program
from scellis.plan.budget import Budget
from scellis.plan.planned import Planned
from scellis.runtime.device import CompiledStep, Device
from scellis.session import Checkpointer, EpochResult, Session
from scellis.store.checkpoint import save
from scellis.store.objects import Store, settle


def session_program(program: dict[str, Any], train: Split, test: Split) -> Compiled:
    """`program` compiled as the session a run trains in needs it: evaluation of the whole held-out split in
    training-sized batches, planned for the training split's size (as the app's session)."""
    return compile_program(program, eval_rows=test.n, examples=train.n)


def new_session(
    program: dict[str, Any],
    device: Device,
    *,
    level: Level,
    seed: int,
    train: Split,
    test: Split,
    compiled: Compiled | None = None,
    weights: bytes | None = None,
) -> Session:
    """The session a pinned run trains in (`compiled`: session_program's, when the caller made it first;
    `weights`: the file a program of pretrained parameters pins)."""
    compiled = compiled or session_program(program, train, test)
    return Session(
        program, device, seed=seed, level=level, eval_rows=test.n, examples=train.n, compiled=compiled, weights=weights
    )


class NotedDevice:
    """A device that keeps the budget its memory check measured (`noted`), so the manifest can pin it;
    everything else is the device's own."""

    def __init__(self, device: Device) -> None:
        self.device = device
        self.noted: Budget | None = None
        self.name, self.features, self.limits = device.name, device.features, device.limits

    async def budget(self, need: int) -> Budget:
        self.noted = await self.device.budget(need)
        return self.noted

    async def compile(self, planned: Planned, host: CompiledStep | None = None) -> CompiledStep:
        return await self.device.compile(planned, host)


def checkpoints_as(store: Store, device: str) -> Checkpointer:
    """A checkpointer writing the session's checkpoints to `store` as if `device` had written them."""

    async def write(session: Session, why: str) -> str:
        return await save(store, replace(await session.checkpoint(), device=device))

    return write


@dataclass(frozen=True)
class Pins:
    """What a re-run is compared with. `claims` is the pinned JSON, claim by claim: a manifest's whole
    (manifest_json), or a share link's (link_json), which pins the program, the settings and where it ran,
    but no program key, no checkpoints before the final one, no metrics and no decision log."""

    program: dict[str, Any]
    settings: Settings
    device: str  # the device's name, as the run's checkpoints record it
    engine_version: str
    claims: dict[str, Any]
    program_key: str | None = None  # None: a share link's
    checkpoints: tuple[Written, ...] = ()

    @classmethod
    def of(cls, run: Manifest | Shared) -> Pins:
        if isinstance(run, Manifest):
            env, engine, claims = run.environment, run.engine, manifest_json(run)
            keyed = (run.program_key, run.checkpoints)
            return cls(run.program, run.settings, env.device, engine.engine_version, claims, *keyed)
        if run.ran_on is None:
            raise ValueError("the link shares a program that has not been run: there is no result to compare with")
        return cls(run.program, run.settings, run.ran_on.device, run.ran_on.engine_version, link_json(run))


@dataclass(frozen=True)
class Outcome:
    """What a re-run reached and recomputed: its program key, the device it ran on (name and kind), its
    steps and whether it ended there by itself (its epochs' end or a rule's stop: `finished`), its final
    key, checkpoints, metrics and decision log, the bytes its memory plan holds and the data it read."""

    program_key: str
    device: str
    device_kind: str
    steps: int
    finished: bool
    final: str
    checkpoints: tuple[Written, ...]
    metrics: dict[str, float]
    events: tuple[Event, ...]
    plan_bytes: int
    data: tuple[DataVersion, ...]

    @classmethod
    def of(cls, session: Session, final: str, train: Split, test: Split, *, device_kind: str, epochs: int) -> Outcome:
        """Where `session` (a re-run, stopped) ended, its final state saved under `final`."""
        key = session.at.key
        written = tuple(Written(step, k) for step, k in session.checkpoints)
        finished = session.loop.stopped or session.epoch >= epochs
        data = data_versions(train, test) if session.has_data else ()
        metrics, events = dict(session.last_metrics), tuple(session.loop.events)
        return cls(
            key, session.device.name, device_kind, session.steps, finished, final, written, metrics, events,
            session.plan.total, data,
        )  # fmt: skip


def replay_session(
    pins: Pins, device: Device, train: Split, test: Split, store: Store, *, weights: bytes | None = None
) -> Session:
    """The session that re-runs the pinned run on `device`, its checkpoints going to `store` (as if written
    by the pinned run's device: see the module's docstring); `weights`: the file a program of pretrained
    parameters pins."""
    pinned = pins.settings
    session = new_session(
        pins.program, device, level=pinned.level, seed=pinned.seed, train=train, test=test, weights=weights
    )
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
    return Outcome.of(session, final, train, test, device_kind=pinned.device, epochs=pinned.epochs)


WHERE = "where the run ran: a re-run elsewhere cannot recompute it"
MEMORY = "the memory the run's device had: of the plan, only the bytes it holds are recomputed"
UNCHECKED = {
    "environment.device": "checked only through the checkpoint keys, which the re-run writes under this name",
    "environment.adapter": WHERE,
    "environment.browser": WHERE,
    "environment.python": WHERE,
    "plan.verdict": MEMORY,
    "plan.reasons": MEMORY,
    "plan.budget": MEMORY,
    "ran_on.device": "checked only through the final key, which the re-run writes under this name",
}
UNPINNED = (
    "not pinned by a share link: the program key, the checkpoints before the final one, the metrics, the decision "
    "log, the memory plan and the engine's hashes (verify the run's manifest to compare them too)"
)
RESUMED = "resumed on "  # a decision-log entry a re-run from the start cannot have (Session.resume)
SHOWN_DIFFERENCES = 40


def unchecked_claims(pins: Pins, outcome: Outcome, engine: Engine) -> dict[str, str]:
    """The pinned claims this re-run cannot recompute, with why (beside the fixed ones: UNCHECKED)."""
    out = dict(UNCHECKED)
    pinned = pins.settings
    if engine.pyodide is None:
        out["engine.pyodide"] = "this engine's Pyodide version is not known here: no build of it describes it"
    if outcome.device_kind != pinned.device:
        out["device"] = f"the re-run ran on {outcome.device_kind}, not on {pinned.device}"
    if not outcome.finished:
        out["epochs"] = (
            f"the run stopped at step {outcome.steps}, before the end of its {pinned.epochs} epochs (paused): "
            "the steps it took do not tell how many epochs it was set to"
        )
    return out


def recomputed(pins: Pins, outcome: Outcome, engine: Engine) -> dict[str, Any]:
    """The re-run's claims in the pinned JSON's layout: a manifest's, or a share link's (`ran_on` holding the
    engine's version only). Inputs of the re-run (program, level, seed, epochs) are its own by construction."""
    pinned = pins.settings
    order = [v.get("split") for v in pins.claims.get("data", []) if isinstance(v, dict)]
    data = sorted((v for v in outcome.data if v.split in order), key=lambda v: order.index(v.split))
    settings = {**pinned.to_json(), "device": outcome.device_kind, "steps": outcome.steps, "final": outcome.final}
    settings["data"] = [data_json(v) for v in data]
    if pins.program_key is None:
        return {
            "format": LINK_FORMAT,
            "program": pins.program,
            **settings,
            "ran_on": {"engine_version": engine.engine_version},
        }
    return {
        "format": MANIFEST_FORMAT,
        "program": {"key": outcome.program_key, "json": pins.program},
        **settings,
        "checkpoints": [{"step": w.step, "key": w.key} for w in outcome.checkpoints],
        "engine": engine.to_json(),
        "environment": {},  # all of it unchecked (UNCHECKED)
        "plan": {"bytes": outcome.plan_bytes},
        "metrics": {name: number_json(value) for name, value in outcome.metrics.items()},
        "events": [{"step": e.step, "epoch": e.epoch, "text": e.text} for e in outcome.events],
    }


def claim_differences(pins: Pins, outcome: Outcome, engine: Engine) -> tuple[list[Difference], list[str]]:
    """Every claim of `pins` that the re-run recomputed otherwise (claims.differences), and the lines naming
    the claims it could not recompute (never compared, never taken as matching)."""
    claims, unchecked = dict(pins.claims), unchecked_claims(pins, outcome, engine)
    resumed = [e for e in claims.get("events", []) if str(e.get("text", "")).startswith(RESUMED)]
    if resumed:
        claims["events"] = [e for e in claims["events"] if e not in resumed]
    lines = unchecked_lines(unchecked, claims)
    lines += [
        f"not checked: the decision log's 'step {e['step']}: {e['text']}' (a re-run from the start resumes nowhere)"
        for e in resumed
    ]
    if pins.program_key is None:
        lines.append(UNPINNED)
    return differences(claims, recomputed(pins, outcome, engine), unchecked), lines


def _promised(pins: Pins, outcome: Outcome, engine: Engine) -> str | None:
    """Where the pinned level promises this re-run the very same bits (levels.PROMISES), or None: debug on
    the CPU path anywhere or on one device, prod on one device, each with one engine version; fast never."""
    level, kind = pins.settings.level, pins.settings.device
    if engine.engine_version != pins.engine_version or level is Level.FAST:
        return None
    if level is Level.DEBUG and kind == "cpu":
        return "on the CPU path everywhere"
    return "on one device" if outcome.device == pins.device else None


def compare(
    pins: Pins, outcome: Outcome, engine: Engine, stored: list[Difference] | None = None
) -> tuple[bool, list[str]]:
    """Whether the re-run recomputed every claim it can as pinned (`stored`: what check_stored found wrong
    with the pinned checkpoint objects), and what to tell the user: each difference by its field path, the
    pinned and the recomputed value; the claims not checked and why; the verdict."""
    pinned, level = pins.settings, pins.settings.level.value
    found, unchecked = claim_differences(pins, outcome, engine)
    found += stored or []
    lines = []
    if outcome.device != pins.device:
        lines.append(
            f"note: this device is {outcome.device!r}, the run's was {pins.device!r}; the "
            "re-run's checkpoints carry the run's device name, so their keys compare the state alone"
        )
    if not found:
        what = "manifest" if pins.program_key is not None else "share link"
        lines += unchecked
        lines.append(f"every other claim of the {what} that the re-run recomputes matches too")
        lines.append(
            f"verified: the re-run reached the pinned final checkpoint {pinned.final} bit for bit "
            f"(level {level}, seed {pinned.seed}, {pinned.device}, {outcome.steps} steps)"
        )
        return True, lines
    lines.append(_headline(pins, outcome, engine, len(found)))
    lines += [f"  {difference}" for difference in found[:SHOWN_DIFFERENCES]]
    if len(found) > SHOWN_DIFFERENCES:
        lines.append(f"  ... and {len(found) - SHOWN_DIFFERENCES} more")
    if pins.program_key is None:  # a link: no metrics pinned; the re-run's are shown as they are
        lines += [
            f"  {name}: here {value!r} (the link pins no metrics)" for name, value in sorted(outcome.metrics.items())
        ]
    return False, lines + unchecked


def _headline(pins: Pins, outcome: Outcome, engine: Engine, count: int) -> str:
    pinned, level = pins.settings, pins.settings.level.value
    if outcome.final == pinned.final:
        return f"MISMATCH: the re-run reached the pinned final checkpoint {pinned.final}, but {count} claim(s) differ:"
    keys = f"the re-run's final checkpoint is {outcome.final}, the run pins {pinned.final}."
    promised = _promised(pins, outcome, engine)
    if promised is not None:
        return (
            f"MISMATCH: {keys} Level {level} promises bit-identical results {promised} with one engine version, "
            "so the run did not reproduce."
        )
    return (
        f"DIFFERENT: {keys} Level {level} does not promise the same bits here: another device or engine "
        "version may legitimately differ, within the level's declared tolerance; compare the metrics below."
    )


def stored_claims(pins: Pins) -> list[StoredClaim]:
    """The checkpoint objects the run pins: each listed checkpoint (a manifest's) and the final state."""
    listed = [StoredClaim(f"checkpoints[{i}].key", w.key, w.step) for i, w in enumerate(pins.checkpoints)]
    final = pins.settings.final
    return listed if final is None else [*listed, StoredClaim("final", final, pins.settings.steps)]


async def check_store(store: Store, pins: Pins) -> tuple[list[Difference] | None, str]:
    """What `store` holds otherwise than the run pins (claims.check_stored), and a line saying what was
    checked. A store holding none of the pinned objects is not the run's store: nothing in it is checked
    (None, and the line says so). In the run's store every object held is read and checked, and the final
    state must be held; a listed checkpoint that is absent is named as not checked, not as a difference,
    since a run keeps only its last few checkpoints and its best (store.retention)."""
    claims = stored_claims(pins)
    held = [await settle(store.has(claim.key)) for claim in claims]
    if not any(held):
        return None, f"not checked: the store holds none of the {len(claims)} checkpoint object(s) the run pins"
    pinned = pins.settings
    checked = [c for c, h in zip(claims, held, strict=True) if h or c.path == "final"]
    absent = [c.path for c, h in zip(claims, held, strict=True) if not h and c.path != "final"]
    found = await check_stored(
        store, checked, program=pins.program_key, level=pinned.level.value, device=pins.device, where="in the store"
    )
    line = f"checked the {len(checked)} of {len(claims)} checkpoint object(s) the run pins that the store holds"
    if absent:
        line += (
            f"; not checked: {', '.join(absent)}, not in the store (a run keeps only its last few checkpoints"
            " and its best)"
        )
    return found, line
