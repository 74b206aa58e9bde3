"""How a page's run starts (scellis.app, scellis.pagerun, on wasmtime's CPU path): it compiles its training
step and init before its first step and its evaluation at the first evaluation, and ends on the bits of a
session that compiled everything first; it tells where its time goes (the phases the page's timeline
shows); on a device that makes pipelines ahead (the page's WebGPU, stood in for here), the page's example
and the planned program hand over their first-step kernels, and the run its evaluation's once the first
steps are back."""

from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from scellis import app
from scellis.app import Driven, example_program, open_run, plan_example
from scellis.datasets import digits_csv, read_digits, to_files
from scellis.examples import digits_mlp
from scellis.levels import Level
from scellis.manifest.replay import session_program
from scellis.pipeline import compile_program
from scellis.plan.planned import Planned
from scellis.runtime.cpu.device import CpuDevice
from scellis.runtime.device import CompiledStep
from scellis.session import Session
from scellis.store import DirectoryStore
from scellis.warmup import PAGE_EXAMPLE, every_levels_kernels, first_step_kernels, kernels_of, warm_kernels

FILES = to_files(*read_digits(digits_csv().read_bytes()))
PER_EPOCH = 1438 // 64


class Warming:
    """The CPU path, keeping what a WebGPU device would be asked to make ahead (BrowserWebGPU.warm)."""

    def __init__(self, device: CpuDevice) -> None:
        self.device = device
        self.name, self.features, self.limits = device.name, device.features, device.limits
        self.warmed: list[list[dict[str, str]]] = []
        self.next_run: list[bool] = []

    async def budget(self, need: int) -> Any:
        return await self.device.budget(need)

    async def compile(self, planned: Planned, host: Any = None) -> CompiledStep:
        return await self.device.compile(planned, host)

    def warm(self, kernels: list[dict[str, str]], next_run: bool = False) -> None:
        self.warmed.append(kernels)
        self.next_run.append(next_run)


@pytest.fixture
def warming(monkeypatch: pytest.MonkeyPatch) -> Warming:
    device = Warming(asyncio.run(CpuDevice.open()))

    async def opened(kind: str) -> Warming | CpuDevice:
        return device if kind == "webgpu" else device.device

    monkeypatch.setattr(app, "_device", opened)
    return device


def sources(kernels: list[dict[str, str]]) -> set[str]:
    return {k["source"] for k in kernels}


async def opened_run(tmp_path: Path, kind: str, phases: list[str] | None = None) -> Driven:
    run = await open_run(
        "site",
        FILES,
        json.dumps(digits_mlp()),
        device_kind=kind,
        level="prod",
        seed="7",
        epochs=2,
        build="{}",
        store=DirectoryStore(tmp_path),
        phases=None if phases is None else lambda name, start, end: phases.append(name),
    )
    assert isinstance(run, Driven), run
    return run


def test_the_evaluation_is_compiled_at_the_first_evaluation_and_changes_no_bits(tmp_path: Path) -> None:
    async def drive() -> tuple[list[str], list[str], bool, str, dict]:
        phases: list[str] = []
        run = await opened_run(tmp_path, "cpu", phases)
        opening = list(phases)
        session = run.run.session
        await run.advance(PER_EPOCH - 1)
        before_evaluation = session.eval is None
        state = json.loads(await run.advance(2 * PER_EPOCH))
        values = await session.step.fetch(session.kept)
        return opening, phases, before_evaluation, hashlib.sha256(b"".join(values.values())).hexdigest(), state

    async def eager() -> tuple[str, dict]:
        train, test = read_digits(digits_csv().read_bytes())
        session = Session(
            digits_mlp(), await CpuDevice.open(), seed=7, level=Level.PROD, eval_rows=test.n, examples=train.n
        )
        results = await session.fit(train, test, epochs=2)
        values = await session.step.fetch(session.kept)
        return hashlib.sha256(b"".join(values.values())).hexdigest(), results[-1].metrics

    opening, phases, before_evaluation, deferred, state = asyncio.run(drive())
    assert "compile: training step" in opening and "compile: init" in opening
    assert "compile: evaluation" not in opening and before_evaluation
    assert phases.count("compile: evaluation") == 1  # at the first epoch's end, once
    assert opening[0] == "read the data" and opening[-1] == "run init"
    key, metrics = asyncio.run(eager())
    assert deferred == key
    assert state["epochs_done"][-1]["test"] == metrics


def test_the_examples_first_step_kernels_are_made_ahead_whatever_the_level() -> None:
    assert json.loads(example_program()) == PAGE_EXAMPLE()
    kernels = every_levels_kernels(PAGE_EXAMPLE(), frozenset())
    compiled = compile_program(digits_mlp())
    every = [sources(first_step_kernels(compiled.at(level, frozenset()))) for level in Level]
    assert sources(kernels) == set.intersection(*every) and len(sources(kernels)) == len(kernels)  # each once
    evaluation = compiled.at(Level.PROD, frozenset()).plan.function("evaluation")
    assert evaluation is not None and sources(kernels_of(evaluation.planned)) - sources(kernels)  # not its own


def test_nothing_is_made_ahead_on_the_cpu_path_or_for_a_data_set_on_the_device() -> None:
    assert asyncio.run(warm_kernels("cpu")) == 0
    assert every_levels_kernels({**digits_mlp(), "memory": {"data": "resident"}}, frozenset()) == []


def test_a_plan_hands_over_its_levels_first_step_kernels(warming: Warming) -> None:
    plan = json.loads(asyncio.run(plan_example("site", FILES, json.dumps(digits_mlp()), "webgpu", "debug", cap=None)))
    assert plan["verdict"]["color"] != "red"
    train, test = read_digits(digits_csv().read_bytes())
    at = session_program(digits_mlp(), train, test).at(Level.DEBUG, warming.features)
    assert warming.warmed == [first_step_kernels(at)] and warming.next_run == [True]  # for the run to come


def test_a_run_hands_over_its_evaluation_once_the_first_steps_are_back(warming: Warming, tmp_path: Path) -> None:
    async def drive() -> list[int]:
        run = await opened_run(tmp_path, "webgpu")
        handed = [len(warming.warmed)]
        await run.advance(1)  # the first steps' answer waits for nothing more
        handed.append(len(warming.warmed))
        await run.advance(1)
        handed.append(len(warming.warmed))
        await run.advance(PER_EPOCH)  # the first evaluation compiles it
        handed.append(len(warming.warmed))
        assert run.run.session.eval is not None
        return handed

    assert asyncio.run(drive()) == [0, 0, 2, 2]
    plan = compile_program(digits_mlp(), eval_rows=359, examples=1438).at(Level.PROD, warming.features).plan
    functions = [plan.function(name) for name in ("evaluation", "evaluation, last batch")]
    assert warming.warmed == [kernels_of(f.planned) for f in functions if f is not None]
    assert warming.next_run == [False, False]  # for the run open on the device
