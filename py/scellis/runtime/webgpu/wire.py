"""A compiled step as plain data: allocations, WGSL kernels with bindings and workgroup counts,
carry copies and the names of inputs and outputs. Built once per schedule in Python; the JS executor
(app) and its wgpu-py twin (CPython) replay it, one submission per step. Buffers are placed by the
schedule's memory plan (plan.planned), as it is: "buffers" lists its slots, and bindings, copies and
names refer to slots."""

from __future__ import annotations

from typing import Any

from scellis.codegen import render
from scellis.plan.planned import Planned


def step_plan(planned: Planned) -> dict[str, Any]:
    schedule, memory = planned.schedule, planned.memory
    kernels = [render(k, schedule) for k in schedule.kernels]
    slot, sizes = memory.slot_of, memory.slot_bytes
    return {
        "name": schedule.name,
        "buffers": list(sizes),
        "kernels": [
            {
                "source": k.source,
                "bindings": [slot[b] for b in k.bindings],
                "workgroups": list(k.workgroups),
                "label": k.label,
            }
            for k in kernels
        ],
        "carry": [[slot[c.src], slot[c.dst], schedule.buffer(c.src).nbytes] for c in schedule.carry],
        "names": {name: slot[b] for name, b in (*schedule.inputs, *schedule.outputs)},
    }
