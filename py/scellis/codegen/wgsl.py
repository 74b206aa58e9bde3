"""WGSL for one kernel: dispatch by kind to its renderer, which fills in its templates from wgsl/. Every
shape, stride and constant is baked into the source, so a kernel needs no uniforms and one bind group of
storage buffers."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from scellis.codegen import wgsl_dense, wgsl_expr, wgsl_nf4, wgsl_random, wgsl_solve, wgsl_sort, wgsl_spatial
from scellis.codegen.wgsl_expr import grid
from scellis.lower.kernels import Kernel, Kind, Schedule
from scellis.lower.series import WORKGROUP, indices, invocations


@dataclass(frozen=True)
class WgslKernel:
    source: str
    bindings: tuple[int, ...]  # buffer ids in binding order (the outputs last)
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
    Kind.CONV2D: wgsl_spatial.conv2d,
    Kind.CONV2D_GRAD_INPUT: wgsl_spatial.conv2d_grad_input,
    Kind.CONV2D_GRAD_WEIGHT: wgsl_spatial.conv2d_grad_weight,
    Kind.MAX_POOL2D: wgsl_spatial.max_pool2d,
    Kind.MAX_POOL2D_GRAD: wgsl_spatial.max_pool2d_grad,
    Kind.AVG_POOL2D: wgsl_spatial.avg_pool2d,
    Kind.AVG_POOL2D_GRAD: wgsl_spatial.avg_pool2d_grad,
    Kind.GATHER: wgsl_spatial.gather,
    Kind.SCATTER_ADD: wgsl_spatial.scatter_add,
    Kind.RANDOM: wgsl_random.random,
    Kind.SHIFT2D: wgsl_spatial.shift2d,
    Kind.FLIP_LAST: wgsl_spatial.flip_last,
    Kind.CONCAT: wgsl_spatial.concat,
    Kind.SOLVE: wgsl_solve.solve,
    Kind.SORT: wgsl_sort.sort,
    Kind.SORT_GRAD: wgsl_sort.sort,
    Kind.CHECK_INDEX: wgsl_spatial.check_index,
    **dict.fromkeys((Kind.NF4_PACK, Kind.NF4_UNPACK, Kind.NF4_MATMUL), wgsl_nf4.nf4_kernel),
}


SERIES_LANES = 64  # a series' workgroup size; its grid is 1-D (lower.series.GRID)
BUILTIN = re.compile(r"@builtin\(\w+\) ")


def series(kernel: Kernel, schedule: Schedule, b: wgsl_expr.Bindings) -> tuple[str, tuple[int, int, int]]:
    """A SERIES: each part rendered with the series' bindings, its entry point made a function part<k>,
    called in order by the series' one entry point with the same invocation ids. Parts of one invocation an
    index compute it as the flat invocation index, which on a 1-D grid of 64-invocation workgroups it is
    whatever workgroup size the part's own kernel declares; parts of one 64-lane workgroup an index take the
    flat workgroup index, and a storage and a workgroup barrier separate them (a part's lanes read what the
    one before wrote, and reuse its workgroup memory). Helper functions and workgroup variables are written
    once."""
    helpers: dict[str, None] = {}
    calls, bodies = [], []
    lanes = (indices(kernel.parts[0]) or ("",))[0] == WORKGROUP
    for k, part in enumerate(kernel.parts):
        source, _ = RENDERERS[part.kind](part, schedule, b)
        head, entry = source.split("@compute", 1)
        kept = [line for line in head.split("\n") if not line.startswith(("@group(", "enable f16;"))]
        for item in re.split(r"(?m)^(?=fn |var<workgroup>)", "\n".join(kept).strip()):
            if item.strip():
                helpers.setdefault(item.strip(), None)
        entry = entry.split("\n", 1)[1]  # the workgroup size line goes
        bodies.append(BUILTIN.sub("", entry.replace("fn main(", f"fn part{k}(", 1)))
        if k and lanes:
            calls.append("  storageBarrier();\n  workgroupBarrier();")
        calls.append(f"  part{k}(gid, lid, wid, groups);")
    count = max(invocations(part) or 1 for part in kernel.parts)
    main = [
        f"@compute @workgroup_size({SERIES_LANES})",
        "fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>, "
        "@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {",
        *calls,
        "}",
    ]
    enable = ["enable f16;"] if b.half else []
    text = "\n".join([*enable, b.declarations(schedule).removeprefix("enable f16;\n"), *helpers, *bodies, *main])
    return text, grid(count) if lanes else (-(-count // SERIES_LANES), 1, 1)


RENDERERS[Kind.SERIES] = series


def render(kernel: Kernel, schedule: Schedule) -> WgslKernel:
    bindings = wgsl_expr.bindings_of(kernel, schedule)
    renderer = RENDERERS.get(kernel.kind)
    if renderer is None:
        raise ValueError(f"no WGSL renderer for {kernel.kind.value} kernels")
    source, groups = renderer(kernel, schedule, bindings)
    return WgslKernel(source, bindings.order, groups, kernel.label)
