"""Stage: code. WGSL for SOLVE: Gaussian elimination with partial pivoting and back substitution in the
kernel's output (the augmented matrix [a | b], see Kind.SOLVE), step for step in the order of the CPU
path's kernel (wasm/cpu_solve.c). Two ways to split the work (lower.variants picks by n): small matrices
take one invocation each, running the C kernel's loops; larger ones one workgroup each, whose lanes split
each step's rows and columns, find the pivot by a fixed tree (the first row of largest |value|, compared as
bits, so a NaN never wins) and meet at storage barriers between steps. No atomics: results repeat bit for
bit on one device. The working copy is the output buffer, so no n or k meets a workgroup-memory limit."""

from __future__ import annotations

import math

from scellis.codegen import wgsl_expr as w
from scellis.codegen.wgsl_template import template, text
from scellis.lower.kernels import Kernel, Schedule

Source = tuple[str, tuple[int, int, int]]
LANES = 64  # wgsl/solve_*.wgsl's workgroup size


def solve(kernel: Kernel, schedule: Schedule, b: w.Bindings) -> Source:
    """out[m] = [a | b] of matrix m, reduced until its last k columns hold x: by one invocation per matrix
    (variant solve-invocation, small n: no barriers, many matrices a workgroup) or by one workgroup."""
    a_view, b_view = kernel.inputs[:2]
    *batch, n, width = kernel.out.shape
    k, count = width - n, math.prod(batch)
    values = {
        "COUNT": f"{count}u",
        "OFFSET": f"{kernel.out.offset}u",
        "CELLS": f"{n * width}u",
        "N": f"{n}u",
        "LAST": f"{n - 1}u",
        "WIDTH": f"{width}u",
        "A_AT": b.read(a_view.buffer, f"{a_view.offset}u + m * {n * n}u + r * {n}u + c"),
        "B_AT": b.read(b_view.buffer, f"{b_view.offset}u + m * {n * k}u + r * {k}u + c - {n}u"),
    }
    header = b.declarations(schedule) + "\n\n" + text("pivot_key") + "\n"
    if kernel.variant == "solve-invocation":
        return header + template("solve_invocation").fill(**values), w.grid(-(-count // LANES))
    tree = w.lane_tree("solve_pivot_tree")
    source = template("solve_workgroup").fill(**values, K=f"{k}u", WIDTH_LAST=f"{width - 1}u", PIVOT_TREE=tree)
    return header + source, w.grid(count)
