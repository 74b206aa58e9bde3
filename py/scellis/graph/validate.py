"""Validation: untrusted program JSON -> a `ValidProgram`, or a `ProgramError` listing every problem.

Expects anything (it is the boundary for files, links and the editor). Guarantees: the only exception
it raises is ProgramError; each issue names the node id, the port or field, and the reason; a valid
program's nodes come in a topological order that keeps the file's order where the graph allows.
"""

from __future__ import annotations

import heapq
import math
import re
from dataclasses import dataclass, field
from typing import Any

from scellis.graph.building import Builder, Mode
from scellis.graph.catalog import CATALOG, OpSpec
from scellis.graph.errors import Issue, ProgramError, show
from scellis.graph.params import REQUIRED, check
from scellis.graph.rules import NonFinite, Plateau, check_metrics
from scellis.graph.settings import Loop, Memory, Optimizer, read_loop, read_memory, read_optimizer
from scellis.ops import DType, Node, ShapeError

FORMAT = "scellis.program/1"
ID = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]{0,63}\Z")
TOP_KEYS = ("format", "name", "nodes", "edges", "loss", "metrics", "optimizer", "loop", "memory", "weights")
WEIGHTS_KEYS = ("file", "sha256", "bytes")
SHA256 = re.compile(r"[0-9a-f]{64}\Z")
NODE_KEYS = ("id", "op", "params", "label", "position")
PORT_DTYPES = {"float": DType.F32, "int": DType.I32, "bool": DType.BOOL}


@dataclass(frozen=True)
class ValidNode:
    id: str
    op: str
    params: dict[str, Any]  # every parameter, defaults filled in, values normalised
    inputs: dict[str, tuple[str, ...]]  # port -> source node ids, in edge order


@dataclass(frozen=True)
class Weights:
    """The pretrained weights file a program's `pretrained` parameters read, pinned by content: its name (for
    people), its SHA-256 and its size. A run binds exactly this file or refuses to start."""

    file: str
    sha256: str
    bytes: int


@dataclass(frozen=True)
class Built:
    """Every node's IR as checking built it: in training mode, at the program's batch size, batches streamed
    (the builder's batch, mode and examples say so). Nodes are immutable and the builder is done: the typed
    IR stage takes both as they are when it asks for that same build."""

    values: dict[str, Node]
    builder: Builder


@dataclass(frozen=True)
class ValidProgram:
    name: str
    nodes: tuple[ValidNode, ...]  # topological order
    loss: str | None  # None: the program trains nothing (a simulation, an analysis): its step runs the graph
    metrics: tuple[str, ...]
    optimizer: Optimizer
    loop: Loop
    source: dict[str, Any]  # the JSON as given
    memory: Memory
    built: Built | None = field(default=None, compare=False, repr=False)  # what checking the types built
    weights: Weights | None = None  # the file pretrained parameters read, where any do

    @property
    def trains(self) -> bool:
        return self.loss is not None

    @property
    def has_data(self) -> bool:
        return any(n.op == "input" for n in self.nodes)

    def node(self, node_id: str) -> ValidNode:
        return next(n for n in self.nodes if n.id == node_id)


def validate(data: Any) -> ValidProgram:
    issues: list[Issue] = []
    if not isinstance(data, dict):
        raise ProgramError([Issue("", f"a program is a JSON object, got {type(data).__name__}")])
    _check_top(data, issues)
    nodes, present = _read_nodes(data.get("nodes"), issues)
    inputs, cut = _read_edges(data.get("edges", []), nodes, present, issues)
    _check_arity(nodes, inputs, cut, issues)
    order = _topological(nodes, inputs, issues)
    broken = {i.node for i in issues if i.node is not None} | {nid for nid, _ in cut}
    loop = read_loop(data.get("loop", {}), "loop", issues)
    optimizer = read_optimizer(data.get("optimizer", {"kind": "adam"}), "optimizer", issues)
    memory = read_memory(data.get("memory", {}), "memory", issues)
    valid = tuple(ValidNode(n, nodes[n][0].name, nodes[n][1], inputs.get(n, {})) for n in order)
    outputs, ctx = _check_types(valid, broken, loop.batch_size, issues)
    readable = isinstance(data.get("nodes"), list) and bool(data["nodes"])
    loss, metrics = _check_objectives(data, outputs, present if readable else None, issues)
    check_metrics(loop.rules, metrics, issues)
    if loss is None:
        _check_untrained(data, ctx, loop, metrics, issues)
    _check_steps(valid, loop, issues)
    weights = _read_weights(data.get("weights"), valid, issues)
    if issues:
        raise ProgramError(issues)
    name = data.get("name", "program")
    return ValidProgram(name, valid, loss, metrics, optimizer, loop, data, memory, Built(outputs, ctx), weights)


