"""WGSL for one kernel: dispatch by kind to its renderer. Every shape, stride and constant is baked
into the source, so a kernel needs no uniforms and one bind group of storage buffers."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from scellis.codegen import wgsl_dense, wgsl_expr
from scellis.lower.kernels import Kernel, Kind, Schedule

MAX_GROUPS = 65535


@dataclass(frozen=True)
class WgslKernel:
    source: str
    bindings: tuple[int, ...]  # buffer ids in binding order (the output last)
    workgroups: tuple[int, int, int]
    label: str


Renderer = Callable[[Kernel, Schedule, wgsl_expr.Bindings], tuple[str, tuple[int, int, int]]]
RENDERERS: dict[Kind, Renderer] = {
    Kind.ELEMENTWISE: wgsl_dense.elementwise,
    Kind.MATMUL: wgsl_dense.matmul,
    Kind.REDUCE: wgsl_dense.reduce,
    Kind.SOFTMAX: wgsl_dense.rows,
    Kind.LOG_SOFTMAX: wgsl_dense.rows,
    Kind.ARGMAX: wgsl_dense.rows,
}


def render(kernel: Kernel, schedule: Schedule) -> WgslKernel:
    bindings = wgsl_expr.bindings_of(kernel)
    renderer = RENDERERS.get(kernel.kind)
    if renderer is None:
        raise ValueError(f"no WGSL renderer for {kernel.kind.value} kernels")
    source, groups = renderer(kernel, schedule, bindings)
    return WgslKernel(source, (*bindings.reads, bindings.out), groups, kernel.label)


def grid(groups: int) -> tuple[int, int, int]:
    """A 1-D count of workgroups laid out within the per-dimension limit."""
    return (min(groups, MAX_GROUPS), -(-groups // MAX_GROUPS), 1)
