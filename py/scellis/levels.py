"""Determinism levels: what a run promises about its arithmetic. Every run declares one — there is no
default anywhere — the level picks the kernel variants (lower.variants), and it is recorded with the
result."""

from __future__ import annotations

import enum


class Level(enum.Enum):
    DEBUG = "debug"
    PROD = "prod"
    FAST = "fast"


PROMISES = {
    Level.DEBUG: "bit-identical run to run on one device and engine version; on the CPU path bit-identical "
    "everywhere. One fixed reduction order per op, no atomics, no subgroup operations, float32, and one "
    "blocking for every matmul shape.",
    Level.PROD: "deterministic run to run on one device, with kernels tuned by shape; within the declared "
    "tolerance of the float64 reference.",
    Level.FAST: "may trade exactness for speed (atomics, subgroups, float16) within a wider tolerance. No such "
    "kernel exists yet: fast runs the prod kernels, and says so.",
}


def parse_level(value: object) -> Level:
    """A level from its name; anything else is an error that lists the choices."""
    for level in Level:
        if value == level.value:
            return level
    choices = ", ".join(level.value for level in Level)
    raise ValueError(f"determinism level must be one of {choices}; got {value!r}")