def _check_top(data: dict[str, Any], issues: list[Issue]) -> None:
    if data.get("format") != FORMAT:
        issues.append(Issue("format", f"must be {FORMAT!r}, got {show(data.get('format'))}"))
    for key in data:
        if key not in TOP_KEYS:
            issues.append(Issue(str(key), f"unknown field (known: {', '.join(TOP_KEYS)})"))
    if not isinstance(data.get("name", "program"), str):
        issues.append(Issue("name", "must be a string"))


def _read_weights(raw: Any, nodes: tuple[ValidNode, ...], issues: list[Issue]) -> Weights | None:
    """The program's weights file, checked; every pretrained parameter needs one, and one is named only
    where some parameter reads it."""
    readers = [n for n in nodes if n.op == "pretrained_linear" or n.params.get("init") == "pretrained"]
    if raw is None:
        for n in readers:
            field = "init" if n.op == "parameter" else "tensor"
            issues.append(
                Issue(f"{n.id}.params.{field}", "pretrained, but the program names no weights file", node=n.id)
            )
        return None
    if not isinstance(raw, dict):
        issues.append(Issue("weights", f"must be an object with {', '.join(WEIGHTS_KEYS)}, got {show(raw)}"))
        return None
    wrong = [k for k in raw if k not in WEIGHTS_KEYS]
    if wrong:
        issues.append(Issue(f"weights.{wrong[0]}", f"unknown field (known: {', '.join(WEIGHTS_KEYS)})"))
    file, digest, size = raw.get("file"), raw.get("sha256"), raw.get("bytes")
    count = len(issues)
    if not (isinstance(file, str) and 0 < len(file) <= 256 and file.isprintable()):
        issues.append(
            Issue("weights.file", f"must be the file's name (1 to 256 printable characters), got {show(file)}")
        )
    if not (isinstance(digest, str) and SHA256.match(digest)):
        issues.append(Issue("weights.sha256", f"must be 64 lowercase hexadecimal digits, got {show(digest)}"))
    if not (isinstance(size, int) and not isinstance(size, bool) and size > 0):
        issues.append(
            Issue("weights.bytes", f"must be the file's size in bytes (a positive integer), got {show(size)}")
        )
    if not readers:
        issues.append(Issue("weights", "no parameter is pretrained: a weights file no parameter reads pins nothing"))
    if len(issues) > count:
        return None
    assert isinstance(file, str) and isinstance(digest, str) and isinstance(size, int)
    return Weights(file, digest, size)


def _read_nodes(raw: Any, issues: list[Issue]) -> tuple[dict[str, tuple[OpSpec, dict[str, Any]]], set[str]]:
    """id -> (op spec, checked params) for every node whose id and op are usable, and the ids of every
    node the file holds (usable or not: edges to an unusable node repeat its problem, so they are not
    reported again)."""
    if not isinstance(raw, list) or not raw:
        issues.append(Issue("nodes", "must be a non-empty list of nodes"))
        return {}, set()
    nodes: dict[str, tuple[OpSpec, dict[str, Any]]] = {}
    present: set[str] = set()
    for i, node in enumerate(raw):
        path = f"nodes[{i}]"
        if not isinstance(node, dict):
            issues.append(Issue(path, f"a node is an object, got {type(node).__name__}"))
            continue
        nid = node.get("id")
        if isinstance(nid, str):
            present.add(nid)
        if not isinstance(nid, str) or not ID.match(nid):
            issues.append(
                Issue(
                    f"{path}.id",
                    f"must be a name of letters, digits, _ or - (not starting with a digit), got {show(nid)}",
                )
            )
            continue
        if nid in nodes:
            issues.append(Issue(f"{path}.id", "is used by another node", node=nid))
            continue
        for key in node:
            if key not in NODE_KEYS:
                issues.append(Issue(f"{path}.{key}", f"unknown field (known: {', '.join(NODE_KEYS)})", node=nid))
        _check_editor_fields(node, nid, path, issues)
        op = node.get("op")
        spec = CATALOG.get(op) if isinstance(op, str) else None
        if spec is None:
            issues.append(Issue(f"{path}.op", f"unknown op {show(op)}", node=nid))
            continue
        nodes[nid] = (spec, _read_params(spec, node.get("params", {}), nid, path, issues))
    return nodes, present


