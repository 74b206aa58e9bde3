"""Pinned runs: the manifest of a finished or stopped run, built from its session, written as JSON and read
back from untrusted JSON (every field checked; ManifestError names each problem's path).

Layout (format scellis.manifest/1), top-level fields in this order:
  program      {"key": the training step's key (the one its checkpoints carry), "json": the program}
  level, seed, device (kind: webgpu or cpu), epochs, steps, data (per split: content hash, examples,
  shape), final (the final state's checkpoint key): the settings that reproduce it (pins.Settings)
  checkpoints  every checkpoint the run's rules wrote, in order: {"step", "key"}
  engine       package version, engine version, WGSL and WASM hashes, Pyodide version (or null)
  environment  the device's name (as its checkpoints record it), adapter, browser (null outside the
               page) and Python
  plan         the memory plan: bytes held, verdict and its reasons, the budget (bytes or null, and how)
  metrics      the latest held-out evaluation ('loss', 'metric/<node>'; 'nan', 'inf', '-inf' when not finite)
  events       the decision log: {"step", "epoch", "text"}
"""

from __future__ import annotations

import copy
import json
import platform
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from scellis.datasets import Split
from scellis.graph import ProgramError, validate
from scellis.graph.errors import show
from scellis.loop import Event
from scellis.manifest.fields import ManifestError, Reader, join, number_json, parse_json
from scellis.manifest.pins import (
    DEVICE_KINDS,
    MAX_STEPS,
    SETTINGS_FIELDS,
    Engine,
    Settings,
    data_versions,
    read_engine,
    read_settings,
)
from scellis.plan.budget import Budget

if TYPE_CHECKING:
    from scellis.session import Session

FORMAT = "scellis.manifest/1"
FIELDS = ("format", "program", *SETTINGS_FIELDS, "checkpoints", "engine", "environment", "plan", "metrics", "events")
MAX_MANIFEST = 64 * 2**20  # bytes of JSON read_manifest reads
MAX_EVENTS = MAX_CHECKPOINTS = 100_000
MAX_METRICS, MAX_REASONS = 256, 64


@dataclass(frozen=True)
class Written:
    step: int
    key: str


@dataclass(frozen=True)
class PlanSummary:
    bytes: int  # held on the device while training (step and evaluation)
    verdict: str  # green, yellow or red
    reasons: tuple[str, ...]
    budget: int | None  # bytes the run could allocate, as measured; None: not measured or not measurable
    budget_how: str | None  # how it was measured, or why not; None when the budget is not known


@dataclass(frozen=True)
class Environment:
    device: str  # the device's name, as the run's checkpoints record it
    adapter: str | None  # the WebGPU adapter's description (the device's name in CPython)
    browser: str | None  # the page's user agent; None outside the browser
    python: str  # e.g. 'CPython 3.11.7'


@dataclass(frozen=True)
class Manifest:
    program: dict[str, Any]
    program_key: str
    settings: Settings
    checkpoints: tuple[Written, ...]
    engine: Engine
    environment: Environment
    plan: PlanSummary
    metrics: dict[str, float]
    events: tuple[Event, ...]


def build_manifest(
    session: Session,
    train: Split,
    test: Split,
    *,
    device_kind: str,
    epochs: int,
    final: str,
    engine: Engine,
    budget: Budget | None = None,
    browser: str | None = None,
    adapter: str | None = None,
) -> Manifest:
    """The manifest of `session`'s run so far (started, and run for `epochs` or paused), which read `train`
    and `test` and whose final state was saved under the key `final`; its checkpoints are those the session
    wrote (session.checkpoints). `budget`: the one its memory check measured, when the caller noted it
    (replay.NotedDevice); `adapter` defaults to the device's name."""
    if device_kind not in DEVICE_KINDS:
        raise ValueError(f"device_kind must be one of {', '.join(DEVICE_KINDS)}, got {device_kind!r}")
    level, device = session.level, session.device
    versions = data_versions(train, test) if session.has_data else ()  # a program without data pins none
    settings = Settings(level, session.rng.seed, device_kind, epochs, session.steps, versions, final)
    verdict = session.verdict
    python = f"{platform.python_implementation()} {platform.python_version()}"
    return Manifest(
        program=copy.deepcopy(session.compiled.program.source),
        program_key=session.at.key,
        settings=settings,
        checkpoints=tuple(Written(step, key) for step, key in session.checkpoints),
        engine=engine,
        environment=Environment(device.name, device.name if adapter is None else adapter, browser, python),
        plan=PlanSummary(
            session.plan.total,
            verdict.color,
            tuple(verdict.reasons),
            None if budget is None else budget.bytes,
            None if budget is None else budget.how,
        ),
        metrics=dict(session.last_metrics),
        events=tuple(session.loop.events),
    )


