"""The Guide: every stage's artifact for the user's own program, as the app shows it, and the links
between them (the program's nodes, the IR ops, the kernels and their code).

Expects a program compiled and decided for a level and device features (pipeline.Compiled.at), with its
plan; it only presents what the pipeline made (the training step's kernels are the plan's, lowered once).
Each kernel's WGSL is rendered once, into the WGSL stage; the links point each kernel at its lines there
rather than holding a copy."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from scellis.codegen import WgslKernel, render
from scellis.ir import to_text
from scellis.loop import loop_text
from scellis.lower import Schedule
from scellis.lower.text import schedule_text
from scellis.pipeline import AtLevel
from scellis.plan.program import timeline
from scellis.provenance import links

STAGE_TITLES = (
    "program JSON",
    "typed IR",
    "backward IR",
    "optimizer IR (training step)",
    "loop program",
    "evaluation IR",
    "init IR",
    "kernel schedule (training step)",
    "WGSL (training step)",
)

UNTRAINED_BACKWARD = (
    "# none: the program has no loss, so nothing is differentiated.\n"
    "# Its step is the typed IR: the graph run once, each update node's value carried to the next step."
)
UNTRAINED_OPTIMIZER = "# none: the program has no loss, so it has no optimizer. Its step is the typed IR."

LINKED_TEXTS = {  # the IR texts guide_links numbers ops in -> their stages
    "forward": "typed IR",
    "backward": "backward IR",
    "optimizer": "optimizer IR (training step)",
    "step": "optimizer IR (training step)",
}
KERNEL_STAGES = ("kernel schedule (training step)", "WGSL (training step)")  # kernel i is k{i} in each
Lines = list[list[int]]  # each kernel's [first, end): the lines of its shader in the WGSL stage, 0-based


def step_schedule(at: AtLevel) -> Schedule:
    """The training step's kernels as the device runs them (updated in place: plan.memory.update_in_place)."""
    return at.plan.functions[0].planned.schedule


def step_code(schedule: Schedule) -> list[WgslKernel]:
    """Each kernel of `schedule` rendered, once for the whole Guide."""
    return [render(kernel, schedule) for kernel in schedule.kernels]


def stages(at: AtLevel) -> list[tuple[str, str]]:
    """(title, printable artifact) for each stage, in pipeline order, as `at.level` runs them on a device
    with `at.features` (the schedule's text names the level and its notes)."""
    schedule = step_schedule(at)
    return _stages(at, schedule, wgsl_text(step_code(schedule))[0])


def _stages(at: AtLevel, schedule: Schedule, wgsl: str) -> list[tuple[str, str]]:
    compiled, program = at.compiled, at.compiled.program
    texts = [json.dumps(program.source, indent=1)]
    if program.trains:
        texts += [to_text(fn) for fn in (compiled.forward.fn, at.backward, at.step)]
    else:
        texts += [to_text(at.step), UNTRAINED_BACKWARD, UNTRAINED_OPTIMIZER]
    texts.append(loop_text(program.loop, program.trains, program.has_data))
    texts += [to_text(fn) for fn in (at.evaluate, at.init)]
    texts.append(f"level {at.level.value}\n{schedule_text(schedule)}")
    texts.append(wgsl)
    return list(zip(STAGE_TITLES, texts, strict=True))


def guide_of(at: AtLevel) -> dict[str, Any]:
    """What the app's Guide shows: the program's name, its key, every stage's artifact, the links (see
    `guide_links`) and the training step's buffer lifetimes (plan.program.timeline). The step's kernels
    are rendered once, for both the WGSL stage and the links."""
    schedule = step_schedule(at)
    code = step_code(schedule)
    wgsl, lines = wgsl_text(code)
    return {
        "name": at.compiled.program.name,
        "key": at.key,
        "level": at.level.value,
        "stages": [list(s) for s in _stages(at, schedule, wgsl)],
        "links": _links(at, schedule, code, lines),
        "timeline": timeline(at.plan),
    }


def guide_links(at: AtLevel) -> dict[str, Any]:
    """The Guide's links between the program's nodes, the IR ops and the kernels of the training step
    (scellis.provenance); `stage` gives each IR text's place in the stages, `kernel_stages` those of the
    kernel schedule and the WGSL, where each kernel's text is found by its number. A kernel's WGSL is not
    repeated: its `wgsl_lines` [first, end) are the lines (0-based) of its shader in the WGSL stage."""
    schedule = step_schedule(at)
    code = step_code(schedule)
    return _links(at, schedule, code, wgsl_text(code)[1])


def _links(at: AtLevel, schedule: Schedule, code: Sequence[WgslKernel], lines: Lines) -> dict[str, Any]:
    compiled = at.compiled
    result: dict[str, Any] = {"name": compiled.program.name, "key": at.key, "level": at.level.value}
    fns = (compiled.forward.fn, at.backward, at.step)
    result.update(links(compiled.program, *fns, owners=compiled.owners, schedule=schedule, code=code))
    for text, title in LINKED_TEXTS.items():
        result["texts"][text]["stage"] = STAGE_TITLES.index(title)
    result["kernel_stages"] = [STAGE_TITLES.index(title) for title in KERNEL_STAGES]
    for entry, span in zip(result["kernels"], lines, strict=True):
        entry["wgsl_lines"] = span
    return result


def wgsl_text(code: Sequence[WgslKernel]) -> tuple[str, Lines]:
    """Each kernel's WGSL (`code`, rendered) after a line with its number, bindings and workgroup counts,
    an empty line between kernels; with the lines of each kernel's shader in that text (`Lines`)."""
    parts, lines, line = [], [], 0
    for i, wk in enumerate(code):
        parts.append(f"// k{i}: {wk.label}, bindings {list(wk.bindings)}, dispatch {wk.workgroups}\n{wk.source}")
        first = line + 1  # after the kernel's header line
        end = first + wk.source.count("\n") + 1
        lines.append([first, end])
        line = end + 1  # the empty line before the next header
    return "\n\n".join(parts), lines
