"""Stage: memory. Liveness over a kernel schedule and the assignment of its buffers to allocations.

Expects a Schedule (lower). Guarantees: every buffer gets a slot (one device allocation); buffers whose
lifetimes overlap never share a slot; a slot is as large as the largest buffer it holds.

Lifetimes count kernels: a temporary lives from the first kernel that writes it to the last kernel that
reads it, both included (so a kernel's output never shares a slot with one of its inputs). Named buffers
(the step's inputs and outputs) live for the whole step and keep a slot of their own: the host writes and
reads them between steps, and the carry copies read outputs after the last kernel.

Assignment is greedy in order of first write: a temporary takes the free slot that fits it most tightly,
else the largest free slot (grown to fit), else a new slot. Devices allocate exactly the slots.

`update_in_place` (schedule -> schedule, run by the devices before they plan) writes a carried output
(`param/w`, copied into `w` after the step) straight into its input when one elementwise kernel writes
all of it, reading the input only at the element it writes, and no later kernel reads the input: the
optimizer then updates parameters and state where they are, with no second copy and no carry copy.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from scellis.lower.kernels import Copy, Kind, Schedule, View

Lifetime = tuple[int, int]  # first and last kernel index, both included


@dataclass(frozen=True)
class MemoryPlan:
    slot_of: tuple[int, ...]  # buffer id -> slot
    slot_bytes: tuple[int, ...]  # bytes of each slot
    lifetimes: tuple[Lifetime | None, ...]  # buffer id -> lifetime (None: named, the whole step)
    peak_live: int  # the most bytes live at once (the lower bound any assignment can reach)

    @property
    def allocated(self) -> int:
        """Bytes a device allocates for the schedule's buffers."""
        return sum(self.slot_bytes)

    def naive(self, schedule: Schedule) -> int:
        """Bytes with one allocation per buffer (no reuse), for comparison."""
        return sum(b.nbytes for b in schedule.buffers)


def lifetimes(schedule: Schedule) -> list[Lifetime | None]:
    """Each buffer's lifetime in kernel indices; None for named buffers (live for the whole step).
    A temporary no kernel reads lives only at its writer."""
    named = {b for _, b in (*schedule.inputs, *schedule.outputs)}
    first: dict[int, int] = {}
    last: dict[int, int] = {}
    for i, kernel in enumerate(schedule.kernels):
        for view in kernel.inputs:
            last[view.buffer] = i
        first.setdefault(kernel.out.buffer, i)
        last[kernel.out.buffer] = max(last.get(kernel.out.buffer, i), i)
    out: list[Lifetime | None] = []
    for buffer in schedule.buffers:
        if buffer.id in named or buffer.id not in first:
            out.append(None)
        else:
            out.append((first[buffer.id], last[buffer.id]))
    return out


def _peak_live(schedule: Schedule, spans: list[Lifetime | None]) -> int:
    named = sum(b.nbytes for b, span in zip(schedule.buffers, spans, strict=True) if span is None)
    delta = [0] * (len(schedule.kernels) + 1)
    for buffer, span in zip(schedule.buffers, spans, strict=True):
        if span is not None:
            delta[span[0]] += buffer.nbytes
            delta[span[1] + 1] -= buffer.nbytes
    live, peak = 0, 0
    for change in delta:
        live += change
        peak = max(peak, live)
    return named + peak


def in_place(schedule: Schedule) -> dict[int, int]:
    """Carried outputs that can share their input's slot (see the module docstring): output -> input."""
    out = {}
    for copy in schedule.carry:
        writers = [i for i, k in enumerate(schedule.kernels) if k.out.buffer == copy.src]
        if len(writers) != 1:
            continue
        kernel = schedule.kernels[writers[0]]
        whole = kernel.out.is_contiguous and kernel.out.offset == 0
        if kernel.kind is not Kind.ELEMENTWISE or not whole or kernel.out.size != schedule.buffer(copy.dst).size:
            continue
        at = (kernel.out.shape, kernel.out.strides, kernel.out.offset)
        same_element = all(v.buffer != copy.dst or (v.shape, v.strides, v.offset) == at for v in kernel.inputs)
        later = any(v.buffer == copy.dst for k in schedule.kernels[writers[0] + 1 :] for v in k.inputs)
        if same_element and not later:
            out[copy.src] = copy.dst
    return out


def update_in_place(schedule: Schedule) -> Schedule:
    """`schedule` with every carried output that can be written in place merged into its input (the
    output's name then names the input's buffer) and buffer ids renumbered densely."""
    merged = in_place(schedule)
    if not merged:
        return schedule
    kept = [b for b in schedule.buffers if b.id not in merged]
    new_id = {b.id: i for i, b in enumerate(kept)}
    new_id.update({output: new_id[into] for output, into in merged.items()})

    def view(v: View) -> View:
        return dataclasses.replace(v, buffer=new_id[v.buffer])

    return dataclasses.replace(
        schedule,
        buffers=tuple(dataclasses.replace(b, id=new_id[b.id]) for b in kept),
        kernels=tuple(
            dataclasses.replace(k, out=view(k.out), inputs=tuple(view(v) for v in k.inputs)) for k in schedule.kernels
        ),
        inputs=tuple((name, new_id[b]) for name, b in schedule.inputs),
        outputs=tuple((name, new_id[b]) for name, b in schedule.outputs),
        carry=tuple(Copy(new_id[c.src], new_id[c.dst]) for c in schedule.carry if c.src not in merged),
    )


def plan_memory(schedule: Schedule) -> MemoryPlan:
    """Slots for every buffer of `schedule` (see the module docstring)."""
    spans = lifetimes(schedule)
    slot_of = [-1] * len(schedule.buffers)
    sizes: list[int] = []
    for buffer, span in zip(schedule.buffers, spans, strict=True):
        if span is None:
            slot_of[buffer.id] = len(sizes)
            sizes.append(buffer.nbytes)
    busy_until: dict[int, int] = {}  # slot -> last kernel of the temporary it holds
    order = sorted((span[0], b.id) for b, span in zip(schedule.buffers, spans, strict=True) if span is not None)
    for start, buffer_id in order:
        need = schedule.buffers[buffer_id].nbytes
        free = [s for s, end in busy_until.items() if end < start]
        fitting = [s for s in free if sizes[s] >= need]
        if fitting:
            slot = min(fitting, key=lambda s: (sizes[s], s))
        elif free:
            slot = max(free, key=lambda s: (sizes[s], -s))
            sizes[slot] = need
        else:
            slot = len(sizes)
            sizes.append(need)
        slot_of[buffer_id] = slot
        span = spans[buffer_id]
        assert span is not None
        busy_until[slot] = span[1]
    return MemoryPlan(tuple(slot_of), tuple(sizes), tuple(spans), _peak_live(schedule, spans))
