"""Stage: code. WGSL for SORT and SORT_GRAD along the last axis of [rows, R] views (Kind.SORT), from
wgsl/sort.wgsl: each invocation counts the rank of one element over its whole row, by keys made from the
bits, so the order is the CPU path's stable one and no atomics are needed. SORT writes out[rank(i)] =
x[i]; SORT_GRAD writes out[i] = g[rank(i)]."""

from __future__ import annotations

import math

from scellis.codegen import wgsl_expr as w
from scellis.codegen.wgsl_template import template
from scellis.lower.kernels import Kernel, Kind, Schedule

Source = tuple[str, tuple[int, int, int]]
TILE = 256  # keys a workgroup ranks, and reads into workgroup memory at a time


def sort(kernel: Kernel, schedule: Schedule, b: w.Bindings) -> Source:
    """Workgroup (row, block) ranks the row's elements block * 256 + lane."""
    x = kernel.inputs[0]
    *rows, count = x.shape
    nrows, blocks = math.prod(rows), -(-count // TILE)
    decode, coords = w.decode("row", tuple(rows), "c")

    def x_at(position: str) -> str:
        return b.read(x.buffer, w.index_expr(x, [*coords, position]))

    if kernel.kind is Kind.SORT:
        at, value = "rank", x_at("i")
    else:
        g = kernel.inputs[1]
        at, value = "i", b.read(g.buffer, w.index_expr(g, [*coords, "rank"]))
    source = template("sort").fill(
        BLOCKS=f"{blocks}u",
        ROWS=f"{nrows}u",
        COUNT=f"{count}u",
        DECODE=w.or_blank(decode),
        X_I=x_at("i"),
        X_J=x_at("j"),
        OUT_AT=w.index_expr(kernel.out, [*coords, at]),
        VALUE=value,
    )
    return b.declarations(schedule) + "\n" + source, w.grid(nrows * blocks)
