"""A compiled step as plain data: allocations, WGSL kernels with bindings and workgroup counts,
carry copies and the names of inputs and outputs. Built once per schedule in Python; the JS executor
(app) and its wgpu-py twin (CPython) replay it, one submission per step. Buffers are placed by the
memory plan (plan.memory): "buffers" lists its slots, and bindings, copies and names refer to slots."""

from __future__ import annotations

from typing import Any

from scellis.codegen import render
from scellis.lower.kernels import Schedule
from scellis.plan import plan_memory, update_in_place


def step_plan(schedule: Schedule) -> dict[str, Any]:
    schedule = update_in_place(schedule)
    kernels = [render(k, schedule) for k in schedule.kernels]
    memory = plan_memory(schedule)
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
