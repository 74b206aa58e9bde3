"""Stage: memory. Liveness over a kernel schedule and the assignment of its buffers to allocations.

Expects a Schedule (lower). Guarantees: every buffer gets a slot (one device allocation); buffers whose
lifetimes overlap never share a slot; a slot is as large as the largest buffer it holds.

Lifetimes count kernels: a temporary lives from the first kernel that writes it to the last kernel that
reads it, both included (so a kernel's output never shares a slot with one of its inputs). Named buffers
(the step's inputs and outputs) live for the whole step and keep a slot of their own: the host writes and
reads them between steps, and the carry copies read outputs after the last kernel.

Assignment is greedy from the largest temporary down (ties: the earlier first write, then the buffer id):
each takes the first slot that holds nothing over its lifetime, else a new slot of its size; so no slot
grows, and slots come close to the most bytes live at once. Devices allocate exactly the slots.

`update_in_place` (schedule -> schedule, run by the devices before they plan) writes a carried output
(`param/w`, copied into `w` after the step) straight into its input when one kernel writes all of it
element by element (an elementwise kernel, or the epilogue of a matmul or reduction: the gradient's own
kernel; or such a part of a series whose other parts do not touch the input), reading the input only at the
element it writes, and no later kernel reads the input: the optimizer then updates parameters and state
where they are, with no second copy and no carry copy.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass
from heapq import heapify, heappop, heappush

from scellis.lower.kernels import Kernel, Kind, Reduction, Schedule, View, contiguous_strides, series, storage_bytes

Lifetime = tuple[int, int]  # first and last kernel index, both included

_storage_bytes = functools.cache(storage_bytes)  # a schedule's buffers have few sizes, by the thousand


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
    """One pass over a schedule's kernels, per buffer id it names: the first and the last kernel that
    write it and the last that reads it (a buffer no kernel writes, or reads, is not a key there). A
    kernel writes a buffer once, so a buffer has one writer exactly when its first and last writes agree."""

    first_write: dict[int, int]
    last_write: dict[int, int]
    last_read: dict[int, int]


def _uses(schedule: Schedule) -> _Uses:
    kernels = schedule.kernels
    writes = [(view.buffer, i) for i, kernel in enumerate(kernels) for view in kernel.writes]
    # a dict keeps the value written last: in kernel order that is the last use, backwards the first
    last_write = dict(writes)
    first_write = dict(reversed(writes))
    last_read = {view.buffer: i for i, kernel in enumerate(kernels) for view in kernel.inputs}
    return _Uses(first_write, last_write, last_read)


def _named(schedule: Schedule) -> set[int]:
    return {b for _, b in (*schedule.inputs, *schedule.outputs)}


def _temporaries(schedule: Schedule, uses: _Uses) -> dict[int, Lifetime]:
    """The lifetime of every buffer a kernel writes that is not named, in order of first write."""
    named = _named(schedule)
    last_write, last_read = uses.last_write, uses.last_read
    first = sorted((i, b) for b, i in uses.first_write.items() if b not in named)
    return {b: (i, max(last_write[b], last_read.get(b, -1))) for i, b in first}


def lifetimes(schedule: Schedule, uses: _Uses | None = None) -> list[Lifetime | None]:
    """Each buffer's lifetime in kernel indices; None for named buffers (live for the whole step).
    A temporary no kernel reads lives only at its writer."""
    spans: list[Lifetime | None] = [None] * len(schedule.buffers)
    for b, span in _temporaries(schedule, uses or _uses(schedule)).items():
        spans[b] = span
    return spans


def unused(schedule: Schedule, uses: _Uses | None = None) -> set[int]:
    """Buffers no kernel and no name refers to (merged away by `update_in_place`): they get no slot."""
    uses = uses or _uses(schedule)
    return set(range(len(schedule.buffers))) - _named(schedule) - uses.first_write.keys() - uses.last_read.keys()


def _peak(kernels: int, spans: dict[int, Lifetime], whole_step: int, nbytes: list[int]) -> tuple[int, int]:
    """The most bytes live at once (`whole_step` bytes live throughout, `spans` the temporaries') and
    the first kernel where the temporaries live then are the most (-1 when no temporary is ever live)."""
    delta = [0] * (kernels + 1)
    for b, (first, last) in spans.items():
        delta[first] += nbytes[b]
        delta[last + 1] -= nbytes[b]
    live = list(itertools.accumulate(delta))
    peak = max(live, default=0)
    return (whole_step + peak, live.index(peak)) if peak > 0 else (whole_step, -1)


def in_place(schedule: Schedule, uses: _Uses | None = None) -> dict[int, int]:
    """Carried outputs that can share their input's slot (see the module docstring): output -> input."""
    uses = uses or _uses(schedule)
    buffers, first_write, last_write, last_read = schedule.buffers, uses.first_write, uses.last_write, uses.last_read
    kernels, elementwise = schedule.kernels, Kind.ELEMENTWISE
    out = {}
    for copy in schedule.carry:  # a loop of plain comparisons: it runs once per parameter and state
        src, dst = copy.src, copy.dst
        written = first_write.get(src, -1)
        if written < 0 or last_write[src] != written:
            continue  # not written by exactly one kernel
        kernel = kernels[written]
        if kernel.kind is Kind.SERIES:  # the part that writes it, when no other part touches the input
            part = next(p for p in kernel.parts if any(v.buffer == src for v in p.writes))
            others = (v for p in kernel.parts if p is not part for v in (*p.inputs, *p.writes))
            if any(v.buffer in (src, dst) for v in others):
                continue
            kernel = part
        view = next(v for v in kernel.writes if v.buffer == src)
        shape, strides = view.shape, view.strides
        own = 0 if kernel.kind is elementwise else _epilogue_from(kernel, view)
        if own < 0 or view.offset != 0 or strides != contiguous_strides(shape):
            continue  # not written element by element, or not over all of its output
        if math.prod(shape) != buffers[dst].size or last_read.get(dst, -1) > written:
            continue
        for k, v in enumerate(kernel.inputs):  # the input only at the element it writes (not as an operand)
            if v.buffer == dst and (k < own or v.offset != 0 or v.shape != shape or v.strides != strides):
                break
        else:
            out[src] = dst
    return out


def _epilogue_from(kernel: Kernel, view: View) -> int:
    """For a kernel that writes `view` in its epilogue, element by element at the output's coordinates (a
    MATMUL's, or a REDUCE's output or epilogue stores; Kind): how many of its inputs are its own operands,
    read elsewhere; -1 for any other kernel or view."""
    if kernel.kind is Kind.MATMUL:
        return 2
    if kernel.kind is Kind.REDUCE and isinstance(kernel.arg, Reduction) and len(view.shape) == len(kernel.out.shape):
        return kernel.arg.reads
    return -1


def update_in_place(schedule: Schedule, uses: _Uses | None = None) -> Schedule:
    """`schedule` with every carried output that can be written in place merged into its input: the
    output's name then names the input's buffer, and the output's own buffer is left unused (no kernel
    or name refers to it, and it gets no slot). `uses`, when given, are `schedule`'s, and are left as
    the returned schedule's (for plan_memory, which then scans no kernel again)."""
    uses = uses or _uses(schedule)
    merged = in_place(schedule, uses)
    if not merged:
        return schedule

    def view(v: View) -> View:
        return View(merged[v.buffer], v.shape, v.strides, v.offset) if v.buffer in merged else v

    kernels = list(schedule.kernels)
    # the kernels to rewrite: each merged output's one writer, and every kernel that reads one
    writers = {uses.first_write[b] for b in merged}
    readers = {i for i, kernel in enumerate(kernels) for v in kernel.inputs if v.buffer in merged}

    for i in sorted(writers | readers):
        kernels[i] = _rewritten(kernels[i], view)
    _merge_uses(uses, merged)
    return dataclasses.replace(
        schedule,
        kernels=tuple(kernels),
        outputs=tuple((name, merged.get(b, b)) for name, b in schedule.outputs),
        carry=tuple(c for c in schedule.carry if c.src not in merged),
    )


def _rewritten(kernel: Kernel, view: Callable[[View], View]) -> Kernel:
    """`kernel` with `view` applied to every view it reads and writes (a series': its parts')."""
    if kernel.kind is Kind.SERIES:
        return series(tuple(_rewritten(part, view) for part in kernel.parts))
    stores = tuple((view(v), step) for v, step in kernel.stores)
    return kernel.with_views(view(kernel.out), tuple(map(view, kernel.inputs)), stores)


def _merge_uses(uses: _Uses, merged: dict[int, int]) -> None:
    """`uses` changed to what `_uses` finds once every kernel's reference to a key of `merged` refers
    to its value instead (without a pass over the kernels)."""
    for kernel_of, pick in ((uses.first_write, min), (uses.last_write, max), (uses.last_read, max)):
        # every merged buffer out first: one may be merged away and merged into at once
        moved = [(dst, kernel_of.pop(src)) for src, dst in merged.items() if src in kernel_of]
        for dst, i in moved:
            kernel_of[dst] = pick(kernel_of[dst], i) if dst in kernel_of else i


def _largest_first(temporaries: dict[int, Lifetime], nbytes: list[int], sizes: list[int]) -> dict[int, int]:
    """Each temporary's slot, appending the new slots' sizes to `sizes` (module docstring: by size, largest
    first). One size at a time, in order of first kernel: the free gaps of the slots made so far (each as
    large or larger) are taken as the sweep reaches their start, and a temporary takes the open gap that
    ends last if it reaches past the temporary's last kernel, else a new slot; what a gap leaves after the
    temporary is a gap again."""
    first_new = len(sizes)
    held: list[list[Lifetime]] = []  # each new slot's lifetimes
    out: dict[int, int] = {}
    by_size: dict[int, list[tuple[int, int, int]]] = {}
    for buffer_id, (start, last) in temporaries.items():
        by_size.setdefault(nbytes[buffer_id], []).append((start, last, buffer_id))
    for size in sorted(by_size, reverse=True):
        pending: list[tuple[int, int, float]] = []  # gaps not yet open: (first kernel, slot, last kernel)
        for slot, spans in enumerate(held):
            spans.sort()
            ends = [-1] + [last for _, last in spans]
            starts = [start for start, _ in spans] + [math.inf]
            pending += [(e + 1, slot, s - 1) for e, s in zip(ends, starts, strict=True) if e + 1 <= s - 1]
        heapify(pending)
        open_gaps: list[tuple[float, int, int]] = []  # (-last kernel, slot, first kernel)
        for start, last, buffer_id in sorted(by_size[size]):
            while pending and pending[0][0] <= start:
                gap_start, slot, gap_end = heappop(pending)
                heappush(open_gaps, (-gap_end, slot, gap_start))
            while open_gaps and -open_gaps[0][0] < start:
                heappop(open_gaps)  # ends before this temporary begins: no later one fits either
            if open_gaps and -open_gaps[0][0] >= last:
                end, slot, _ = heappop(open_gaps)
                if last + 1 <= -end:
                    heappush(pending, (last + 1, slot, -end))
            else:
                slot = len(held)
                held.append([])
                sizes.append(size)
                heappush(pending, (last + 1, slot, math.inf))
            held[slot].append((start, last))
            out[buffer_id] = first_new + slot
    return out


def plan_memory(schedule: Schedule, uses: _Uses | None = None) -> MemoryPlan:
    """Slots for every buffer of `schedule` (see the module docstring)."""
    uses = uses or _uses(schedule)
    buffers = schedule.buffers
    temporaries = _temporaries(schedule, uses)  # in order of first write
    dead = unused(schedule, uses)
    nbytes = [0 if b.id in dead else _storage_bytes(b.dtype, b.size) for b in buffers]  # (none for no slot)
    slot_of = [-1] * len(buffers)
    whole_step = sorted(set(range(len(buffers))) - temporaries.keys() - dead)  # named (and any only read)
    for slot, b in enumerate(whole_step):  # a slot each
        slot_of[b] = slot
    sizes = [nbytes[b] for b in whole_step]
    live_throughout = sum(sizes)
    for buffer_id, slot in _largest_first(temporaries, nbytes, sizes).items():
        slot_of[buffer_id] = slot
    spans: list[Lifetime | None] = [None] * len(buffers)
    for b, span in temporaries.items():
        spans[b] = span
    peak = _peak(len(schedule.kernels), temporaries, live_throughout, nbytes)
    return MemoryPlan(tuple(slot_of), tuple(sizes), tuple(spans), *peak)