def manifest_json(manifest: Manifest) -> dict[str, Any]:
    plan, env = manifest.plan, manifest.environment
    budget = None if plan.budget_how is None else {"bytes": plan.budget, "how": plan.budget_how}
    return {
        "format": FORMAT,
        "program": {"key": manifest.program_key, "json": manifest.program},
        **manifest.settings.to_json(),
        "checkpoints": [{"step": w.step, "key": w.key} for w in manifest.checkpoints],
        "engine": manifest.engine.to_json(),
        "environment": {"device": env.device, "adapter": env.adapter, "browser": env.browser, "python": env.python},
        "plan": {"bytes": plan.bytes, "verdict": plan.verdict, "reasons": list(plan.reasons), "budget": budget},
        "metrics": {name: number_json(value) for name, value in manifest.metrics.items()},
        "events": [{"step": e.step, "epoch": e.epoch, "text": e.text} for e in manifest.events],
    }


def to_json(manifest: Manifest) -> str:
    """The manifest as the JSON file a user downloads (read_manifest reads it back)."""
    return json.dumps(manifest_json(manifest), indent=1, ensure_ascii=False, allow_nan=False) + "\n"


def read_manifest(data: str | bytes | Any) -> Manifest:
    """The manifest in `data` (its JSON text, or the value that text parses to), checked field by field as
    untrusted data; ManifestError lists every problem with its path otherwise. Nothing in it is run."""
    value = data
    if isinstance(data, str | bytes):
        value, issues = parse_json(data, MAX_MANIFEST, "manifest")
        if issues:
            raise ManifestError(issues)
    r = Reader()
    raw = r.record(value, "", FIELDS)
    if raw is None:
        raise ManifestError(r.issues)
    if raw["format"] != FORMAT:
        r.fail("format", f"must be {FORMAT!r}, got {show(raw['format'])}")
    program = read_program(raw["program"], "program", r, keyed=True)
    settings = read_settings(raw, r, ran=True, reads_data=program is None or reads_data(program[0]))
    checkpoints = _read_written(raw["checkpoints"], "checkpoints", r)
    engine = read_engine(raw["engine"], "engine", r)
    environment = _read_environment(raw["environment"], "environment", r)
    plan = _read_plan(raw["plan"], "plan", r)
    metrics = _read_metrics(raw["metrics"], "metrics", r)
    events = _read_events(raw["events"], "events", r)
    if checkpoints and settings is not None and settings.steps is not None and checkpoints[-1].step > settings.steps:
        r.fail("checkpoints", f"a checkpoint at step {checkpoints[-1].step} is after the run's {settings.steps} steps")
    if r.issues:
        raise ManifestError(r.issues)
    assert program is not None and settings is not None and checkpoints is not None and engine is not None
    assert environment is not None and plan is not None and metrics is not None and events is not None
    return Manifest(program[0], program[1], settings, checkpoints, engine, environment, plan, metrics, events)


def reads_data(program: dict[str, Any]) -> bool:
    """Whether a (validated) program has input nodes: a run of one without pins no data versions."""
    return any(node["op"] == "input" for node in program["nodes"])


def read_program(value: Any, path: str, r: Reader, *, keyed: bool) -> tuple[dict[str, Any], str] | None:
    """The program after scellis.graph.validate, its issues reported under `path`. `keyed`: `value` is
    {"key": the program's key, "json": the program} (else the key returned is empty)."""
    key: str | None = ""
    if keyed:
        raw = r.record(value, path, ("key", "json"))
        if raw is None:
            return None
        key, value, path = r.key(raw["key"], join(path, "key")), raw["json"], join(path, "json")
    try:
        validate(value)
    except ProgramError as error:
        for issue in error.issues:
            node = "" if issue.node is None else f"node {issue.node!r}: "
            node = node if issue.port is None else f"node {issue.node!r}, port {issue.port!r}: "
            r.fail(join(path, issue.path) if issue.path else path, node + issue.message)
        return None
    return None if key is None else (value, key)


