"""What the web app calls: the memory plan of the page's program on the page's device (with remedies),
applying a remedy, opening a run of the program (from init or a stored checkpoint) that the page drives,
reading a share link and opening the re-run of the run it pins; the data sets the page offers, whether a
program fits one, and a starter program for one. Runs in Pyodide, called by name through scellis.calls'
table; the page passes the data (`source`: "site" with the digits files, "chars" for the Zen of Python's
characters, or "user" with the files the page's importers wrote), the program JSON and dist/build.json, and
opened the WebGPU device."""

from __future__ import annotations

import json
import time
from typing import Any

from scellis import __version__
from scellis.datafit import fit_problems, starter_program, vocabulary
from scellis.datasets import (
    CANCER_INFO,
    DIGITS_INFO,
    DataInfo,
    Split,
    cancer_from_files,
    chars_info,
    from_files,
    from_user_files,
    read_chars,
    zen_of_python,
)
from scellis.engine import engine_files
from scellis.examples import catalogue
from scellis.graph import ProgramError, palette
from scellis.guide import guide_of
from scellis.levels import parse_level
from scellis.manifest import Engine, read_share_link
from scellis.manifest.pins import data_versions, engine_of
from scellis.manifest.replay import Pins, session_program
from scellis.pagerun import PageRun
from scellis.pipeline import Compiled, compile_program, plan_report
from scellis.plan.breakdown import CATEGORIES
from scellis.plan.budget import GREEN_SHARE, Budget, Verdict
from scellis.plan.planned import Planned
from scellis.plan.remedies import Advice, apply
from scellis.plan.report import Report
from scellis.rerunstorage import rerun_storage
from scellis.runtime.device import CompiledStep, Device
from scellis.runtime.host import pyodide_version
from scellis.session import Phases, PlanRefused, timed
from scellis.store.checkpoint import save
from scellis.store.objects import Store, check_key
from scellis.store.retention import KEEP
from scellis.warmup import PAGE_EXAMPLE, ahead, first_step_kernels, for_next_run


async def _device(kind: str) -> Device:
    if kind == "webgpu":
        from scellis.runtime.webgpu.browser import BrowserWebGPU

        return BrowserWebGPU()
    if kind == "cpu":
        from scellis.runtime.cpu.device import CpuDevice

        return await CpuDevice.open()
    raise ValueError(f"unknown device kind {kind!r} (expected 'webgpu' or 'cpu')")


SOURCES = ("site", "chars", "cancer", "user", "text")
EXAMPLE_SOURCES = {"digits": "site", "chars": "chars", "breast-cancer": "cancer", "none": None}


def load_data(source: str, files: dict[str, bytes]) -> tuple[Split, Split, DataInfo]:
    """(train, test, info) of the page's data: this site's digits (their four files), the Zen of Python's
    next-character windows (no files: the text ships with Python), the user's own (from_user_files), or
    labelled texts tokenized for a pretrained model (scellis.models.finetune.text_data; the model's files come
    with them)."""
    if source == "site":
        train, test = from_files(files)
        return train, test, DIGITS_INFO
    if source == "chars":
        train, test, alphabet = read_chars(zen_of_python())
        return train, test, chars_info(alphabet)
    if source == "cancer":
        train, test = cancer_from_files(files)
        return train, test, CANCER_INFO
    if source == "user":
        return from_user_files(files)
    if source == "text":
        from scellis.models.finetune import text_data  # fine-tuning's modules, imported when first used

        return text_data(files)
    raise ValueError(f"unknown data source {source!r} (expected one of {', '.join(SOURCES)})")


class DataMismatch(ValueError):
    """The program cannot train on the data: every reason, each naming the input node and both sides."""

    def __init__(self, problems: list[str], data: str) -> None:
        super().__init__(f"the program does not fit the data {data!r}: {'; '.join(problems)}")
        self.problems, self.data = problems, data


def _check_fit(program: dict[str, Any], compiled: Compiled, info: DataInfo, train: Split, test: Split) -> None:
    problems = fit_problems(program, compiled, info, {"train": train, "test": test})
    if problems:
        raise DataMismatch(problems, info.name)


def _builtin_fits(program: dict[str, Any], compiled: Compiled) -> list[str]:
    """The built-in data sets (by source name) the program fits, for the page to offer."""
    alphabet = read_chars(zen_of_python())[2]
    infos = {"site": DIGITS_INFO, "chars": chars_info(alphabet), "cancer": CANCER_INFO}
    return [name for name, info in infos.items() if not fit_problems(program, compiled, info)]


def data_json(source: str, files: dict[str, bytes]) -> str:
    """The page's data as the Data card shows it: its description (DataInfo), the splits' sizes and
    versions (the content hashes a manifest pins) and, for token windows, the vocabulary size."""
    train, test, info = load_data(source, files)
    versions = [{"split": v.split, "sha256": v.sha256, "examples": v.examples} for v in data_versions(train, test)]
    return json.dumps(
        {**info.to_json(), "versions": versions, "vocab": vocabulary(info, {"train": train, "test": test})}
    )