def _check_editor_fields(node: dict[str, Any], nid: str, path: str, issues: list[Issue]) -> None:
    """`label` (text shown on the node) and `position` ({"x", "y"} on the canvas) belong to the editor."""
    if "label" in node and not isinstance(node["label"], str):
        issues.append(Issue(f"{path}.label", f"must be a string, got {show(node['label'])}", node=nid))
    position = node.get("position", {"x": 0, "y": 0})
    if not (
        isinstance(position, dict)
        and set(position) == {"x", "y"}
        and all(isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) for v in position.values())
    ):
        issues.append(
            Issue(f"{path}.position", f'must be {{"x": number, "y": number}}, got {show(position)}', node=nid)
        )


def _read_params(spec: OpSpec, raw: Any, nid: str, path: str, issues: list[Issue]) -> dict[str, Any]:
    if not isinstance(raw, dict):
        issues.append(Issue(f"{path}.params", "must be an object", node=nid))
        return {}
    known = {p.name: p for p in spec.params}
    for key in raw:
        if key not in known:
            names = ", ".join(known) or "none"
            issues.append(
                Issue(f"{path}.params.{key}", f"{spec.name} has no parameter {key!r} (it has: {names})", node=nid)
            )
    values: dict[str, Any] = {}
    for p in spec.params:
        if p.name not in raw:
            if p.default is REQUIRED:
                issues.append(Issue(f"{path}.params.{p.name}", f"{spec.name} needs {p.name!r}", node=nid))
            values[p.name] = p.default if p.default in (REQUIRED, None) else check(p, p.default)[0]
            continue
        value, error = check(p, raw[p.name])
        if error:
            issues.append(Issue(f"{path}.params.{p.name}", error, node=nid))
        values[p.name] = value
    return values


def _endpoint(raw: Any, path: str, issues: list[Issue]) -> tuple[str, str] | None:
    if not isinstance(raw, dict) or not isinstance(raw.get("node"), str) or not isinstance(raw.get("port"), str):
        issues.append(Issue(path, 'must be {"node": <node id>, "port": <port name>}'))
        return None
    return raw["node"], raw["port"]


Inputs = dict[str, dict[str, tuple[str, ...]]]  # node id -> port -> source node ids, in edge order
Cut = list[tuple[str, str]]  # (node id, port) of the edges that reach a good port from a broken source


def _read_edges(
    raw: Any, nodes: dict[str, tuple[OpSpec, dict[str, Any]]], present: set[str], issues: list[Issue]
) -> tuple[Inputs, Cut]:
    """The usable edges, and the ports that an unusable edge reaches: those count as connected (their
    edge's problem is reported once) and their node is not type-checked (its input is unknown)."""
    if not isinstance(raw, list):
        issues.append(Issue("edges", "must be a list of edges"))
        return {}, []
    inputs: Inputs = {}
    cut: Cut = []
    for i, edge in enumerate(raw):
        path = f"edges[{i}]"
        if not isinstance(edge, dict) or set(edge) != {"from", "to"}:
            issues.append(Issue(path, 'an edge is {"from": {"node": ..., "port": ...}, "to": {...}} and nothing else'))
            continue
        src = _endpoint(edge["from"], f"{path}.from", issues)
        dst = _endpoint(edge["to"], f"{path}.to", issues)
        src_ok = src is not None and _source_ok(src, nodes, present, path, issues)
        dst_ok = dst is not None and _target_ok(dst, nodes, present, path, issues)
        if dst is not None and dst_ok:
            if src is not None and src_ok:
                ports = inputs.setdefault(dst[0], {})
                ports[dst[1]] = (*ports.get(dst[1], ()), src[0])
            else:
                cut.append(dst)
    return inputs, cut


def _source_ok(src: tuple[str, str], nodes: dict[str, Any], present: set[str], path: str, issues: list[Issue]) -> bool:
    nid, port = src
    if nid not in present:
        issues.append(Issue(f"{path}.from.node", f"dangling edge: there is no node {nid!r}"))
    elif nid in nodes and port != "out":
        issues.append(Issue(f"{path}.from.port", f"{nodes[nid][0].name} has one output port, 'out'", nid, port))
    return nid in nodes and port == "out"


