"""Stage: memory planning. Buffer lifetimes over a kernel schedule and their assignment to allocations
(memory), what the bytes are for (breakdown), and the device budget and verdict (budget). A whole
program's plan on a device, with its remedies, is scellis.planning.plan."""

from scellis.plan.memory import MemoryPlan, lifetimes, plan_memory, update_in_place

__all__ = ["MemoryPlan", "lifetimes", "plan_memory", "update_in_place"]
