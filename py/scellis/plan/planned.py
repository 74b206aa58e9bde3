"""Stage: memory. A function's planned schedule: lowered for a level, updated in place and planned, once.

Expects a logical Schedule (lower). Guarantees: `schedule` is what a device runs (carried outputs merged
into their inputs where they can be, plan.memory.update_in_place) and `memory` is its plan, which a
device allocates exactly; nothing downstream lowers, updates or plans it again."""

from __future__ import annotations

from dataclasses import dataclass

from scellis.gcpause import paused
from scellis.ir import Function
from scellis.levels import Level
from scellis.lower import Schedule, lower
from scellis.plan.memory import MemoryPlan, _uses, plan_memory, update_in_place


@dataclass(frozen=True)
class Planned:
    logical: Schedule  # as lowered (what the Guide prints)
    schedule: Schedule  # updated in place: what the device compiles
    memory: MemoryPlan  # its buffers' slots: what the device allocates

    @property
    def name(self) -> str:
        return self.schedule.name

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
