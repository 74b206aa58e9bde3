"""Stage: memory planning. Buffer lifetimes over a kernel schedule and their assignment to allocations
(memory), a function planned once for a device (planned), what the bytes are for (breakdown), the device
budget and verdict (budget), every function of a session planned (program), what helps when it does not
fit (remedies), and the report of it all (report)."""

from scellis.plan.memory import MemoryPlan, lifetimes, plan_memory, update_in_place
from scellis.plan.planned import Planned, lowered, planned

__all__ = ["MemoryPlan", "Planned", "lifetimes", "lowered", "plan_memory", "planned", "update_in_place"]
