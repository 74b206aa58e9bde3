"""Owners (beside the IR): which program nodes each IR node comes from, recorded by the stages as they make
the nodes (the builder, autodiff, the optimizer and the rewrites after them), for the Guide's links
(scellis.provenance). Recording adds no node and changes none.

The rules. A forward node belongs to the program node whose builder made it: what that node's value and
its states' updates reach beyond what earlier program nodes reached; what none reaches is the loop's, and
so is what loss scaling adds to the loss. A gradient node belongs to the owners of the forward node whose
vector-Jacobian product made it (a zero gradient: its parameter's). An optimizer node belongs to the
owners of the outputs (updated parameters and their state) that reach it, except that whatever the
loop's outputs need (the learning rate, the counters, the loss scale, the clipping norm) is the loop's.
A rewritten node (a recomputed copy, a float16 cast or input) keeps its original's owners. Constants are
shared by every function, so none is a node's own: the Guide gives them their readers' owners, and a
constant program node's (recorded as `constant`).
"""

from __future__ import annotations

from collections.abc import Iterable

from scellis.ops import Node, Op

LOOP = "loop"  # the owner of what the loop program adds, beside the program's node ids
NONE: frozenset[str] = frozenset()


class Owners:
    """IR node -> its owners (program node ids, or LOOP), keyed by node identity. It holds each node it
    records, so no recorded node is freed and its identity taken by another while the table lives. Also
    the program node of each parameter and state (by name) and of the loss, which name outputs' owners."""

    def __init__(self) -> None:
        self._of: dict[Node, frozenset[str]] = {}
        self._reached: list[list[tuple[str, Node]]] = []  # outputs `claim_by_reach` has yet to walk from
        self.slots: dict[str, str] = {}  # each parameter's and state's name -> its program node
        self.loss = ""  # the loss's program node ("" when the program has none)

    def _settle(self) -> None:
        """Claim what `claim_by_reach` holds (each method that reads or writes the table calls this first)."""
        while self._reached:
            self._reach(self._reached.pop(0))

    def __contains__(self, node: Node) -> bool:
        if self._reached:
            self._settle()
        return node in self._of

    def __getitem__(self, node: Node) -> frozenset[str]:
        """`node`'s owners (none where it has no record)."""
        if self._reached:
            self._settle()
        return self._of.get(node, NONE)

    def claim(self, roots: Iterable[Node | None], owners: frozenset[str]) -> None:
        """`owners` for every node `roots` reach without passing a node that has owners already
        (constants are no node's own; a root None, no node, is passed over). What a recorded node reaches is
        recorded, so the walk stops there."""
        if self._reached:
            self._settle()
        of, constant = self._of, Op.CONST  # a local: an enum member's lookup is slow in CPython 3.11
        stack = [*roots]
        while stack:
            node = stack.pop()
            if node is None or node in of or node.op is constant:
                continue
            of[node] = owners
            stack.extend(node.src)

    def constant(self, node: Node, owner: str) -> None:
        """The value of the constant program node `owner`, a constant: `owner` is one of its owners."""
        self._of[node] = self[node] | {owner}

    def keep(self, new: Node, old: Node) -> None:
        """`new`, a rewrite of `old` (a copy, a cast of it, its float16 input), has `old`'s owners."""
        if old in self:
            self._of[new] = self._of[old]

    def output(self, name: str) -> str:
        """The owner of a step's output: `loss`, `metric/<id>`, `state/<statistic>`, `param/<p>` and
        `state/opt.<kind>/<p>` (a master copy too): their program node; the rest (the learning rate, the
        counters, the loss scale, the clipping norm): the loop."""
        kind, _, rest = name.partition("/")
        if name == "loss":
            return self.loss
        if kind == "metric":
            return rest
        if kind == "state" and rest not in self.slots:
            rest = rest.partition("/")[2]  # opt.<kind>/<p>
        return self.slots.get(rest, LOOP) if kind in ("param", "state") else LOOP

    def claim_by_reach(self, outputs: Iterable[tuple[str, Node]]) -> None:
        """Each node the `outputs` reach without passing a node recorded before -> LOOP where a loop output
        reaches it, else the owners (`output`) of the outputs that reach it. The walk waits for the table's
        next use (every method walks what waits first, so it claims what it would claim now): compiling a
        program that neither stores float16 nor scales its loss does not pay for it; its Guide does."""
        self._reached.append(list(outputs))

    def _reach(self, outputs: list[tuple[str, Node]]) -> None:
        loop = frozenset({LOOP})
        alone: dict[str, frozenset[str]] = {LOOP: loop}  # one frozenset an owner, shared by its nodes
        found: dict[Node, frozenset[str] | set[str]] = {}  # what this claims -> its owners so far
        before, constant = self._of, Op.CONST
        for name, root in outputs:
            owner = self.output(name)
            single = alone.setdefault(owner, frozenset({owner}))
            stack = [root]
            while stack:  # a node that has `owner` (or LOOP) already passed it to all it reaches
                node = stack.pop()
                if node in before:
                    continue
                had = found.get(node)
                if had is None:
                    if node.op is constant:
                        continue
                    found[node] = single
                elif owner in had or had is loop:
                    continue
                elif owner == LOOP:
                    found[node] = loop
                elif isinstance(had, set):
                    had.add(owner)
                else:
                    found[node] = {*had, owner}
                stack.extend(node.src)
        before.update((node, who if isinstance(who, frozenset) else frozenset(who)) for node, who in found.items())
