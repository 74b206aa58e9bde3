"""Stage: kernels. Which IR nodes each kernel of a schedule computes, for the Guide's links (provenance).

A kernel's `covers` lists them, with one exception this module fills in: a reduction that keeps its
reduced axes (`keepdims`) is written as a reduction without them and then viewed with them, and that
kernel covers nothing. `lower` lowers nodes in canonical order and writes each such kernel while lowering
its node, so the uncovered reduce kernels and the keepdims reductions pair up in order. Kernels that
compute no node (copies into an output's buffer, or to make a view contiguous) compute nothing here.
"""

from __future__ import annotations

from scellis.ir import Function
from scellis.lower.kernels import Kind, Schedule
from scellis.ops import defs as d


def computed(schedule: Schedule, fn: Function) -> list[tuple[int, ...]]:
    """The positions (in `fn`'s canonical node order) of the IR nodes each kernel of `schedule`, lowered
    from `fn`, computes."""
    kept = [
        i
        for i, node in enumerate(fn.nodes())
        if node.op in d.REDUCE and isinstance(node.arg, d.ReduceArg) and node.arg.keepdims
    ]
    uncovered = [i for i, k in enumerate(schedule.kernels) if k.kind is Kind.REDUCE and not k.covers]
    nodes = fn.nodes()
    ops = [schedule.kernels[i].arg[0] for i in uncovered]  # type: ignore[index]
    if ops != [nodes[i].op for i in kept]:
        raise ValueError(f"{fn.name}: the reduce kernels that cover nothing are not its keepdims reductions")
    extra = dict(zip(uncovered, kept, strict=True))
    return [(extra[i],) if i in extra else k.covers for i, k in enumerate(schedule.kernels)]
