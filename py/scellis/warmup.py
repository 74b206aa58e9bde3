"""Pipelines made ahead: the page's WebGPU device begins making the kernels a run will compile before its
first step (its training step's and init's, WGSL generated here) before the run asks for them, so that
making them (seconds on a software adapter) overlaps with what the page does meanwhile. Nothing runs and
nothing is allocated; the run's compile finds them made or under way, and reports any failure itself
(app/src/executor.js). Light on purpose: the page asks for the example's first, before anything else, so
this imports the compiler's stages and not the app (scellis.app imports this)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from scellis.examples import digits_mlp
from scellis.graph import validate
from scellis.levels import Level
from scellis.pipeline import AtLevel, compile_program
from scellis.plan.planned import Planned
from scellis.runtime.webgpu.wire import step_plan

Kernels = list[dict[str, str]]  # {source, label} each: what the page's WebGPU executor makes a pipeline of
# What a run compiles before its first step: its evaluation waits for the first evaluation (Session.start).
FIRST_STEP = ("training step", "init")
PAGE_EXAMPLE = digits_mlp  # the program the page opens with (scellis.app.example_program)


def kernels_of(planned: Planned) -> Kernels:
    """A planned function's kernels as the page's WebGPU executor makes their pipelines (wire.step_plan)."""
    return [{"source": k["source"], "label": k["label"]} for k in step_plan(planned)["kernels"]]


def first_step_kernels(at: AtLevel) -> Kernels:
    """The kernels a run at `at`'s level compiles before its first step."""
    out: Kernels = []
    for name in FIRST_STEP:
        function = at.plan.function(name)
        if function is not None:
            out += kernels_of(function.planned)
    return out


def warmer(device: Any) -> Callable[..., None] | None:
    """What begins making pipelines on `device` ahead of a compile: the page's WebGPU's
    (runtime.webgpu.browser.BrowserWebGPU.warm: kernels, and whether they are for a run not opened yet);
    None for a device that makes none (the CPU path)."""
    warm: Callable[..., None] | None = getattr(device, "warm", None)
    return warm


def for_next_run(device: Any, kernels: Kernels) -> None:
    """`device` begins making `kernels` for a run not opened yet (where it makes pipelines ahead)."""
    warm = warmer(device)
    if warm is not None:
        warm(kernels, True)


def ahead(device: Any) -> Callable[[Planned], None] | None:
    """What begins making a planned function's pipelines on `device` for the run open on it (warmer's)."""
    warm = warmer(device)
    return None if warm is None else lambda planned: warm(kernels_of(planned))


def every_levels_kernels(program: dict[str, Any], features: frozenset[str]) -> Kernels:
    """The kernels a run of `program` compiles before its first step whatever its level (each once), on a
    device with `features`; none for a program that keeps its data set on the device, whose step's kernels
    depend on the data set's size. The data is not read: its sizes shape the evaluation only."""
    if validate(program).memory.data == "resident":
        return []
    compiled = compile_program(program)
    every = [first_step_kernels(compiled.at(level, features)) for level in Level]
    others = [{k["source"] for k in kernels} for kernels in every[1:]]
    return [k for source, k in {k["source"]: k for k in every[0]}.items() if all(source in o for o in others)]


async def warm_kernels(device_kind: str, program: str | None = None) -> int:
    """Before a level is chosen: the page's WebGPU device begins making every_levels_kernels of `program`
    (JSON; None: the page's example), the kernels of one level alone being wasted work if another were
    chosen. Returns how many: none on the CPU path, which makes no pipelines."""
    if device_kind != "webgpu":
        return 0
    from scellis.runtime.webgpu.browser import BrowserWebGPU

    device = BrowserWebGPU()
    kernels = every_levels_kernels(PAGE_EXAMPLE() if program is None else json.loads(program), device.features)
    device.warm(kernels, next_run=True)
    return len(kernels)
