"""A compiled step as plain data: buffers, WGSL kernels with bindings and workgroup counts,
carry copies and the names of inputs and outputs. Built once per schedule in Python; the JS executor
(app) and its wgpu-py twin (CPython) replay it, one submission per step."""

from __future__ import annotations

from typing import Any

from scellis.codegen import render
from scellis.lower.kernels import Schedule


def step_plan(schedule: Schedule) -> dict[str, Any]:
    kernels = [render(k, schedule) for k in schedule.kernels]
    return {
        "name": schedule.name,
        "buffers": [b.nbytes for b in schedule.buffers],
        "kernels": [
            {"source": k.source, "bindings": list(k.bindings), "workgroups": list(k.workgroups), "label": k.label}
            for k in kernels
        ],
        "carry": [[c.src, c.dst, schedule.buffer(c.src).nbytes] for c in schedule.carry],
        "names": dict((*schedule.inputs, *schedule.outputs)),
    }
