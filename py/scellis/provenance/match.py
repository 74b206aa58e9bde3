"""Provenance: a replayed function's owners carried over to the function the pipeline built, by walking
both from their outputs in step.

The pipeline's functions compute what the replay computes, rewritten in three ways the walk follows:
reordering (`first`) changes no node; recomputation (autodiff.checkpoint) copies forward nodes (same op,
argument and sources, or their copies), so a copy pairs with the node it copies; float16 storage
(optim.storage) rebuilds nodes with the same op and argument, inserts casts (a cast pairs with the node
it rounds or widens), reads parameters as float16 inputs and the optimizer's as float32 masters (an input
pairs with any input), and outputs `state/opt.master/<p>`, the value `param/<p>` rounds. Anything else
is a bug, and raises ProvenanceError rather than attribute an op to the wrong node.
"""

from __future__ import annotations

from scellis.ir import Function
from scellis.ops import Node, Op
from scellis.optim.storage import MASTER
from scellis.provenance.replay import LOOP, Owners


class ProvenanceError(ValueError):
    """A function the pipeline built that does not compute what the replay computes."""


def attribute(built: Function, replayed: Function, owners: Owners) -> Owners:
    """Each node of `built` -> the owners of the replayed nodes it computes (constants: their readers')."""
    found: dict[int, set[str]] = {}
    stack = [(replayed.output(_replayed_name(name)), node) for name, node in built.outputs]
    done: set[tuple[int, int]] = set()
    while stack:
        r, b = stack.pop()
        if (id(r), id(b)) in done or b.op is Op.CONST:
            continue
        done.add((id(r), id(b)))
        found.setdefault(id(b), set()).update(owners.get(id(r), ()))
        if b.op is Op.CAST and _inserted(b, r):
            stack.append((r, b.src[0]))
        elif _alike(b, r):
            stack.extend(zip(r.src, b.src, strict=True))
        else:
            raise ProvenanceError(f"{built.name}: a {b.op.value} node where the replay has {r.op.value}")
    return {**{i: frozenset(who) for i, who in found.items()}, **_constants(built, found, owners)}


def _replayed_name(name: str) -> str:
    """The replay's name for an output: a float16 step's master copy is the replay's updated parameter."""
    prefix = f"state/{MASTER}"
    return f"param/{name.removeprefix(prefix)}" if name.startswith(prefix) else name


def _inserted(cast: Node, r: Node) -> bool:
    """Whether `cast` is one float16 storage inserted, rather than the replay's own cast `r`."""
    return not (r.op is Op.CAST and r.arg == cast.arg and r.src[0].dtype is cast.src[0].dtype)


def _alike(b: Node, r: Node) -> bool:
    if b.op is not r.op:
        return False
    return b.op is Op.INPUT or (b.arg == r.arg and len(b.src) == len(r.src))


def _constants(fn: Function, found: dict[int, set[str]], owners: Owners) -> Owners:
    """Each constant of `fn` -> its readers' owners, and the constant node's it is the value of (equal
    constants are one node everywhere, so the replay's are `fn`'s); the loop's when only an output reads
    it."""
    readers: dict[int, set[str]] = {}
    for node in fn.nodes():
        for s in node.src:
            if s.op is Op.CONST:
                readers.setdefault(id(s), set()).update(found.get(id(node), ()))
    constants = (n for n in fn.nodes() if n.op is Op.CONST)
    return {
        id(n): frozenset(readers.get(id(n), set()) | owners.get(id(n), set())) or frozenset({LOOP}) for n in constants
    }