def _target_ok(dst: tuple[str, str], nodes: dict[str, Any], present: set[str], path: str, issues: list[Issue]) -> bool:
    nid, port = dst
    if nid not in present:
        issues.append(Issue(f"{path}.to.node", f"dangling edge: there is no node {nid!r}"))
        return False
    if nid not in nodes:
        return False  # the node's own problem (its id or op) is reported already
    spec = nodes[nid][0]
    if port not in {p.name for p in spec.inputs}:
        names = ", ".join(p.name for p in spec.inputs) or "none"
        issues.append(Issue(f"{path}.to.port", f"{spec.name} has no input port {port!r} (it has: {names})", nid, port))
        return False
    return True


def _check_arity(nodes: dict[str, Any], inputs: Inputs, cut: Cut, issues: list[Issue]) -> None:
    for nid, (spec, _) in nodes.items():
        for port in spec.inputs:
            count = len(inputs.get(nid, {}).get(port.name, ())) + cut.count((nid, port.name))
            if count == 0:
                issues.append(Issue("edges", f"input {port.name!r} of {spec.name} is not connected", nid, port.name))
            elif count > 1 and not port.multiple:
                issues.append(
                    Issue("edges", f"input {port.name!r} takes one edge, {count} are connected", nid, port.name)
                )


