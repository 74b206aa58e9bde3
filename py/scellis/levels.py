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
    Level.FAST: "may trade exactness for speed within a wider declared tolerance. Where the device has "
    "shader-f16, large matmuls round their operands to float16 and sum each slice of 16 products in "
    "float16 (slices are summed in float32); weights, gradients and optimizer state stay float32. Where the "
    "step runs such kernels, dynamic loss scaling keeps small gradients inside float16's range: gradients are "
    "taken of "
    "loss * S (S starts at 2^15, reported as loss_scale) and divided by S before clipping, weight decay and "
    "the optimizer; a step where any gradient is inf or NaN (tested on the bits) changes no parameter, "
    "optimizer state or step count and halves S (not below 1); after 2000 finite steps in a row S doubles "
    "(not above 2^24). Where the device has no shader-f16, fast runs prod's kernels and step (no scaling) and "
    "the schedule says so; so it does where no matmul is large enough for float16 tiles. No atomics or "
    "subgroup operations are used.",
}

# How the suite checks each promise (tests/devices/test_correctness.py and e2e/test_matrix_in_chromium.py);
# the Correctness page shows this beside the measured figures.
CHECKS = {
    Level.DEBUG: "every case of the correctness matrix within its kernel's declared tolerance of the float64 "
    "reference on every device; a second compile and run gives identical bytes; the CPU path's bytes in "
    "Chromium equal its bytes under wasmtime.",
    Level.PROD: "every case within its kernel's declared tolerance of the float64 reference on every device; a "
    "second compile and run gives identical bytes.",
    Level.FAST: "every case within its kernel's declared (wider) tolerance of the float64 reference on every "
    "device; whether a second run gave identical bytes is recorded, not promised.",
}


def parse_level(value: object) -> Level:
    """A level from its name; anything else is an error that lists the choices."""
    for level in Level:
        if value == level.value:
            return level
    choices = ", ".join(level.value for level in Level)
    raise ValueError(f"determinism level must be one of {choices}; got {value!r}")
