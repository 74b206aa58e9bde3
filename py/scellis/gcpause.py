"""Python's cyclic garbage collector paused while a stage builds its artifact.

Expects a function that builds a large graph of small objects which live until it returns (the program's
IR, its kernel schedule, its memory plan): nearly everything such a stage frees is freed by reference
counting, yet the collector, which runs every few hundred allocations, would walk the whole graph built so
far again and again (a third of lowering's time on the 1,000-node benchmark program). Guarantees: `paused(f)`
behaves as `f`, with the collector off during the call and back on after it, exactly as it was before
(nested calls leave it to the outermost); cycles made meanwhile are collected on its next run.
"""

from __future__ import annotations

import functools
import gc
from collections.abc import Callable
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")


def paused(stage: Callable[P, T]) -> Callable[P, T]:
    @functools.wraps(stage)
    def run(*args: P.args, **kwargs: P.kwargs) -> T:
        if not gc.isenabled():
            return stage(*args, **kwargs)
        gc.disable()
        try:
            return stage(*args, **kwargs)
        finally:
            gc.enable()

    return run
