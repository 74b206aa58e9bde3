"""The kernel variant choice point: the one place where how a kernel is implemented is decided, and
recorded on the kernel so the Guide and the code generators agree: by the run's determinism level and
by shape."""

from __future__ import annotations

import dataclasses

from scellis.levels import Level
from scellis.lower.kernels import Kernel, Kind

LARGE_MATMUL = 128  # both output sides at least this: 128 x 128 tiles pay off


def _vec4_operands(kernel: Kernel) -> bool:
    """A's K axis and B's N axis are contiguous and every offset, stride and those extents are
    multiples of 4, so both operands can be read as vec4; and nothing else reads their buffers."""
    a, b = kernel.inputs[:2]
    k, n = a.shape[-1], b.shape[-1]
    quads = [k, n, a.offset, b.offset, *a.strides[:-1], *b.strides[:-1]]
    others = {v.buffer for v in kernel.inputs[2:]}
    return (
        a.strides[-1] == 1
        and b.strides[-1] == 1
        and all(q % 4 == 0 for q in quads)
        and a.buffer != b.buffer
        and not others & {a.buffer, b.buffer}
    )


def choose(kernel: Kernel, level: Level) -> str:
    """debug keeps one matmul blocking for every shape; prod and fast pick the fastest by shape (fast has
    no kernels of its own yet, see levels.PROMISES)."""
    if kernel.kind is Kind.MATMUL:
        m, n = kernel.out.shape[-2:]
        if level is Level.DEBUG or m < LARGE_MATMUL or n < LARGE_MATMUL:
            return "tile64"
        return "tile128-vec4" if _vec4_operands(kernel) else "tile128"
    return "default"


# Declared tolerance of each variant against the float64 reference: max |device - reference| relative to
# max(1, max |reference|); matmul-like variants scale it by sqrt(K). The correctness tests assert these.
TOLERANCE = {"default": 5e-6, "tile64": 1e-5, "tile128": 1e-5, "tile128-vec4": 1e-5}


def with_variants(kernels: list[Kernel], level: Level) -> tuple[Kernel, ...]:
    return tuple(dataclasses.replace(k, variant=choose(k, level)) for k in kernels)
