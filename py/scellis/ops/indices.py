"""Indexing ops' one contract, shared by every device: an index of GATHER, SCATTER_ADD or ONE_HOT lies in
[0, bound) (the table's rows, the output's rows, the classes). An index outside is never read silently:
the reference raises IndexRangeError at once, and the devices record the first one (lower's CHECK_INDEX
kernels) and raise the same error, with the same words, when the host next reads the step back."""

from __future__ import annotations

import math
from dataclasses import dataclass

from scellis.ops import defs as d
from scellis.ops.defs import Op
from scellis.ops.node import Node


@dataclass(frozen=True)
class IndexUse:
    """What an indexing node reads by index: a description naming the op and the inputs it indexes
    (`gather from 'embed.weight' by 'tokens'`), the bound (valid indices are [0, bound)) and the
    indices' shape."""

    what: str
    bound: int
    shape: tuple[int, ...]


def _named(node: Node) -> str:
    """An input by its name; a computed value by its op."""
    if node.op is Op.INPUT and isinstance(node.arg, d.InputArg):
        return repr(node.arg.name)
    return f"a computed {node.op.value} value"


def index_use(node: Node) -> IndexUse | None:
    """The index use of an indexing node (None for any other node)."""
    if node.op is Op.GATHER:
        table, indices = node.src
        return IndexUse(f"gather from {_named(table)} by {_named(indices)}", table.shape[0], indices.shape)
    if node.op is Op.SCATTER_ADD and isinstance(node.arg, d.RowsArg):
        indices = node.src[0]
        return IndexUse(f"scatter_add into {node.arg.rows} rows by {_named(indices)}", node.arg.rows, indices.shape)
    if node.op is Op.ONE_HOT and isinstance(node.arg, d.ClassesArg):
        labels = node.src[0]
        return IndexUse(f"one_hot of {_named(labels)} ({node.arg.classes} classes)", node.arg.classes, labels.shape)
    return None


def _coordinates(position: int, shape: tuple[int, ...]) -> list[int]:
    out = []
    for dim in reversed(shape):
        out.append(position % dim if dim else 0)
        position = position // dim if dim else 0
    return out[::-1]


class IndexRangeError(ValueError):
    """An index outside [0, bound) reached an indexing op: `use` says which op and inputs, `value` is the
    first such index (in row-major order), at flat `position` of the indices, and `count` how many of
    them lie outside (on a device: in the first step that had any)."""

    def __init__(self, use: IndexUse, count: int, position: int, value: int) -> None:
        self.use, self.count, self.position, self.value = use, count, position, value
        where = _coordinates(position, use.shape)
        message = f"{use.what}: index {value} at {where} lies outside [0, {use.bound})"
        if count > 1:
            message += f"; {count} of its {math.prod(use.shape)} indices do"
        super().__init__(message)
