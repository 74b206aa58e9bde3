"""Stage: memory. A device's limits and memory budget, and the verdict on a plan against them.

Thresholds (documented in the verdict's reasons too):
- red: refused before any work reaches the device. One allocation is larger than the device's largest
  storage binding or buffer, a kernel binds more buffers than a shader stage may, or the plan needs
  more bytes than the measured budget.
- yellow: it fits, but with a warning for each reason: the budget could not be measured (then the
  verdict is never green), or the plan takes more than GREEN_SHARE of the budget.
- green: it fits within GREEN_SHARE of a measured budget, inside every limit.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Generator
from dataclasses import dataclass

GREEN_SHARE = 0.8  # green leaves at least 20 % of the measured budget free


@dataclass(frozen=True)
class DeviceLimits:
    max_buffer_size: int  # bytes of the largest buffer the device creates
    max_storage_binding: int  # bytes of the largest storage buffer a kernel may bind
    max_storage_buffers: int  # buffers one kernel may bind (per shader stage)


@dataclass(frozen=True)
class Budget:
    bytes: int | None  # what a run may allocate on the device, as measured; None: not measurable
    how: str  # how it was measured, or why it could not be


@dataclass(frozen=True)
class Verdict:
    color: str  # "green", "yellow" or "red"
    reasons: tuple[str, ...]


def _over_limits(largest: int, bindings: int, limits: DeviceLimits) -> list[str]:
    out = []
    if largest > limits.max_storage_binding:
        out.append(
            f"an allocation of {largest:,} bytes exceeds the largest storage binding ({limits.max_storage_binding:,})"
        )
    if largest > limits.max_buffer_size:
        out.append(f"an allocation of {largest:,} bytes exceeds the largest buffer ({limits.max_buffer_size:,})")
    if bindings > limits.max_storage_buffers:
        out.append(f"a kernel binds {bindings} buffers; a shader stage may bind {limits.max_storage_buffers}")
    return out


def verdict(total: int, largest: int, bindings: int, limits: DeviceLimits, budget: Budget) -> Verdict:
    """The verdict on a plan that holds `total` bytes, whose largest allocation is `largest` bytes and
    whose busiest kernel binds `bindings` buffers (see the module docstring)."""
    red = _over_limits(largest, bindings, limits)
    if budget.bytes is not None and total > budget.bytes:
        red.append(f"needs {total:,} bytes, more than the budget of {budget.bytes:,} ({budget.how})")
    if red:
        return Verdict("red", tuple(red))
    if budget.bytes is None:
        return Verdict("yellow", (f"the device's memory could not be measured: {budget.how}",))
    share = total / budget.bytes if budget.bytes else 1.0
    takes = f"takes {total:,} of a budget of {budget.bytes:,} bytes ({_share(share)}; {budget.how})"
    if share > GREEN_SHARE:
        return Verdict("yellow", (f"{takes}: less than {1 - GREEN_SHARE:.0%} of it left free",))
    return Verdict("green", (takes,))


Search = Generator[int, bool, Budget]


def probe_search(need: int) -> Search:
    """The allocation probe's questions for a plan needing `need` bytes, for devices that do not report
    their memory (WebGPU): yields a size to try allocating, is sent whether it fitted, and returns the
    budget that shows. First the need plus the headroom green asks for, then the need, then halves."""
    ample = math.ceil(need / GREEN_SHARE)
    lazily = "drivers may commit memory only when it is used"
    if (yield ample):
        return Budget(ample, f"at least: the allocation probe allocated and released {ample:,} bytes; {lazily}")
    if (yield need):
        return Budget(need, f"the allocation probe allocated {need:,} bytes but not {ample:,}")
    size = need // 2
    while size >= max(need // 1024, 1):
        if (yield size):
            return Budget(size, f"the allocation probe could allocate {size:,} bytes, not {2 * size:,}")
        size //= 2
    return Budget(0, f"the allocation probe could not allocate even {2 * size:,} bytes")


def run_search(search: Search, fits: Callable[[int], bool]) -> Budget:
    """Answer a probe search with a synchronous probe."""
    size = next(search)
    try:
        while True:
            size = search.send(fits(size))
    except StopIteration as done:
        return done.value


def _share(share: float) -> str:
    """A share as a percentage; a small plan on a large device reads "under 0.1%", not "0.0%"."""
    return "under 0.1%" if 0 < share < 0.0005 else f"{share:.1%}"
