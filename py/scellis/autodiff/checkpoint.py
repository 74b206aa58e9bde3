"""Activation checkpointing: a gradient function -> the same gradients from fewer kept activations, the
others recomputed segment by segment in backward.

Expects the forward function, the gradient function `grad` built from it (the forward's nodes plus
`grad/<p>` outputs) and the loss's name. Guarantees: the same outputs, value for value. A recomputed
node is a fresh node with the original's op, argument and sources (or their copies), so it becomes a
kernel and buffer of its own computing the same values; a draw's copy draws the same bits (Philox is
a pure function of key, position, site and element index). The forward's own outputs (loss, metrics,
running statistics) keep their original nodes, so state is updated once; only backward reads move.

Policy. Activations are the computed nodes that depend on a batch input (data or labels). A cut point
is an activation that, once computed, is the only activation any later node still needs: the forward
passes through it as one tensor. The candidates are the cut points the backward reads: those are kept
anyway, so keeping one adds no kernel. Boundaries are the candidates that least bound the bytes of
activations the backward reads that are held at once: while a segment's backward runs, the boundaries
before it and what it recomputes (for the last segment, what its forward left). The search caps each
segment's bytes (at the heaviest piece no cut divides, and at total / k for k up to about 2 sqrt(c + 1)
with c candidates: about sqrt(c) segments win when activations are alike) and finds the lightest
boundaries under each cap by dynamic programming; there is no boundary when none beats keeping
everything (`segments`). Boundaries are kept; whatever the backward
reads inside a segment other than the last is recomputed from the segment's start (the last segment's
backward begins as soon as its forward ends: recomputing it would save nothing).
Draws, and what is computed from draws and parameters alone, are recomputed wherever the backward
reads them, in any segment: a draw costs about what reading a kept mask back costs.

Order. The result's `first` lists the forward's outputs, then the gradients, the parameter whose first
use comes latest first: the backward walks the segments from the loss back, so one segment's copies
are live at a time. `ordered_like` gives a function built from the result (the training step) the
same order, each output right after the last of those nodes it needs.
"""

from __future__ import annotations

import itertools
import math
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass

from scellis.autodiff.grad import grad_name
from scellis.ir.function import Function, input_name, input_role, toposort
from scellis.ir.owners import Owners
from scellis.ops import Node, Op
from scellis.ops.defs import BINARY, UNARY, Role

BATCH_ROLES = (Role.DATA, Role.LABEL)


@dataclass(frozen=True)
class Segments:
    """How a forward is cut: `order` is the loss's forward nodes in canonical order; `boundaries` are
    kept; `recomputed` holds the ids of the nodes whose backward reads go to copies."""

    order: tuple[Node, ...]
    boundaries: tuple[Node, ...]
    recomputed: frozenset[int]

    @property
    def count(self) -> int:
        return len(self.boundaries) + 1


def checkpoint(forward: Function, backward: Function, loss: str, owners: Owners | None = None) -> Function:
    """`backward` with its reads of recomputed activations moved to copies, ordered from the loss back
    (see the module docstring). With `owners`, a copy, and a backward node rebuilt to read copies, has
    its original's owners."""
    read = _read_by_backward(forward, backward)
    return _moved(forward, backward, _segments(forward, loss, read), read, owners)


def from_the_loss_back(
    forward: Function, backward: Function, loss: str, owners: Owners | None = None, *, pointwise: bool = True
) -> Function:
    """`backward` in the order checkpointing gives it, recomputing nothing but draws and what is cheaply
    computed from them (_redrawn: a dropout's mask and output): the forward, then each parameter's gradient
    from the loss back. A gradient (and, in the step, its update) then comes as soon as its layer's backward
    has run, so it need not wait, held, for the backward of every other layer; a mask is drawn again where
    the backward reads it, so it is not held from the forward to there (the same bits: Philox). Without
    `pointwise` (float16 storage, whose kept activations the forward rounds), only draws are recomputed."""
    read = _read_by_backward(forward, backward)
    order = tuple(toposort([forward.output(loss)]))
    batch, drawn = _dependence(order)
    again = _redrawn(order, batch, drawn, read, pointwise)
    return _moved(forward, backward, Segments(order, (), frozenset(again)), read, owners)