def starter_json(source: str, files: dict[str, bytes]) -> str:
    """A starter program for the page's data (datafit.starter_program), its table sized by every split, as JSON."""
    train, test, info = load_data(source, files)
    return json.dumps(starter_program(info, vocabulary(info, {"train": train, "test": test})))


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
        return capped(await self.device.budget(need), self.cap)

    async def compile(self, planned: Planned, host: CompiledStep | None = None) -> CompiledStep:
        return await self.device.compile(planned, host)


def example_program() -> str:
    """The program the page starts with (and returns to on reset): the digits MLP, as JSON."""
    return json.dumps(PAGE_EXAMPLE())


def examples_json() -> str:
    """The example programs the editor opens, the page's own first: `[{"name", "summary", "program",
    "source"}]` as JSON, the summary being the builder's docstring, its first paragraph on one line, and
    `source` the built-in data it reads (null: a program without data, such as a simulation)."""
    examples = []
    for name, (data, summary, build) in catalogue().items():
        examples.append({"name": name, "summary": summary, "program": build(), "source": EXAMPLE_SOURCES[data]})
    return json.dumps(examples)


def palette_json() -> str:
    """The op catalog for the editor's palette (graph.catalog.palette), as JSON."""
    return json.dumps(palette())


def guide_json(program: str, level: str, features: list[str]) -> str:
    """The Guide of `program` (JSON text) at `level` on a device with `features` (scellis.guide): every
    stage's artifact, the links from each program node to its IR ops and kernels, and the training step's
    buffer lifetimes; with the time compiling took."""
    start = time.perf_counter()
    at = compile_program(json.loads(program)).at(parse_level(level), frozenset(features))
    shown = guide_of(at)
    elapsed = (time.perf_counter() - start) * 1000
    return json.dumps({**shown, "compile_ms": elapsed})


def check_program(program: str) -> str:
    """Every problem of `program` (JSON text) as the editor marks them: `{"issues": [{path, node, port,
    message}]}`, none when it compiles. Problems of the text itself (not JSON, not an object) have the
    empty path; shape and type errors come from compiling it, each with its node."""
    try:
        data = json.loads(program)
    except json.JSONDecodeError as error:
        where = f"line {error.lineno}, column {error.colno}"
        return json.dumps(
            {"issues": [{"path": "", "node": None, "port": None, "message": f"not JSON ({where}): {error.msg}"}]}
        )
    try:
        compile_program(data)
    except ProgramError as error:
        return json.dumps({"issues": [issue.to_json() for issue in error.issues]})
    return json.dumps({"issues": []})


def apply_remedy(program: str, change: str) -> str:
    """`program` (JSON) with a remedy's change (JSON, as the plan offered it) applied, as JSON."""
    return json.dumps(apply(json.loads(program), json.loads(change)))


async def plan_example(
    source: str, files: dict[str, bytes], program: str, device_kind: str, level: str, *, cap: int | None
) -> str:
    """The memory plan of `program` (JSON) on the page's device at `level`, as the session that trains it
    on this data would hold it (evaluating the held-out split in training-sized batches, with
    its last batch's own evaluation; a resident data set holding the training split), under the memory
    cap `cap` (bytes, or None). Remedies and capacity facts come with a verdict that is not green. A
    program that does not fit the data is not planned: `{"unfit": {"problems", "data": its name, "fits":
    the built-in sources the program fits}}`. On WebGPU, the device then begins making the pipelines a run
    of this plan compiles before its first step (scellis.warmup), which that run finds made or under way."""
    train, test, info = load_data(source, files)
    data, parsed = json.loads(program), parse_level(level)
    compiled = session_program(data, train, test)
    problems = fit_problems(data, compiled, info, {"train": train, "test": test})
    if problems:
        return json.dumps({"unfit": {"problems": problems, "data": info.name, "fits": _builtin_fits(data, compiled)}})
    raw = await _device(device_kind)
    device = CappedDevice(raw, cap)
    # remedies are judged against the budget measured once here; a session probes again around its own need
    sizes: dict[str, int | None] = {"eval_rows": test.n, "examples": train.n}
    at = compiled.at(parsed, device.features)
    report = await plan_report(data, at, device, sizes)
    if report.verdict.color != "red":
        for_next_run(raw, first_step_kernels(at))
    return json.dumps(_plan_json(report, cap))


def _verdict_json(verdict: Verdict) -> dict[str, Any]:
    return {"color": verdict.color, "reasons": list(verdict.reasons)}


