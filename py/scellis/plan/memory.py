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

import bisect
import dataclasses
import heapq
from dataclasses import dataclass

from scellis.lower.kernels import Kind, Schedule, View

Lifetime = tuple[int, int]  # first and last kernel index, both included


@dataclass(frozen=True)
class MemoryPlan:
    slot_of: tuple[int, ...]  # buffer id -> slot (-1: unused, no slot)
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
        if kernel.out.buffer not in first:
            first[kernel.out.buffer] = i
        last[kernel.out.buffer] = i  # a kernel reads its inputs before it writes: i is the latest use
    out: list[Lifetime | None] = []
    for buffer in schedule.buffers:
        if buffer.id in named or buffer.id not in first:
            out.append(None)
        else:
            out.append((first[buffer.id], last[buffer.id]))
    return out


def unused(schedule: Schedule) -> set[int]:
    """Buffers no kernel and no name refers to (merged away by `update_in_place`): they get no slot."""
    used = {b for _, b in (*schedule.inputs, *schedule.outputs)}
    for kernel in schedule.kernels:
        used.add(kernel.out.buffer)
        for view in kernel.inputs:
            used.add(view.buffer)
    return {b.id for b in schedule.buffers} - used


def _peak_live(schedule: Schedule, spans: list[Lifetime | None], dead: set[int]) -> int:
    named = sum(b.nbytes for b, span in zip(schedule.buffers, spans, strict=True) if span is None and b.id not in dead)
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
    writers: dict[int, list[int]] = {}
    last_read: dict[int, int] = {}
    for i, kernel in enumerate(schedule.kernels):
        writers.setdefault(kernel.out.buffer, []).append(i)
        for view in kernel.inputs:
            last_read[view.buffer] = i
    out = {}
    for copy in schedule.carry:
        written = writers.get(copy.src, [])
        if len(written) != 1:
            continue
        kernel = schedule.kernels[written[0]]
        whole = kernel.out.is_contiguous and kernel.out.offset == 0
        if kernel.kind is not Kind.ELEMENTWISE or not whole or kernel.out.size != schedule.buffer(copy.dst).size:
            continue
        at = (kernel.out.shape, kernel.out.strides, kernel.out.offset)
        same_element = all(v.buffer != copy.dst or (v.shape, v.strides, v.offset) == at for v in kernel.inputs)
        if same_element and last_read.get(copy.dst, -1) <= written[0]:
            out[copy.src] = copy.dst
    return out


def update_in_place(schedule: Schedule) -> Schedule:
    """`schedule` with every carried output that can be written in place merged into its input: the
    output's name then names the input's buffer, and the output's own buffer is left unused (no kernel
    or name refers to it, and it gets no slot)."""
    merged = in_place(schedule)
    if not merged:
        return schedule

    def view(v: View) -> View:
        return View(merged[v.buffer], v.shape, v.strides, v.offset) if v.buffer in merged else v

    kernels, sources = list(schedule.kernels), set(merged)
    for i, kernel in enumerate(kernels):
        buffers = {kernel.out.buffer, *(v.buffer for v in kernel.inputs)}
        if not buffers.isdisjoint(sources):
            kernels[i] = dataclasses.replace(kernel, out=view(kernel.out), inputs=tuple(map(view, kernel.inputs)))
    return dataclasses.replace(
        schedule,
        kernels=tuple(kernels),
        outputs=tuple((name, merged.get(b, b)) for name, b in schedule.outputs),
        carry=tuple(c for c in schedule.carry if c.src not in merged),
    )


def plan_memory(schedule: Schedule) -> MemoryPlan:
    """Slots for every buffer of `schedule` (see the module docstring)."""
    spans = lifetimes(schedule)
    slot_of = [-1] * len(schedule.buffers)
    sizes: list[int] = []
    dead = unused(schedule)
    for buffer, span in zip(schedule.buffers, spans, strict=True):
        if span is None and buffer.id not in dead:
            slot_of[buffer.id] = len(sizes)
            sizes.append(buffer.nbytes)
    busy: list[tuple[int, int]] = []  # heap of (last kernel of the temporary it holds, slot)
    free: list[tuple[int, int]] = []  # sorted (bytes, slot) of slots no live temporary holds
    order = sorted((span[0], b.id) for b, span in zip(schedule.buffers, spans, strict=True) if span is not None)
    for start, buffer_id in order:
        while busy and busy[0][0] < start:
            slot = heapq.heappop(busy)[1]
            bisect.insort(free, (sizes[slot], slot))
        need = schedule.buffers[buffer_id].nbytes
        at = bisect.bisect_left(free, (need, -1))
        if at < len(free):  # the tightest fit
            slot = free.pop(at)[1]
        elif free:  # none fits: grow the largest
            slot = free.pop()[1]
            sizes[slot] = need
        else:
            slot = len(sizes)
            sizes.append(need)
        slot_of[buffer_id] = slot
        span = spans[buffer_id]
        assert span is not None
        heapq.heappush(busy, (span[1], slot))
    return MemoryPlan(tuple(slot_of), tuple(sizes), tuple(spans), _peak_live(schedule, spans, dead))