POINTWISE = UNARY | BINARY | {Op.CAST, Op.WHERE}


def _redrawn(order: tuple[Node, ...], batch: set[int], drawn: set[int], read: set[int], pointwise: bool) -> set[int]:
    """The draws, and the pointwise nodes computed from them and from what the backward keeps anyway (the
    nodes it reads, and whatever is no activation), with the pointwise steps between: a dropout's output
    from a kept softmax, say. Each is computed again where the backward reads it, so only what the
    backward reads anyway stays held. Without `pointwise`, only the draws."""
    free = set(drawn)  # computable again from draws and from what stays held anyway
    if not pointwise:
        return free
    for node in order:
        sources = [id(s) for s in node.src]
        if node.op in POINTWISE and all(s in free or s in read or s not in batch for s in sources):
            free.add(id(node))
    out = set(drawn)
    for node in order:
        if id(node) in free and any(id(s) in out for s in node.src):
            out.add(id(node))
    for node in reversed(order):  # and the steps from kept nodes into them (a dropout's scaling)
        if id(node) in out:
            out.update(id(s) for s in node.src if id(s) in free)
    return out


def _moved(forward: Function, backward: Function, cut: Segments, read: set[int], owners: Owners | None) -> Function:
    """`backward` reading copies of the recomputed nodes it reads (`cut`), ordered from the loss back."""
    copies = _copies(cut, read & cut.recomputed, owners)
    own = {id(n) for n in forward.nodes()}
    rebuilt: dict[int, Node] = {}

    def moved(node: Node) -> Node:
        return rebuilt.get(id(node), copies.get(id(node), node))

    for node in backward.nodes():
        if id(node) in own:
            continue
        src = tuple(moved(s) for s in node.src)
        if any(a is not b for a, b in zip(src, node.src, strict=True)):
            rebuilt[id(node)] = Node(node.op, node.dtype, node.shape, src, node.arg)
            if owners is not None:
                owners.keep(rebuilt[id(node)], node)
    kept = {name for name, _ in forward.outputs}
    outputs = tuple((name, node if name in kept else moved(node)) for name, node in backward.outputs)
    first = (*(node for _, node in forward.outputs), *_latest_first(forward, dict(outputs)))
    return Function(backward.name, backward.inputs, outputs, first)


def segments(forward: Function, backward: Function, loss: str) -> Segments:
    """Where `forward` is cut for `backward`, and what is recomputed (the policy: module docstring)."""
    return _segments(forward, loss, _read_by_backward(forward, backward))


def _segments(forward: Function, loss: str, read: set[int]) -> Segments:
    order = tuple(toposort([forward.output(loss)]))
    batch, drawn = _dependence(order)
    candidates = [n for n in _cut_points(order, batch) if id(n) in read]
    weights = [4 * n.size if id(n) in read and id(n) in batch else 0 for n in order]  # 4 bytes an element
    boundaries = _boundaries(order, candidates, weights)
    last, segment, recomputed = len(boundaries), 0, set(drawn)
    ends = {id(b) for b in boundaries}
    for node in order:
        if id(node) in ends:
            segment += 1
        elif segment < last and id(node) in batch:
            recomputed.add(id(node))
    return Segments(order, tuple(boundaries), frozenset(recomputed))


def ordered_like(fn: Function, like: Function) -> Function:
    """`fn`, built from `like` (a training step from its gradient function), ordered as `like`: `first` lists
    the outputs that need no node of `like.first`, then each node of `like.first`, each followed by the
    outputs for which it is the last of those nodes they need."""
    latest = _latest_needed([node for _, node in fn.outputs], {n: i for i, n in enumerate(like.first)})
    after: dict[int, list[Node]] = {}
    for _, node in fn.outputs:
        after.setdefault(latest[node], []).append(node)
    first = [*after.get(-1, [])]
    for i, node in enumerate(like.first):
        first += [node, *after.get(i, [])]
    return Function(fn.name, fn.inputs, fn.outputs, tuple(first))