def _topological(nodes: dict[str, Any], inputs: Inputs, issues: list[Issue]) -> list[str]:
    """Kahn's algorithm, ready nodes taken in file order; nodes left over are on or behind a cycle.
    Those on a cycle are reported; those only behind one are left out without a word (no cascade)."""
    position = {nid: i for i, nid in enumerate(nodes)}
    users: dict[str, list[str]] = {nid: [] for nid in nodes}
    waiting = dict.fromkeys(nodes, 0)
    for nid, ports in inputs.items():
        for sources in ports.values():
            for src in sources:
                users[src].append(nid)
                waiting[nid] += 1
    ready = [(position[n], n) for n, w in waiting.items() if w == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        _, nid = heapq.heappop(ready)
        order.append(nid)
        for user in users[nid]:
            waiting[user] -= 1
            if waiting[user] == 0:
                heapq.heappush(ready, (position[user], user))
    stuck = [n for n in nodes if waiting[n] > 0]
    cycles = [sorted(group, key=position.__getitem__) for group in _cycles(stuck, users)]
    for group in sorted(cycles, key=lambda g: position[g[0]]):
        for nid in group:
            if len(group) == 1:
                reason = "is its own input (a cycle): a program must be acyclic"
            else:
                reason = f"is part of a cycle through {', '.join(map(repr, group))}: a program must be acyclic"
            issues.append(Issue("edges", reason, nid))
    return order


def _cycles(stuck: list[str], users: dict[str, list[str]]) -> list[list[str]]:
    """The strongly connected components of the stuck nodes that hold a cycle (Tarjan, iteratively)."""
    inside = set(stuck)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(nid: str) -> None:
        index[nid] = low[nid] = len(index)
        stack.append(nid)
        on_stack.add(nid)
        work.append((nid, iter(users[nid])))

    for root in stuck:
        if root in index:
            continue
        work: list[tuple[str, Any]] = []
        visit(root)
        while work:
            nid, successors = work[-1]
            for nxt in successors:
                if nxt not in inside:
                    continue
                if nxt not in index:
                    visit(nxt)
                    break
                if nxt in on_stack:
                    low[nid] = min(low[nid], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[nid])
                if low[nid] == index[nid]:
                    group: list[str] = []
                    while not group or group[-1] != nid:
                        group.append(stack.pop())
                        on_stack.discard(group[-1])
                    if len(group) > 1 or nid in users[nid]:
                        groups.append(group)
    return groups


def build_node(ctx: Builder, spec: OpSpec, node: ValidNode, values: dict[str, Node]) -> Node:
    """The IR of one node, given its sources' IR; ShapeError carries the program port when known."""
    x: dict[str, Any] = {}
    for port in spec.inputs:
        sources = [values[s] for s in node.inputs[port.name]]
        for src in sources:
            want = PORT_DTYPES.get(port.kind)
            if want is not None and src.dtype is not want:
                raise ShapeError(f"expects {port.kind} ({want.value}), got {src.dtype.value}", spec.inputs.index(port))
        x[port.name] = sources if port.multiple else sources[0]
    return spec.build(ctx, node.id, node.params, x)


def _check_types(
    nodes: tuple[ValidNode, ...], broken: set[str], batch: int, issues: list[Issue]
) -> tuple[dict[str, Node], Builder]:
    ctx = Builder(batch, Mode.TRAIN)
    values: dict[str, Node] = {}
    for node in nodes:
        sources = [s for group in node.inputs.values() for s in group]
        if node.id in broken or any(s not in values for s in sources):
            continue  # its own problems are reported already, or a source failed: no cascade
        spec = CATALOG[node.op]
        try:
            values[node.id] = build_node(ctx, spec, node, values)
        except ShapeError as err:
            issues.append(Issue("nodes", str(err), node.id, _port_name(spec, err.port)))
    return values, ctx


def _port_name(spec: OpSpec, index: int | None) -> str | None:
    """The program port of an IR input index; the inputs of a port taking several edges share its name."""
    if index is None or not spec.inputs:
        return None
    if index >= len(spec.inputs) - 1 and spec.inputs[-1].multiple:
        return spec.inputs[-1].name
    return spec.inputs[index].name if index < len(spec.inputs) else None


def _check_objectives(
    data: dict[str, Any], outputs: dict[str, Node], present: set[str] | None, issues: list[Issue]
) -> tuple[str | None, tuple[str, ...]]:
    """The loss (None: the program trains nothing) and the metrics: float scalars of the program (a broken
    node's are not checked again; `present` is None when the node list itself is unreadable: then no name
    can be checked)."""
    loss = data.get("loss")
    metrics = data.get("metrics", [])
    if not isinstance(metrics, list):
        issues.append(Issue("metrics", "must be a list of node ids"))
        metrics = []
    named = [("loss", loss)] if loss is not None else []
    for path, nid in [*named, *((f"metrics[{i}]", m) for i, m in enumerate(metrics))]:
        if not isinstance(nid, str) or (present is not None and nid not in present):
            issues.append(Issue(path, f"must name a node of the program, got {show(nid)}"))
        elif nid in outputs and (outputs[nid].shape != () or not outputs[nid].dtype.is_float):
            issues.append(Issue(path, f"must be a float scalar, but it is {outputs[nid].type_str}", nid))
    if isinstance(loss, str) and loss in metrics:
        issues.append(Issue("metrics", "the loss is reported anyway; do not list it as a metric", loss))
    names = [m for m in metrics if isinstance(m, str)]
    if len(set(names)) != len(names):
        issues.append(Issue("metrics", "lists a node twice"))
    if loss is None:
        return None, tuple(names)
    return (loss if isinstance(loss, str) else ""), tuple(names)


def _check_untrained(
    data: dict[str, Any], ctx: Builder, loop: Loop, metrics: tuple[str, ...], issues: list[Issue]
) -> None:
    """A program without a loss (a simulation, an analysis) trains nothing: it has no optimizer, no
    trainable parameter and no rule about the loss or gradients, and it reports results or carries state."""
    if "optimizer" in data:
        issues.append(Issue("optimizer", "the program has no loss, so nothing is trained: remove the optimizer"))
    for node_id in dict.fromkeys(s.node_id for s in ctx.params if s.trainable):
        issues.append(
            Issue(
                "nodes",
                "its parameters are trainable, but the program has no loss to train them: set trainable "
                "to false, or name a loss",
                node_id,
            )
        )
    for i, rule in enumerate(loop.rules):
        if isinstance(rule.when, Plateau) and rule.when.metric == "loss":
            issues.append(Issue(f"loop.rules[{i}]", "watches the loss, but the program has no loss"))
        if isinstance(rule.when, NonFinite):
            issues.append(Issue(f"loop.rules[{i}]", "watches the loss or gradients, but the program has no loss"))
    if not metrics and not ctx.state_updates:
        issues.append(
            Issue(
                "metrics",
                "a program without a loss reports its results here (or carries state from step to "
                "step with update nodes): list at least one node",
            )
        )


def _check_steps(nodes: tuple[ValidNode, ...], loop: Loop, issues: list[Issue]) -> None:
    """A program with input nodes takes one step per batch of its data; one without runs `loop.steps`
    steps an epoch (1 unless given)."""
    if loop.steps is not None and any(n.op == "input" for n in nodes):
        issues.append(
            Issue(
                "loop.steps", "a program with input nodes runs one step per batch of its training split: remove steps"
            )
        )
