"""Stage: memory planning. Buffer lifetimes over a kernel schedule, their assignment to allocations, and
(to come) the device budget, the verdict and its remedies."""

from scellis.plan.memory import MemoryPlan, lifetimes, plan_memory, update_in_place

__all__ = ["MemoryPlan", "lifetimes", "plan_memory", "update_in_place"]
