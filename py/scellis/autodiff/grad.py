"""Reverse-mode autodiff: IR function -> the same function with gradient outputs appended.

Expects a verified function whose `loss` output is a float32 scalar. Guarantees: gradients only
for the requested inputs, and no gradient work for anything those inputs do not influence (frozen
parameters, data); each gradient output has its input's shape; cotangents that meet at one node are
added in a fixed order (the order consumers appear in the reverse topological walk).
"""

from __future__ import annotations

from collections.abc import Sequence

from scellis.autodiff.rules import VJP, Unsupported
from scellis.ir.function import Function, input_name, toposort
from scellis.ir.owners import Owners
from scellis.ops import DType, Node, Op, const
from scellis.ops.build import add, zeros


class AutodiffError(ValueError):
    """The gradient asked for cannot be built: the loss is not a scalar, an input is unknown, ..."""


def grad_name(name: str) -> str:
    return f"grad/{name}"


def grad(fn: Function, loss: str, wrt: Sequence[str], owners: Owners | None = None) -> Function:
    """`fn` plus an output `grad/<name>` for each input in `wrt`: d(loss)/d(input). With `owners` (which
    has `fn`'s), each node it adds -> the owners of the node whose vector-Jacobian product made it (a
    zero gradient: its input's)."""
    loss_node = _output(fn, loss)
    if loss_node.dtype is not DType.F32 or loss_node.shape != ():
        raise AutodiffError(f"{fn.name}: loss {loss!r} must be a float32 scalar, got {loss_node.type_str}")
    targets = {}
    for name in wrt:
        node = fn.input(name) if fn.has_input(name) else None
        if node is None or not node.dtype.is_float:
            raise AutodiffError(f"{fn.name}: cannot differentiate with respect to {name!r} (not a float input)")
        targets[id(node)] = node
    grads = _backward(loss_node, targets, owners)
    extra = tuple((grad_name(input_name(n)), grads.get(id(n)) or zeros(n.shape)) for n in targets.values())
    if owners is not None:
        for (_, g), n in zip(extra, targets.values(), strict=True):
            owners.claim([g], owners[n])
    return Function(fn.name, fn.inputs, fn.outputs + extra)


def _output(fn: Function, name: str) -> Node:
    try:
        return fn.output(name)
    except KeyError as err:
        raise AutodiffError(str(err)) from err


def _backward(loss: Node, targets: dict[int, Node], owners: Owners | None) -> dict[int, Node]:
    order = toposort([loss])
    wanted = set(targets.values())
    needs: set[Node] = set()  # nodes key by identity
    for node in order:
        if node in wanted or any(s in needs for s in node.src):
            needs.add(node)
    pending: dict[Node, list[Node]] = {loss: [const(1.0)]}
    found: dict[int, Node] = {}
    input_op = Op.INPUT  # a local: an enum member's lookup is slow in CPython 3.11
    for node in reversed(order):
        contributions = pending.pop(node, None)
        if contributions is None or node not in needs:
            continue
        g = contributions[0]
        for extra in contributions[1:]:
            g = add(g, extra)
        if node.op is input_op:
            found[id(node)] = g
            if owners is not None:
                owners.claim([g], owners[node])
            continue
        try:
            src_grads = VJP[node.op](node, g, tuple(s in needs for s in node.src))
        except Unsupported as err:
            raise AutodiffError(str(err)) from err
        if owners is not None:  # what the rule made (and the sum of the cotangents) is the node's owners'
            owners.claim([g, *src_grads], owners[node])
        for src, src_grad in zip(node.src, src_grads, strict=True):
            if src_grad is not None and src_grad.shape != src.shape:
                raise AutodiffError(f"the {node.op.value} rule gave a {src_grad.type_str} gradient for {src.type_str}")
            if src_grad is not None and src in needs:
                pending.setdefault(src, []).append(src_grad)
    return found
