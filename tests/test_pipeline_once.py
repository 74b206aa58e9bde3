"""A program's walk from `Session(...)` to the device, and the Guide's, visit the pipeline once and lower,
update in place and plan each function once: counted by a profiler hook on those functions' code."""

from __future__ import annotations

import asyncio
import inspect
import json
import sys
import tempfile
from collections import Counter
from collections.abc import Callable
from types import FrameType
from typing import Any

import pytest

from scellis import pipeline
from scellis.app import guide_json
from scellis.datasets import digits_csv, read_digits
from scellis.examples import digits_mlp
from scellis.levels import Level
from scellis.lower import lower
from scellis.plan import memory
from scellis.runtime.cpu.device import CpuDevice
from scellis.session import Session

WATCHED = {  # the stages' own code, inside scellis.gcpause's wrapper
    inspect.unwrap(pipeline.compile_program).__code__: "compile",
    inspect.unwrap(lower).__code__: "lower",
    memory.update_in_place.__code__: "update in place",
    memory.plan_memory.__code__: "plan memory",
}


def calls(work: Callable[[], Any]) -> dict[str, int]:
    """How often `work` calls each watched function."""
    counts: Counter[str] = Counter()

    def hook(frame: FrameType, event: str, _: Any) -> None:
        if event == "call" and frame.f_code in WATCHED:
            counts[WATCHED[frame.f_code]] += 1

    sys.setprofile(hook)
    try:
        work()
    finally:
        sys.setprofile(None)
    return dict(counts)


@pytest.mark.parametrize("level", list(Level))
def test_a_session_compiles_once_and_plans_each_function_once(level: Level) -> None:
    train, test = read_digits(digits_csv().read_bytes())
    device = asyncio.run(CpuDevice.open())

    def walk() -> None:
        session = Session(digits_mlp(), device, seed=1, level=level, eval_rows=test.n)

        async def start_and_step() -> None:
            await session.start(train)
            await session.run(train, test, steps=1)

        asyncio.run(start_and_step())

    # four functions: the step, evaluation, the held-out split's last batch's evaluation, init
    assert calls(walk) == {"compile": 1, "lower": 4, "update in place": 4, "plan memory": 4}


@pytest.mark.parametrize(("level", "features"), [("prod", []), ("fast", ["shader-f16"])])
def test_the_guide_compiles_once_and_plans_each_function_once(level: str, features: list[str]) -> None:
    program = json.dumps(digits_mlp())
    # three functions: the step, evaluation, init (fast's loss-scaling decision reuses the step's lowering)
    expected = {"compile": 1, "lower": 3, "update in place": 3, "plan memory": 3}
    assert calls(lambda: guide_json(program, level, features)) == expected


def test_the_counter_sees_a_repeated_stage() -> None:
    compiled = pipeline.compile_program(digits_mlp())
    assert calls(lambda: [lower(compiled.step, Level.PROD) for _ in range(2)]) == {"lower": 2}


def test_the_pages_run_compiles_once_for_its_fit_check_and_its_session() -> None:
    from scellis.app import open_run
    from scellis.datasets import to_files
    from scellis.store.directory import DirectoryStore

    train, test = read_digits(digits_csv().read_bytes())
    program = json.dumps(digits_mlp())

    def walk() -> None:
        async def go() -> None:
            run = await open_run(
                "site",
                to_files(train, test),
                program,
                device_kind="cpu",
                level="debug",
                seed=1,
                epochs=1,
                build="{}",
                store=store,
            )
            assert not isinstance(run, str), run
            await run.advance(1)

        asyncio.run(go())

    with tempfile.TemporaryDirectory() as tmp:
        store = DirectoryStore(tmp)
        assert calls(walk) == {"compile": 1, "lower": 4, "update in place": 4, "plan memory": 4}
