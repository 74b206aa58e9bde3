"""Stage: memory. A function's planned schedule: lowered for a level, updated in place and planned, once.

Expects a logical Schedule (lower). Guarantees: `schedule` is what a device runs (carried outputs merged
into their inputs where they can be, plan.memory.update_in_place) and `memory` is its plan, which a
device allocates exactly, but for the slots it borrows from the function it is compiled `alongside`;
nothing downstream lowers, updates or plans it again."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Collection
from dataclasses import dataclass, replace

from scellis.gcpause import paused
from scellis.ir import Function
from scellis.levels import Level
from scellis.lower import Schedule, lower
from scellis.plan.memory import MemoryPlan, _uses, plan_memory, update_in_place


@dataclass(frozen=True)
class Planned:
    logical: Schedule  # as lowered (what the Guide prints)
    schedule: Schedule  # updated in place: what the device compiles
    memory: MemoryPlan  # its buffers' slots: what the device allocates, but for the borrowed ones
    # per slot, the slot of the function it is compiled alongside that it is (-1: its own); () owns every
    # slot (see `alongside`)
    borrows: tuple[int, ...] = ()
    shared: tuple[str, ...] = ()  # the buffers (by name) that are the other function's own

    @property
    def name(self) -> str:
        return self.schedule.name

    def owns(self, slot: int) -> bool:
        return not self.borrows or self.borrows[slot] < 0

    @property
    def allocated(self) -> int:
        """Bytes the device allocates for this function: its own slots."""
        return sum(size for slot, size in enumerate(self.memory.slot_bytes) if self.owns(slot))

    @property
    def naive(self) -> int:
        """Bytes of the logical schedule with one allocation per buffer (for comparison)."""
        return self.memory.naive(self.logical)


@paused
def planned(schedule: Schedule) -> Planned:
    """`schedule` (logical, as lowered) updated in place and planned."""
    uses = _uses(schedule)  # one scan of the kernels: update_in_place leaves them as the updated schedule's
    updated = update_in_place(schedule, uses)
    return Planned(schedule, updated, plan_memory(updated, uses))


def lowered(fn: Function, level: Level, features: frozenset[str] = frozenset()) -> Planned:
    """`fn` lowered for `level` on a device with `features`, updated in place and planned."""
    return planned(lower(fn, level, features))


def alongside(host: Planned, guest: Planned, names: Collection[str]) -> Planned:
    """`guest` as compiled alongside `host`, which never runs at the same time (a session runs one function
    at a time, in order): its buffers `names` (parameters and state, say) are the host's buffers of those
    names, the same bytes, so nothing is copied between them; each of its temporaries' slots, the largest
    first, is the smallest of the host's temporaries' slots as large or larger not taken yet (a host's
    temporary holds nothing from one of its runs to the next), else its own. ValueError names a buffer
    that either lacks or that differs in size."""
    hm, gm = host.memory, guest.memory
    hnames = dict((*host.schedule.inputs, *host.schedule.outputs))
    gnames = dict((*guest.schedule.inputs, *guest.schedule.outputs))
    borrows = [-1] * len(gm.slot_bytes)
    for name in names:
        if name not in hnames or name not in gnames:
            raise ValueError(f"{name!r} is not a buffer of both {host.name} and {guest.name}")
        hs, gs = hm.slot_of[hnames[name]], gm.slot_of[gnames[name]]
        if hm.slot_bytes[hs] != gm.slot_bytes[gs]:
            raise ValueError(f"{name!r} holds {hm.slot_bytes[hs]:,} bytes in {host.name}, {gm.slot_bytes[gs]:,} here")
        borrows[gs] = hs
    free = sorted((hm.slot_bytes[s], s) for s in _temporary_slots(hm))
    for gs in sorted(_temporary_slots(gm), key=lambda s: (-gm.slot_bytes[s], s)):
        at = bisect_left(free, (gm.slot_bytes[gs], -1))
        if at < len(free):
            borrows[gs] = free.pop(at)[1]
    return replace(guest, borrows=tuple(borrows), shared=tuple(names))


def _temporary_slots(memory: MemoryPlan) -> list[int]:
    """The slots that hold temporaries (each named buffer has a slot of its own, for the whole step)."""
    return sorted({memory.slot_of[b] for b, span in enumerate(memory.lifetimes) if span is not None} - {-1})