def _latest_needed(roots: list[Node], rank: dict[Node, int]) -> dict[Node, int]:
    """For each node `roots` reach without passing a ranked node: the highest rank among the ranked nodes
    it needs, -1 where it needs none. A ranked node counts as its own rank, whatever its sources need, so
    the walk stops there: below the gradients of a step, the backward is not walked again. Depth-first and
    iterative, as `toposort` (Pyodide's stack is small); a node's value is taken once its sources have theirs."""
    latest: dict[Node, int] = {}  # nodes key by identity
    stack: list[tuple[Node, Iterator[Node]]] = []  # the nodes being visited, each with its sources to go
    for root in roots:
        if root in latest:
            continue
        if root in rank:
            latest[root] = rank[root]
            continue
        node, sources = root, iter(root.src)
        while True:
            for src in sources:
                if src in latest:
                    continue
                at = rank.get(src, -1)
                if at >= 0 or not src.src:  # its value needs no walk
                    latest[src] = at
                    continue
                stack.append((node, sources))
                node, sources = src, iter(src.src)
                break
            else:  # every source has its value: the latest of theirs
                at = -1
                for s in node.src:  # compared in a loop: max() per source costs a third of the walk
                    if latest[s] > at:  # noqa: PLR1730
                        at = latest[s]
                latest[node] = at
                if not stack:
                    break
                node, sources = stack.pop()
    return latest


def _dependence(order: tuple[Node, ...]) -> tuple[set[int], set[int]]:
    """The activations (computed nodes that depend on a batch input), and the nodes computed from draws
    and parameters alone."""
    batch: set[int] = set()
    drawn: set[int] = set()
    for node in order:
        if node.op is Op.INPUT:
            if input_role(node) in BATCH_ROLES:
                batch.add(id(node))
        elif any(id(s) in batch for s in node.src):
            batch.add(id(node))
        elif node.op is Op.RANDOM or any(id(s) in drawn for s in node.src):
            drawn.add(id(node))
    return {id(n) for n in order if id(n) in batch and n.op is not Op.INPUT}, drawn


def _read_by_backward(forward: Function, backward: Function) -> set[int]:
    """The forward nodes that backward nodes read, and forward nodes that are gradients themselves."""
    own = {id(n) for n in forward.nodes()}
    read = {id(s) for n in backward.nodes() if id(n) not in own for s in n.src if id(s) in own}
    kept = {name for name, _ in forward.outputs}
    return read | {id(n) for name, n in backward.outputs if name not in kept and id(n) in own}


def _cut_points(order: tuple[Node, ...], batch: set[int]) -> list[Node]:
    """Activations that, once computed, are the only activation a later node still needs."""
    last: dict[int, int] = {}
    for i, node in enumerate(order):
        for s in node.src:
            last[id(s)] = i
    change = [0] * (len(order) + 1)
    for i, node in enumerate(order):
        if id(node) in batch and last.get(id(node), i) > i:
            change[i] += 1
            change[last[id(node)]] -= 1
    out, live = [], 0
    for i, node in enumerate(order):
        live += change[i]
        if live == 1 and id(node) in batch and last.get(id(node), i) > i:
            out.append(node)
    return out


