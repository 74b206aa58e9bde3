"""The seam between the page and the engine: every call the page's engine worker (app/src/enginehost.js)
makes of Python, by name, in one table. The worker imports this module once and asks `answer(name,
arguments)`; each answer is data (JSON text, or for the runs the page drives a `Driven` the worker keeps)."""

from __future__ import annotations

import importlib
import inspect
import json
from collections.abc import Callable
from typing import Any

from scellis.runtime.report import environment_report


async def report_json() -> str:
    """What the engine reaches, as the page's start-up shows it (runtime.report, the CPU path checked), as JSON."""
    return json.dumps(await environment_report(check=True))


# name -> "module:function" that answers it, called with the page's arguments as keywords: (arguments) ->
# answer; each function's docstring is its contract. Named, not imported: importing scellis.app (the whole
# pipeline) takes seconds in Pyodide, and start-up waits only for the report (the build's snapshot,
# scripts/python-snapshot.mjs, holds all but fine-tuning's imported; a start from scratch imports each on
# first use). `source, files` is the data the page names (the worker's `files`); `build` is
# dist/build.json's text, which the worker adds, as it adds `phases` (session.Phases: where opening a run
# spends its time, for the page's timeline).
CALLS: dict[str, str] = {
    # () -> {package_version, engine_version, devices, selected, levels, cpu_check, ...} as JSON
    "report": "scellis.calls:report_json",
    # (device_kind, program) -> how many kernels the WebGPU device begins making ahead (no program: the example)
    "warm": "scellis.warmup:warm_kernels",
    # () -> the program the page starts with, as JSON
    "example": "scellis.app:example_program",
    # () -> [{name, summary, program, source}] as JSON: the example programs the editor opens
    "examples": "scellis.app:examples_json",
    # () -> the editor's op palette, as JSON
    "palette": "scellis.app:palette_json",
    # (program) -> {"issues": [{path, node, port, message}]} as JSON
    "check": "scellis.app:check_program",
    # (program, level, features) -> the Guide: every stage's artifact, links, buffer lifetimes, as JSON
    "guide": "scellis.app:guide_json",
    # (program, change), both JSON -> the program with the remedy's change applied, as JSON
    "apply": "scellis.app:apply_remedy",
    # (source, files, program, device_kind, level, cap) -> the memory plan, or {"unfit": ...}, as JSON
    "plan": "scellis.app:plan_example",
    # (source, files) -> the data as the Data card shows it: description, versions, vocab, as JSON
    "dataInfo": "scellis.app:data_json",
    # (source, files) -> a starter program for the data, as JSON
    "starter": "scellis.app:starter_json",
    # (source, files) -> the model, its texts and the three fine-tuning programs, as JSON (source "text")
    "finetune": "scellis.models.finetune:finetune_json",
    # (href) -> what the share link carries: program, name, settings, ran_on, storage, as JSON
    "readLink": "scellis.app:read_link",
    # (source, files, program, device_kind, level, seed, epochs, build, cap, browser, resume, keep, phases)
    #   -> a Driven the page drives, or {"refused", "memory"} as JSON
    "openRun": "scellis.app:open_run",
    # (source, files, href, page_kind, build, cap, browser) -> (a Driven or the refusal, a note or None)
    "openReplay": "scellis.app:open_replay",
    # (source, files, program, checkpoint) -> a train.py checkpoint stored to resume: {key, level, seed, ...}
    "importTorch": "scellis.app:import_torch",
}


def function_of(name: str) -> Callable[..., Any]:
    """The function answering the call `name`, imported on its first use; KeyError for a name not in CALLS."""
    module, function = CALLS[name].split(":")
    found: Callable[..., Any] = getattr(importlib.import_module(module), function)
    return found


async def answer(name: str, arguments: dict[str, Any]) -> Any:
    """The answer of the call `name` to `arguments`, its keywords as the worker converted them from JS once:
    None for what the page left out, the data's files as buffers (memoryview), given to the function as bytes."""
    keywords = dict(arguments)
    if "files" in keywords:
        keywords["files"] = {str(file): bytes(data) for file, data in keywords["files"].items()}
    answered = function_of(name)(**keywords)
    return await answered if inspect.isawaitable(answered) else answered
