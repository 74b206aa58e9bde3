"""Reverse-mode autodiff: IR function -> the same function with gradient outputs appended.

Expects a verified function whose `loss` output is a float32 scalar. Guarantees: gradients only
for the requested inputs, and no gradient work for anything those inputs do not influence (frozen
parameters, data); each gradient output has its input's shape; cotangents that meet at one node are
added in a fixed order (the order consumers appear in the reverse topological walk).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from scellis.autodiff.rules import VJP, Unsupported
from scellis.ir.function import Function, input_name, toposort
from scellis.ops import DType, Node, Op, const
from scellis.ops.build import add, zeros


class AutodiffError(ValueError):
    """The gradient asked for cannot be built: the loss is not a scalar, an input is unknown, ..."""


def grad_name(name: str) -> str:
    return f"grad/{name}"


@dataclass(frozen=True)
class Vjp:
    """One step of the reverse walk: the node whose cotangent was summed (`cotangent`), and what its
    rule gave its sources (`grads`, empty for an input). The nodes a step made are those its cotangent
    and grads reach that no earlier step, and no node of the function differentiated, holds: the Guide
    attributes them to the program node that `node` came from."""

    node: Node
    cotangent: Node
    grads: tuple[Node | None, ...]


def grad(fn: Function, loss: str, wrt: Sequence[str]) -> Function:
    """`fn` plus an output `grad/<name>` for each input in `wrt`: d(loss)/d(input)."""
    return grad_with_vjps(fn, loss, wrt)[0]


def grad_with_vjps(fn: Function, loss: str, wrt: Sequence[str]) -> tuple[Function, tuple[Vjp, ...]]:
    """`grad`, and the steps of its reverse walk in the order they ran."""
    loss_node = _output(fn, loss)
    if loss_node.dtype is not DType.F32 or loss_node.shape != ():
        raise AutodiffError(f"{fn.name}: loss {loss!r} must be a float32 scalar, got {loss_node.type_str}")
    targets = {}
    for name in wrt:
        node = fn.input(name) if fn.has_input(name) else None
        if node is None or not node.dtype.is_float:
            raise AutodiffError(f"{fn.name}: cannot differentiate with respect to {name!r} (not a float input)")
        targets[id(node)] = node
    grads, steps = _backward(loss_node, targets)
    extra = tuple((grad_name(input_name(n)), grads.get(id(n)) or zeros(n.shape)) for n in targets.values())
    return Function(fn.name, fn.inputs, fn.outputs + extra), steps


def _output(fn: Function, name: str) -> Node:
    try:
        return fn.output(name)
    except KeyError as err:
        raise AutodiffError(str(err)) from err


def _backward(loss: Node, targets: dict[int, Node]) -> tuple[dict[int, Node], tuple[Vjp, ...]]:
    order = toposort([loss])
    needs: set[int] = set()
    for node in order:
        if id(node) in targets or any(id(s) in needs for s in node.src):
            needs.add(id(node))
    pending: dict[int, list[Node]] = {id(loss): [const(1.0)]}
    found: dict[int, Node] = {}
    steps: list[Vjp] = []
    for node in reversed(order):
        contributions = pending.pop(id(node), None)
        if contributions is None or id(node) not in needs:
            continue
        g = contributions[0]
        for extra in contributions[1:]:
            g = add(g, extra)
        if node.op is Op.INPUT:
            found[id(node)] = g
            steps.append(Vjp(node, g, ()))
            continue
        try:
            src_grads = VJP[node.op](node, g, tuple(id(s) in needs for s in node.src))
        except Unsupported as err:
            raise AutodiffError(str(err)) from err
        steps.append(Vjp(node, g, tuple(src_grads)))
        for src, src_grad in zip(node.src, src_grads, strict=True):
            if src_grad is not None and src_grad.shape != src.shape:
                raise AutodiffError(f"the {node.op.value} rule gave a {src_grad.type_str} gradient for {src.type_str}")
            if src_grad is not None and id(src) in needs:
                pending.setdefault(id(src), []).append(src_grad)
    return found, tuple(steps)