def _boundaries(order: tuple[Node, ...], candidates: list[Node], weights: list[int]) -> list[Node]:
    """The boundaries of least cost (`_cost`), searched by capping each segment's weight and keeping the
    lightest boundaries under each cap: at the heaviest piece no cut divides, and at total / k for k from
    2 to about 2 sqrt(c + 1) (growing by a quarter each time) where that is no less; none when no cut beats
    keeping everything."""
    position = {id(n): i for i, n in enumerate(order)}
    at = [position[id(c)] for c in candidates]
    before = list(itertools.accumulate(weights, initial=0))
    best_cost, best = before[-1], []
    ends = [before[p] for p in at] + [before[-1]]
    starts = [0] + [before[p + 1] for p in at]
    least = max(end - start for start, end in zip(starts, ends, strict=True))  # the heaviest piece: no cut
    caps: list[float] = [least]
    k, most = 2, 2 * round(math.sqrt(len(at) + 1))
    while k <= most:
        caps.append(before[-1] / k)
        k = max(k + 1, k * 5 // 4)
    for cap in caps:
        chosen = _lightest(cap, at, before) if cap >= least else None
        if chosen is not None and _cost(chosen, at, before) < best_cost:
            best_cost, best = _cost(chosen, at, before), chosen
    return [candidates[i] for i in best]


def _cost(chosen: list[int], at: list[int], before: list[int]) -> int:
    """The most weight held at once: while a segment's backward runs, the boundaries before it and what
    it recomputes (for the last segment, what its forward left)."""
    starts = [0] + [before[at[i] + 1] for i in chosen]
    ends = [before[at[i]] for i in chosen] + [before[-1]]
    kept = [0, *itertools.accumulate(start - end for start, end in zip(starts[1:], ends, strict=False))]
    return max(held + end - start for held, start, end in zip(kept, starts, ends, strict=True))


def _lightest(cap: float, at: list[int], before: list[int]) -> list[int] | None:
    """The candidates (indices into `at`, their positions) of least total weight such that no segment
    between them weighs more than `cap` inside (a boundary's own weight is kept, not inside); None when
    no choice does. Dynamic programming over the candidates with a sliding-window minimum."""
    inner_start = [before[p + 1] for p in at]
    cost: list[int] = []
    parent: list[int] = []
    window: deque[int] = deque([-1])  # -1: the forward's start; costs increase along the window

    def cost_of(i: int) -> int:
        return 0 if i < 0 else cost[i]

    for j in range(len(at) + 1):
        end = before[at[j]] if j < len(at) else before[-1]
        while window and end - (inner_start[window[0]] if window[0] >= 0 else 0) > cap:
            window.popleft()
        if not window:
            return None
        if j == len(at):
            break
        cost.append(cost_of(window[0]) + before[at[j] + 1] - before[at[j]])
        parent.append(window[0])
        while window and cost_of(window[-1]) >= cost[j]:
            window.pop()
        window.append(j)
    chosen, i = [], window[0]
    while i >= 0:
        chosen.append(i)
        i = parent[i]
    return chosen[::-1]


def _copies(cut: Segments, wanted: set[int], owners: Owners | None) -> dict[int, Node]:
    """A fresh copy of every wanted node and of the recomputed nodes they are computed from, each copy
    reading copies where its original reads a recomputed node (a boundary, a parameter or an input is
    read as it is)."""
    wanted = set(wanted)
    for node in reversed(cut.order):
        if id(node) in wanted:
            wanted.update(id(s) for s in node.src if id(s) in cut.recomputed)
    copies: dict[int, Node] = {}
    for node in cut.order:
        if id(node) in wanted:
            src = tuple(copies.get(id(s), s) for s in node.src)
            copies[id(node)] = Node(node.op, node.dtype, node.shape, src, node.arg)
            if owners is not None:
                owners.keep(copies[id(node)], node)
    return copies


def _latest_first(forward: Function, outputs: dict[str, Node]) -> list[Node]:
    """The gradient outputs, the parameter whose first use in `forward` comes latest first."""
    first_use: dict[Node, int] = {}
    for i, node in enumerate(forward.nodes()):
        for s in node.src:
            first_use.setdefault(s, i)
    params = [p for p in forward.inputs if grad_name(input_name(p)) in outputs]
    params.sort(key=lambda p: -first_use.get(p, len(first_use)))
    return [outputs[grad_name(input_name(p))] for p in params]