def _read_written(value: Any, path: str, r: Reader) -> tuple[Written, ...] | None:
    entries = r.array(value, path, MAX_CHECKPOINTS)
    if entries is None:
        return None
    out: list[Written] = []
    for i, entry in enumerate(entries):
        raw = r.record(entry, join(path, i), ("step", "key"))
        if raw is None:
            continue
        step = r.integer(raw["step"], join(join(path, i), "step"), 0, MAX_STEPS)
        key = r.key(raw["key"], join(join(path, i), "key"))
        if step is not None and out and step < out[-1].step:
            r.fail(join(join(path, i), "step"), f"checkpoints are listed in order: step {step} after {out[-1].step}")
        elif step is not None and key is not None:
            out.append(Written(step, key))
    return tuple(out) if len(out) == len(entries) else None


def _read_environment(value: Any, path: str, r: Reader) -> Environment | None:
    raw = r.record(value, path, ("device", "adapter", "browser", "python"))
    if raw is None:
        return None
    device, python = r.text(raw["device"], join(path, "device")), r.text(raw["python"], join(path, "python"))
    adapter, browser = (r.maybe_text(raw[n], join(path, n)) for n in ("adapter", "browser"))
    if None in (device, python) or (raw["adapter"] is not None and adapter is None):
        return None
    if raw["browser"] is not None and browser is None:
        return None
    return Environment(device, adapter, browser, python)  # type: ignore[arg-type]


def _read_plan(value: Any, path: str, r: Reader) -> PlanSummary | None:
    raw = r.record(value, path, ("bytes", "verdict", "reasons", "budget"))
    if raw is None:
        return None
    total = r.integer(raw["bytes"], join(path, "bytes"))
    verdict = r.choice(raw["verdict"], join(path, "verdict"), ("green", "yellow", "red"))
    entries = r.array(raw["reasons"], join(path, "reasons"), MAX_REASONS)
    reasons = [r.text(v, join(join(path, "reasons"), i)) for i, v in enumerate(entries or [])]
    budget, how = None, None
    if raw["budget"] is not None:
        where = join(path, "budget")
        held = r.record(raw["budget"], where, ("bytes", "how"))
        if held is None:
            return None
        budget = None if held["bytes"] is None else r.integer(held["bytes"], join(where, "bytes"))
        how = r.text(held["how"], join(where, "how"))
        if how is None or (held["bytes"] is not None and budget is None):
            return None
    if None in (total, verdict, entries) or None in reasons:
        return None
    return PlanSummary(total, verdict, tuple(reasons), budget, how)  # type: ignore[arg-type]


def _read_metrics(value: Any, path: str, r: Reader) -> dict[str, float] | None:
    if not isinstance(value, dict) or len(value) > MAX_METRICS:
        r.fail(path, f"must be an object of at most {MAX_METRICS} metrics, got {type(value).__name__}")
        return None
    out = {}
    for name, number in value.items():
        if r.text(name, join(path, name), 200) is not None:
            out[name] = r.number(number, join(path, name))
    checked = {name: v for name, v in out.items() if v is not None}
    return checked if len(checked) == len(value) else None


def _read_events(value: Any, path: str, r: Reader) -> tuple[Event, ...] | None:
    entries = r.array(value, path, MAX_EVENTS)
    if entries is None:
        return None
    out = []
    for i, entry in enumerate(entries):
        where = join(path, i)
        raw = r.record(entry, where, ("step", "epoch", "text"))
        if raw is None:
            continue
        step = r.integer(raw["step"], join(where, "step"), 0, MAX_STEPS)
        epoch = r.integer(raw["epoch"], join(where, "epoch"), 0, MAX_STEPS)
        text = r.text(raw["text"], join(where, "text"))
        if step is not None and epoch is not None and text is not None:
            out.append(Event(step, epoch, text))
    return tuple(out) if len(out) == len(entries) else None
