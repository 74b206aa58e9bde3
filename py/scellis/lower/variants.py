"""The kernel variant choice point: the one place where how a kernel is implemented is decided, and
recorded on the kernel so the Guide and the code generators agree. Today the choice follows shapes
(matmul blocking); the determinism levels (debug / prod / fast) choose here as well."""

from __future__ import annotations

import dataclasses

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


def choose(kernel: Kernel) -> str:
    if kernel.kind is Kind.MATMUL:
        m, n = kernel.out.shape[-2:]
        if m < LARGE_MATMUL or n < LARGE_MATMUL:
            return "tile64"
        return "tile128-vec4" if _vec4_operands(kernel) else "tile128"
    return "default"


def with_variants(kernels: list[Kernel]) -> tuple[Kernel, ...]:
    return tuple(dataclasses.replace(k, variant=choose(k)) for k in kernels)
