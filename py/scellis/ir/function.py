"""An IR function: named inputs, named outputs, and the nodes between them in one fixed order."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from scellis.ops import Node, Op, ShapeError
from scellis.ops.defs import InputArg, Role
from scellis.ops.node import RULES


class IRError(ValueError):
    """An IR function that breaks an invariant (what `verify` checks)."""


@dataclass(frozen=True)
class Function:
    """A pure function: `inputs` (INPUT nodes, each named once) to named `outputs`.

    `first`: nodes the outputs depend on, visited in this order before the outputs, so the canonical
    order (and so the kernel order) computes them first. It changes no value; empty unless a pass
    orders the work for memory (autodiff.checkpoint)."""

    name: str
    inputs: tuple[Node, ...]
    outputs: tuple[tuple[str, Node], ...]
    first: tuple[Node, ...] = ()

    def input(self, name: str) -> Node:
        node = self._inputs_by_name.get(name)
        if node is None:
            raise KeyError(f"{self.name} has no input {name!r}")
        return node

    def has_input(self, name: str) -> bool:
        return name in self._inputs_by_name

    def output(self, name: str) -> Node:
        node = self._outputs_by_name.get(name)
        if node is None:
            raise KeyError(f"{self.name} has no output {name!r}")
        return node

    @functools.cached_property
    def _inputs_by_name(self) -> dict[str, Node]:
        return {input_name(n): n for n in self.inputs}

    @functools.cached_property
    def _outputs_by_name(self) -> dict[str, Node]:
        return dict(self.outputs)

    def inputs_with(self, role: Role) -> tuple[Node, ...]:
        return tuple(n for n in self.inputs if input_role(n) is role)

    def nodes(self) -> list[Node]:
        """Every node the outputs depend on, plus all inputs, in the canonical order."""
        return list(self._order)

    @functools.cached_property
    def _order(self) -> tuple[Node, ...]:
        return tuple(toposort([*self.inputs, *self.first, *(node for _, node in self.outputs)]))


def input_name(node: Node) -> str:
    assert isinstance(node.arg, InputArg)
    return node.arg.name


def input_role(node: Node) -> Role:
    assert isinstance(node.arg, InputArg)
    return node.arg.role


def toposort(roots: list[Node]) -> list[Node]:
    """Nodes reachable from `roots`, each after its sources: depth-first, sources in order,
    roots in order. Iterative (Pyodide's stack is small) and deterministic."""
    order: list[Node] = []
    done: set[Node] = set()  # nodes compare by identity, so the set holds them by identity too
    emit, finish = order.append, done.add
    stack: list[tuple[Node, Iterator[Node]]] = []  # the nodes being visited, each with its sources to go
    for root in roots:
        if root in done:
            continue
        node, sources = root, iter(root.src)
        while True:
            for src in sources:
                if src in done:
                    continue
                if src.src:  # visit it: its sources first
                    stack.append((node, sources))
                    node, sources = src, iter(src.src)
                    break
                finish(src)  # a node without sources is emitted at once
                emit(src)
            else:  # every source is done: so is `node`; resume the node that reached it
                finish(node)
                emit(node)
                if not stack:
                    break
                node, sources = stack.pop()
    return order


def reached(roots: Iterable[Node]) -> set[Node]:
    """The nodes `roots` reach (themselves included), in no order: cheaper than `toposort`."""
    seen: set[Node] = set()
    stack = [*roots]
    while stack:
        node = stack.pop()
        if node not in seen:
            seen.add(node)
            stack.extend(node.src)
    return seen


def verify(fn: Function, types: bool = True) -> None:
    """Raise IRError unless: inputs are INPUT nodes with unique names, every INPUT reached is
    declared, output names are unique, the outputs depend on every node ordered `first`, and (with
    `types`) every node's type is what its op's rule infers. Nodes built with `make` are typed by
    construction, so `types=False` suffices for them."""
    names = [input_name(n) if n.op is Op.INPUT else "" for n in fn.inputs]
    if any(n.op is not Op.INPUT for n in fn.inputs):
        raise IRError(f"{fn.name}: a declared input is not an INPUT node")
    if len(set(names)) != len(names):
        raise IRError(f"{fn.name}: input names repeat: {sorted(n for n in names if names.count(n) > 1)}")
    out_names = [name for name, _ in fn.outputs]
    if len(set(out_names)) != len(out_names):
        raise IRError(f"{fn.name}: output names repeat")
    if fn.first:
        needed = reached(node for _, node in fn.outputs)
        if any(n not in needed for n in fn.first):
            raise IRError(f"{fn.name}: a node ordered first is not one the outputs depend on")
    declared, input_op, const_op = set(fn.inputs), Op.INPUT, Op.CONST  # locals: enum lookups are slow
    for node in fn.nodes():
        if node.op is input_op:
            if node not in declared:
                raise IRError(f"{fn.name}: input {input_name(node)!r} is used but not declared")
        elif types and node.op is not const_op:
            _check_type(fn, node)


def _check_type(fn: Function, node: Node) -> None:
    try:
        dtype, shape = RULES[node.op](node.arg, node.src)
    except ShapeError as err:
        raise IRError(f"{fn.name}: {node.op.value} node is ill-typed: {err}") from err
    if (dtype, shape) != (node.dtype, node.shape):
        raise IRError(f"{fn.name}: {node.op.value} node says {node.type_str}, its rule infers {dtype.short}{shape}")
