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

from scellis.lower.kernels import Kernel, Kind, Schedule, View

Lifetime = tuple[int, int]  # first and last kernel index, both included


@dataclass(frozen=True)
class MemoryPlan:
    slot_of: tuple[int, ...]  # buffer id -> slot (-1: unused, no slot)
    slot_bytes: tuple[int, ...]  # bytes of each slot
    lifetimes: tuple[Lifetime | None, ...]  # buffer id -> lifetime (None: named, the whole step)
    peak_live: int  # the most bytes live at once (the lower bound any assignment can reach)
    peak_kernel: int  # the first kernel where that happens (-1: no temporary is ever live)

    @property
    def allocated(self) -> int:
        """Bytes a device allocates for the schedule's buffers."""
        return sum(self.slot_bytes)

    def naive(self, schedule: Schedule) -> int:
        """Bytes with one allocation per buffer (no reuse), for comparison."""
        return sum(b.nbytes for b in schedule.buffers)


@dataclass(frozen=True)
class _Uses:
    """One pass over a schedule's kernels, per buffer id: the first kernel that writes it, the last that
    reads it, the last that touches it, and how many kernels write it (-1 or 0: none)."""

    first_write: list[int]
    last_read: list[int]
    last_use: list[int]
    writes: list[int]


def _uses(schedule: Schedule) -> _Uses:
    n = len(schedule.buffers)
    first_write, last_read, last_use, writes = [-1] * n, [-1] * n, [-1] * n, [0] * n
    for i, kernel in enumerate(schedule.kernels):  # in order: the latest assignment is the last use
        for view in kernel.inputs:
            last_read[view.buffer] = last_use[view.buffer] = i
        out = kernel.out.buffer
        if first_write[out] < 0:
            first_write[out] = i
        writes[out] += 1
        last_use[out] = i
    return _Uses(first_write, last_read, last_use, writes)


def lifetimes(schedule: Schedule, uses: _Uses | None = None) -> list[Lifetime | None]:
    """Each buffer's lifetime in kernel indices; None for named buffers (live for the whole step).
    A temporary no kernel reads lives only at its writer."""
    uses = uses or _uses(schedule)
    named = {b for _, b in (*schedule.inputs, *schedule.outputs)}
    first, last = uses.first_write, uses.last_use
    return [None if b in named or first[b] < 0 else (first[b], last[b]) for b in range(len(schedule.buffers))]


def unused(schedule: Schedule, uses: _Uses | None = None) -> set[int]:
    """Buffers no kernel and no name refers to (merged away by `update_in_place`): they get no slot."""
    uses = uses or _uses(schedule)
    named = {b for _, b in (*schedule.inputs, *schedule.outputs)}
    return {
        b for b in range(len(schedule.buffers)) if b not in named and uses.first_write[b] < 0 and uses.last_read[b] < 0
    }


def _peak(schedule: Schedule, spans: list[Lifetime | None], dead: set[int], nbytes: list[int]) -> tuple[int, int]:
    """The most bytes live at once (named buffers included) and the first kernel where the temporaries
    live then are the most (-1 when no temporary is ever live)."""
    named = sum(
        size for b, (size, span) in enumerate(zip(nbytes, spans, strict=True)) if span is None and b not in dead
    )
    delta = [0] * (len(schedule.kernels) + 1)
    for size, span in zip(nbytes, spans, strict=True):
        if span is not None:
            delta[span[0]] += size
            delta[span[1] + 1] -= size
    live, peak, at = 0, 0, -1
    for i, change in enumerate(delta):
        live += change
        if live > peak:
            peak, at = live, i
    return named + peak, at


def in_place(schedule: Schedule, uses: _Uses | None = None) -> dict[int, int]:
    """Carried outputs that can share their input's slot (see the module docstring): output -> input."""
    uses = uses or _uses(schedule)
    out = {}
    for copy in schedule.carry:
        if uses.writes[copy.src] != 1:
            continue
        written = uses.first_write[copy.src]
        kernel = schedule.kernels[written]
        whole = kernel.out.is_contiguous and kernel.out.offset == 0
        if kernel.kind is not Kind.ELEMENTWISE or not whole or kernel.out.size != schedule.buffer(copy.dst).size:
            continue
        at = (kernel.out.shape, kernel.out.strides, kernel.out.offset)
        same_element = all(v.buffer != copy.dst or (v.shape, v.strides, v.offset) == at for v in kernel.inputs)
        if same_element and uses.last_read[copy.dst] <= written:
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

    kernels = list(schedule.kernels)
    for i, kernel in enumerate(kernels):
        if kernel.out.buffer in merged or any(v.buffer in merged for v in kernel.inputs):
            inputs = tuple(map(view, kernel.inputs))
            kernels[i] = Kernel(
                kernel.kind, view(kernel.out), inputs, kernel.arg, kernel.expr, kernel.variant, kernel.covers
            )
    return dataclasses.replace(
        schedule,
        kernels=tuple(kernels),
        outputs=tuple((name, merged.get(b, b)) for name, b in schedule.outputs),
        carry=tuple(c for c in schedule.carry if c.src not in merged),
    )


def plan_memory(schedule: Schedule) -> MemoryPlan:
    """Slots for every buffer of `schedule` (see the module docstring)."""
    uses = _uses(schedule)
    spans = lifetimes(schedule, uses)
    slot_of = [-1] * len(schedule.buffers)
    sizes: list[int] = []
    dead = unused(schedule, uses)
    nbytes = [b.nbytes for b in schedule.buffers]
    for b, span in enumerate(spans):
        if span is None and b not in dead:
            slot_of[b] = len(sizes)
            sizes.append(nbytes[b])
    busy: list[tuple[int, int]] = []  # heap of (last kernel of the temporary it holds, slot)
    free: list[tuple[int, int]] = []  # sorted (bytes, slot) of slots no live temporary holds
    order = sorted((span[0], b) for b, span in enumerate(spans) if span is not None)
    for start, buffer_id in order:
        while busy and busy[0][0] < start:
            slot = heapq.heappop(busy)[1]
            bisect.insort(free, (sizes[slot], slot))
        need = nbytes[buffer_id]
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
    return MemoryPlan(tuple(slot_of), tuple(sizes), tuple(spans), *_peak(schedule, spans, dead, nbytes))
