"""The kernel variant choice point: the one place where how a kernel is implemented is decided, and
recorded on the kernel so the Guide and the code generators agree. Today the choice follows shapes
(matmul blocking); the determinism levels (debug / prod / fast) choose here as well."""

from __future__ import annotations

import dataclasses

from scellis.lower.kernels import Kernel, Kind

LARGE_MATMUL = 128  # both output sides at least this: 128 x 128 tiles pay off


def choose(kernel: Kernel) -> str:
    if kernel.kind is Kind.MATMUL:
        m, n = kernel.out.shape[-2:]
        return "tile128" if m >= LARGE_MATMUL and n >= LARGE_MATMUL else "tile64"
    return "default"


def with_variants(kernels: list[Kernel]) -> tuple[Kernel, ...]:
    return tuple(dataclasses.replace(k, variant=choose(k)) for k in kernels)