def _plan_json(report: Report, cap: int | None) -> dict[str, Any]:
    """The plan panel's content: `total` is what a session holds while training (the functions marked
    `held`); `breakdown` is the training step's bytes by category at its peak, every category in order;
    `green_share` is the share of the budget a green plan may take."""
    plan, budget, advice = report.plan, report.budget, report.advice or Advice((), ())
    return {
        "program": plan.program,
        "level": plan.level.value,
        "device": report.device,
        "batch": plan.batch,
        "total": plan.total,
        "budget": {"bytes": budget.bytes, "how": budget.how, "cap": cap},
        "green_share": GREEN_SHARE,
        "verdict": _verdict_json(report.verdict),
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


def _seed(text: Any) -> int:
    """The seed the page's field holds: a whole number from 0 to 2**64 - 1, as text or a number."""
    try:
        seed = int(str(text).strip())
    except ValueError:
        raise ValueError(f"the seed must be a whole number from 0 to 2**64 - 1, got {text!r}") from None
    if not 0 <= seed < 2**64:
        raise ValueError(f"the seed must be a whole number from 0 to 2**64 - 1, got {seed}")
    return seed


def _keep(value: Any) -> int | None:
    """How many of the last rule checkpoints a page's run keeps: the page's field (a whole number from 1, as
    a number or text, or "all": None, every one); KEEP when the page gives none."""
    if value is None:
        return KEEP
    text = str(value).strip()
    if text == "all":
        return None
    if isinstance(value, bool) or not (text.isascii() and text.isdigit()) or int(text) < 1:
        raise ValueError(f"keep the last checkpoints: a whole number from 1, or all; got {value!r}")
    return int(text)


async def _store(store: Store | None) -> Store:
    """The page's object store (IndexedDB) unless one is given (tests give a DirectoryStore)."""
    if store is not None:
        return store
    from scellis.runtime.browser_store import BrowserStore

    return await BrowserStore.open()


class Driven:
    """A PageRun as the page drives it: every answer as JSON text (so nothing of Python's reaches the page
    but data), or, when the memory plan is red, the refusal from `open_run`."""

    def __init__(self, run: PageRun) -> None:
        self.run = run

    async def advance(self, steps: int) -> str:
        return json.dumps(await self.run.advance(int(steps)), allow_nan=False)

    def state(self) -> str:
        return json.dumps(self.run.state(), allow_nan=False)

    async def checkpoint(self) -> str:
        return await self.run.checkpoint()

    async def manifest(self, base: str) -> str:
        return json.dumps(await self.run.manifest(base), allow_nan=False)

    async def weights(self) -> bytes:
        return await self.run.weights()

    async def export(self, what: str) -> bytes:
        return await self.run.export(str(what))

    async def verdict(self) -> str:
        return json.dumps(await self.run.verdict(), allow_nan=False)


async def open_run(
    source: str,
    files: dict[str, bytes],
    program: str,
    *,
    device_kind: str,
    level: str,
    seed: Any,
    epochs: int,
    build: str,
    cap: int | None = None,
    browser: str | None = None,
    resume: str | None = None,
    store: Store | None = None,
    keep: Any = None,
    phases: Phases | None = None,
) -> Driven | str:
    """A run of `program` (JSON) on the page's device at `level` and `seed` for `epochs`, under the memory
    cap `cap` (bytes, or None), from init or from the stored checkpoint `resume` (its key), keeping the last
    `keep` rule checkpoints and the best (a whole number from 1; "all" keeps every one; None: KEEP); `build` is
    dist/build.json's text, which the page checked its files against; the manifest pins the engine that
    runs (running_engine), not what `build` says. When the memory plan is red: JSON
    `{"refused": why, "memory": ...}`, and nothing reached the device. A program that does not fit the
    data is a DataMismatch. `phases` is told what each phase of opening the run takes (session.timed)."""
    with timed(phases, "read the data"):
        train, test, info = load_data(source, files)
    data, parsed, chosen = json.loads(program), parse_level(level), _seed(seed)
    with timed(phases, "compile the program"):
        compiled = session_program(data, train, test)  # once: the fit check and the session share it
    with timed(phases, "check the data fit"):
        _check_fit(data, compiled, info, train, test)
    if resume is not None:
        resume = check_key(resume.strip())
    kept = _keep(keep)
    with timed(phases, "open the device"):
        raw = await _device(device_kind)
        device = CappedDevice(raw, cap)
    with timed(phases, "open the store"):
        where = await _store(store)
    with timed(phases, "hash the engine"):
        engine = running_engine()
    try:
        run = await PageRun.open(
            where,
            device,
            train,
            test,
            program=data,
            device_kind=device_kind,
            level=parsed,
            seed=chosen,
            epochs=int(epochs),
            engine=engine,
            browser=browser,
            resume=resume,
            keep=kept,
            compiled=compiled,
            model=_model(data, files),
            phases=phases,
            warm=ahead(raw),
        )
    except PlanRefused as refused:
        return _refusal(refused)
    return Driven(run)


async def import_torch(
    source: str, files: dict[str, bytes], program: str, checkpoint: Any, store: Store | None = None
) -> str:
    """`checkpoint` (the bytes of a checkpoint an exported train.py wrote) stored in the page's store as a
    Scellis checkpoint of `program` (JSON) on the page's data, at the level train.py continued
    (scellis.torchexport): {key, level, seed, step, epoch, by} as JSON; TorchCheckpointError names what does
    not fit (another program or level, other tensors, a file train.py did not write)."""
    from scellis.torchexport.imported import take_back

    data = bytes(checkpoint.to_py()) if hasattr(checkpoint, "to_py") else bytes(checkpoint)
    train, test, _ = load_data(source, files)
    imported = take_back(data, session_program(json.loads(program), train, test))
    stored = await save(await _store(store), imported)
    found = {"step": imported.step, "epoch": imported.epoch, "by": imported.device}
    return json.dumps({"key": stored, "level": imported.level.value, "seed": imported.rng.seed, **found})


def _model(program: dict[str, Any], files: dict[str, bytes]) -> dict[str, bytes] | None:
    """scellis.models.finetune.model_of's answer: the model files a run of `program` binds, or None. Its
    modules (tokenizers, the model builders) take a while to import in Pyodide: only a program that pins
    weights waits for them."""
    if "weights" not in program:
        return None
    from scellis.models.finetune import model_of

    return model_of(program, files)


def running_engine() -> Engine:
    """The engine this interpreter runs, as loaded: its package's own version, the SHA-256 of every engine
    file it reads (the Python sources, the WGSL, and the CPU-path module, whose bytes are the ones the CPU
    path instantiates: both read the installed asset) and the running Pyodide's version (None under
    CPython). Nothing of it is taken from dist/build.json, which a mixed build or a doctored file can make
    say another engine."""
    return engine_of(__version__, engine_files(), pyodide_version())


def _refusal(refused: PlanRefused) -> str:
    verdict = refused.verdict
    memory = {"bytes": refused.needs, "verdict": verdict.color, "reasons": list(verdict.reasons)}
    return json.dumps({"refused": str(refused), "memory": memory})


def read_link(href: str) -> str:
    """What the share link at `href` carries, for the page to show before anything runs: the program (JSON
    text), its name, the settings, where it ran (null for a program not run yet) and, for a pinned run, the
    storage its re-run's checkpoints take at most (rerunstorage.RerunStorage). LinkError otherwise."""
    shared = read_share_link(href)
    ran_on = shared.ran_on
    s = shared.settings
    train = next((v.examples for v in s.data if v.split == "train"), None)
    storage = None if ran_on is None else rerun_storage(shared.program, s.epochs, s.steps, train).to_json()
    return json.dumps(
        {
            "storage": storage,
            "program": json.dumps(shared.program),
            "name": shared.program.get("name", "unnamed program"),
            "settings": shared.settings.to_json(),
            "ran_on": None if ran_on is None else {"device": ran_on.device, "engine_version": ran_on.engine_version},
        }
    )


async def open_replay(
    source: str,
    files: dict[str, bytes],
    href: str,
    page_kind: str,
    build: str,
    *,
    cap: int | None = None,
    browser: str | None = None,
    store: Store | None = None,
) -> tuple[Driven | str, str | None]:
    """The re-run of the run the share link at `href` pins, on these data files (their hashes checked first:
    ValueError names each split that differs), on the pinned device kind where the page has it and on the
    CPU path where it has not (the second value says so; it is None otherwise)."""
    pins = Pins.of(read_share_link(href))
    if source == "none":  # the page has nothing to give: only a program that reads no data can take that
        if pins.settings.data:
            splits = ", ".join(v.split for v in pins.settings.data)
            name = pins.program.get("name")
            named = "the program" if name is None else repr(name)
            raise ValueError(f"this run of {named} read data ({splits}): give it that data")
        train, test = Split.empty(), Split.empty()
    else:
        train, test, _ = load_data(source, files)
    kind, note = pins.settings.device, None
    if kind == "webgpu" and page_kind != "webgpu":
        kind = "cpu"
        note = (
            "the run was on WebGPU and this page has none: it re-runs on the CPU path, where the level may not "
            "promise the same bits"
        )
    raw = await _device(kind)
    device = CappedDevice(raw, cap)
    try:
        run = await PageRun.replay(
            await _store(store),
            device,
            train,
            test,
            pins=pins,
            device_kind=kind,
            engine=running_engine(),
            browser=browser,
            model=_model(pins.program, files if source != "none" else {}),
            warm=ahead(raw),
        )
    except PlanRefused as refused:
        return _refusal(refused), note
    return Driven(run), note
