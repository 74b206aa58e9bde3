"""The Guide: every stage's artifact for the user's own program, as the app shows it, and the links
between them (the program's nodes, the IR ops, the kernels and their code).

Expects a program compiled and decided for a level and device features (pipeline.Compiled.at), with its
plan; it only presents what the pipeline made (the training step's kernels are the plan's, lowered once)."""

from __future__ import annotations

import json
from typing import Any

from scellis.codegen import render
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


def step_schedule(at: AtLevel) -> Schedule:
    """The training step's kernels as lowered (before the in-place update the device runs)."""
    return at.plan.functions[0].planned.logical


def stages(at: AtLevel) -> list[tuple[str, str]]:
    """(title, printable artifact) for each stage, in pipeline order, as `at.level` runs them on a device
    with `at.features` (the schedule's text names the level and its notes)."""
    compiled, program = at.compiled, at.compiled.program
    texts = [json.dumps(program.source, indent=1)]
    if program.trains:
        texts += [to_text(fn) for fn in (compiled.forward.fn, at.backward, at.step)]
    else:
        texts += [to_text(at.step), UNTRAINED_BACKWARD, UNTRAINED_OPTIMIZER]
    texts.append(loop_text(program.loop, program.trains, program.has_data))
    texts += [to_text(fn) for fn in (at.evaluate, at.init)]
    schedule = step_schedule(at)
    texts.append(f"level {at.level.value}\n{schedule_text(schedule)}")
    texts.append(wgsl_text(schedule))
    return list(zip(STAGE_TITLES, texts, strict=True))


def guide_of(at: AtLevel) -> dict[str, Any]:
    """What the app's Guide shows: the program's name, its key, every stage's artifact, the links (see
    `guide_links`) and the training step's buffer lifetimes (plan.program.timeline)."""
    stage_list = [list(s) for s in stages(at)]
    return {
        "name": at.compiled.program.name,
        "key": at.key,
        "level": at.level.value,
        "stages": stage_list,
        "links": guide_links(at),
        "timeline": timeline(at.plan),
    }


def guide_links(at: AtLevel) -> dict[str, Any]:
    """The Guide's links between the program's nodes, the IR ops and the kernels of the training step
    (scellis.provenance); `stage` gives each IR text's place in the stages, `kernel_stages` those of the
    kernel schedule and the WGSL, where each kernel's text is found by its number."""
    compiled = at.compiled
    result: dict[str, Any] = {"name": compiled.program.name, "key": at.key, "level": at.level.value}
    fns = (compiled.forward.fn, at.backward, at.step)
    result.update(links(compiled.program, *fns, owners=compiled.owners, schedule=step_schedule(at)))
    for text, title in LINKED_TEXTS.items():
        result["texts"][text]["stage"] = STAGE_TITLES.index(title)
    result["kernel_stages"] = [STAGE_TITLES.index(title) for title in KERNEL_STAGES]
    return result


def wgsl_text(schedule: Schedule) -> str:
    """Each kernel's WGSL with its bindings and workgroup counts."""
    parts = []
    for i, kernel in enumerate(schedule.kernels):
        wk = render(kernel, schedule)
        parts.append(f"// k{i}: {wk.label}, bindings {list(wk.bindings)}, dispatch {wk.workgroups}\n{wk.source}")
    return "\n\n".join(parts)
