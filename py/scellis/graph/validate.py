"""Validation: untrusted program JSON -> a `ValidProgram`, or a `ProgramError` listing every problem.

Expects anything (it is the boundary for files, links and the editor). Guarantees: the only exception
it raises is ProgramError; each issue names the node id, the port or field, and the reason; a valid
program's nodes come in a topological order that keeps the file's order where the graph allows.
"""

from __future__ import annotations

import heapq
import re
from dataclasses import dataclass
from typing import Any

from scellis.graph.catalog import CATALOG, OpSpec
from scellis.graph.errors import Issue, ProgramError
from scellis.graph.lowering import Lowering, Mode
from scellis.graph.params import REQUIRED, check
from scellis.graph.settings import Loop, Optimizer, read_loop, read_optimizer
from scellis.ops import DType, Node, ShapeError

FORMAT = "scellis.program/1"
ID = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]{0,63}\Z")
TOP_KEYS = ("format", "name", "nodes", "edges", "loss", "metrics", "optimizer", "loop")
NODE_KEYS = ("id", "op", "params", "label", "position")
PORT_DTYPES = {"float": DType.F32, "int": DType.I32, "bool": DType.BOOL}


@dataclass(frozen=True)
class ValidNode:
    id: str
    op: str
    params: dict[str, Any]  # every parameter, defaults filled in, values normalised
    inputs: dict[str, tuple[str, ...]]  # port -> source node ids, in edge order


@dataclass(frozen=True)
class ValidProgram:
    name: str
    nodes: tuple[ValidNode, ...]  # topological order
    loss: str
    metrics: tuple[str, ...]
    optimizer: Optimizer
    loop: Loop
    source: dict[str, Any]  # the JSON as given

    def node(self, node_id: str) -> ValidNode:
        return next(n for n in self.nodes if n.id == node_id)


def validate(data: Any) -> ValidProgram:
    issues: list[Issue] = []
    if not isinstance(data, dict):
        raise ProgramError([Issue("", f"a program is a JSON object, got {type(data).__name__}")])
    _check_top(data, issues)
    nodes = _read_nodes(data.get("nodes"), issues)
    inputs = _read_edges(data.get("edges", []), nodes, issues)
    _check_arity(nodes, inputs, issues)
    order = _topological(nodes, inputs, issues)
    broken = {i.node for i in issues if i.node is not None}
    loop = read_loop(data.get("loop", {}), "loop", issues)
    optimizer = read_optimizer(data.get("optimizer", {"kind": "adam"}), "optimizer", issues)
    valid = tuple(ValidNode(n, nodes[n][0].name, nodes[n][1], inputs.get(n, {})) for n in order)
    outputs = _check_types(valid, broken, loop.batch_size, issues)
    loss, metrics = _check_objectives(data, outputs, nodes, issues)
    if issues:
        raise ProgramError(issues)
    name = data.get("name", "program")
    return ValidProgram(name, valid, loss, metrics, optimizer, loop, data)


def _check_top(data: dict[str, Any], issues: list[Issue]) -> None:
    if data.get("format") != FORMAT:
        issues.append(Issue("format", f"must be {FORMAT!r}, got {data.get('format')!r}"))
    for key in data:
        if key not in TOP_KEYS:
            issues.append(Issue(str(key), f"unknown field (known: {', '.join(TOP_KEYS)})"))
    if not isinstance(data.get("name", "program"), str):
        issues.append(Issue("name", "must be a string"))


def _read_nodes(raw: Any, issues: list[Issue]) -> dict[str, tuple[OpSpec, dict[str, Any]]]:
    """id -> (op spec, checked params) for every node whose id and op are usable."""
    if not isinstance(raw, list) or not raw:
        issues.append(Issue("nodes", "must be a non-empty list of nodes"))
        return {}
    nodes: dict[str, tuple[OpSpec, dict[str, Any]]] = {}
    for i, node in enumerate(raw):
        path = f"nodes[{i}]"
        if not isinstance(node, dict):
            issues.append(Issue(path, f"a node is an object, got {type(node).__name__}"))
            continue
        nid = node.get("id")
        if not isinstance(nid, str) or not ID.match(nid):
            issues.append(
                Issue(
                    f"{path}.id", f"must be a name of letters, digits, _ or - (not starting with a digit), got {nid!r}"
                )
            )
            continue
        if nid in nodes:
            issues.append(Issue(f"{path}.id", "is used by another node", node=nid))
            continue
        for key in node:
            if key not in NODE_KEYS:
                issues.append(Issue(f"{path}.{key}", f"unknown field (known: {', '.join(NODE_KEYS)})", node=nid))
        op = node.get("op")
        spec = CATALOG.get(op) if isinstance(op, str) else None
        if spec is None:
            issues.append(Issue(f"{path}.op", f"unknown op {node.get('op')!r}", node=nid))
            continue
        nodes[nid] = (spec, _read_params(spec, node.get("params", {}), nid, path, issues))
    return nodes


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


def _read_edges(
    raw: Any, nodes: dict[str, tuple[OpSpec, dict[str, Any]]], issues: list[Issue]
) -> dict[str, dict[str, tuple[str, ...]]]:
    if not isinstance(raw, list):
        issues.append(Issue("edges", "must be a list of edges"))
        return {}
    inputs: dict[str, dict[str, tuple[str, ...]]] = {}
    for i, edge in enumerate(raw):
        path = f"edges[{i}]"
        if not isinstance(edge, dict) or set(edge) != {"from", "to"}:
            issues.append(Issue(path, 'an edge is {"from": {"node": ..., "port": ...}, "to": {...}} and nothing else'))
            continue
        src = _endpoint(edge["from"], f"{path}.from", issues)
        dst = _endpoint(edge["to"], f"{path}.to", issues)
        if src is None or dst is None:
            continue
        if _dangling(src, dst, nodes, path, issues):
            continue
        ports = inputs.setdefault(dst[0], {})
        ports[dst[1]] = (*ports.get(dst[1], ()), src[0])
    return inputs


def _dangling(
    src: tuple[str, str], dst: tuple[str, str], nodes: dict[str, Any], path: str, issues: list[Issue]
) -> bool:
    bad = False
    for end, (nid, _) in (("from", src), ("to", dst)):
        if nid not in nodes:
            issues.append(Issue(f"{path}.{end}.node", f"dangling edge: there is no node {nid!r}"))
            bad = True
    if bad:
        return True
    if src[1] != "out":
        issues.append(Issue(f"{path}.from.port", f"{nodes[src[0]][0].name} has one output port, 'out'", src[0], src[1]))
        bad = True
    spec = nodes[dst[0]][0]
    if dst[1] not in {p.name for p in spec.inputs}:
        names = ", ".join(p.name for p in spec.inputs) or "none"
        issues.append(
            Issue(f"{path}.to.port", f"{spec.name} has no input port {dst[1]!r} (it has: {names})", dst[0], dst[1])
        )
        bad = True
    return bad


def _check_arity(nodes: dict[str, Any], inputs: dict[str, dict[str, tuple[str, ...]]], issues: list[Issue]) -> None:
    for nid, (spec, _) in nodes.items():
        for port in spec.inputs:
            count = len(inputs.get(nid, {}).get(port.name, ()))
            if count == 0:
                issues.append(Issue("edges", f"input {port.name!r} of {spec.name} is not connected", nid, port.name))
            elif count > 1 and not port.multiple:
                issues.append(
                    Issue("edges", f"input {port.name!r} takes one edge, {count} are connected", nid, port.name)
                )


def _topological(
    nodes: dict[str, Any], inputs: dict[str, dict[str, tuple[str, ...]]], issues: list[Issue]
) -> list[str]:
    """Kahn's algorithm, ready nodes taken in file order; nodes left over are on or behind a cycle."""
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
    for nid in stuck:
        issues.append(Issue("edges", "is part of a cycle, or depends on one: a program must be acyclic", nid))
    return order


def lower_node(ctx: Lowering, spec: OpSpec, node: ValidNode, values: dict[str, Node]) -> Node:
    """The IR of one node, given its sources' IR; ShapeError carries the program port when known."""
    x: dict[str, Any] = {}
    for port in spec.inputs:
        sources = [values[s] for s in node.inputs[port.name]]
        for src in sources:
            want = PORT_DTYPES.get(port.kind)
            if want is not None and src.dtype is not want:
                raise ShapeError(f"expects {port.kind} ({want.value}), got {src.dtype.value}", spec.inputs.index(port))
        x[port.name] = sources if port.multiple else sources[0]
    return spec.lower(ctx, node.id, node.params, x)


def _check_types(nodes: tuple[ValidNode, ...], broken: set[str], batch: int, issues: list[Issue]) -> dict[str, Node]:
    ctx = Lowering(batch, Mode.TRAIN)
    values: dict[str, Node] = {}
    for node in nodes:
        sources = [s for group in node.inputs.values() for s in group]
        if node.id in broken or any(s not in values for s in sources):
            continue  # its own problems are reported already, or a source failed: no cascade
        spec = CATALOG[node.op]
        try:
            values[node.id] = lower_node(ctx, spec, node, values)
        except ShapeError as err:
            port = spec.inputs[err.port].name if err.port is not None and err.port < len(spec.inputs) else None
            issues.append(Issue("nodes", str(err), node.id, port))
    return values


def _check_objectives(
    data: dict[str, Any], outputs: dict[str, Node], nodes: dict[str, Any], issues: list[Issue]
) -> tuple[str, tuple[str, ...]]:
    loss = data.get("loss")
    metrics = data.get("metrics", [])
    if not isinstance(metrics, list):
        issues.append(Issue("metrics", "must be a list of node ids"))
        metrics = []
    for path, nid in [("loss", loss), *((f"metrics[{i}]", m) for i, m in enumerate(metrics))]:
        if not isinstance(nid, str) or nid not in nodes:
            issues.append(Issue(path, f"must name a node of the program, got {nid!r}"))
        elif nid in outputs and (outputs[nid].shape != () or not outputs[nid].dtype.is_float):
            issues.append(Issue(path, f"must be a float scalar, but it is {outputs[nid].type_str}", nid))
    if isinstance(loss, str) and loss in metrics:
        issues.append(Issue("metrics", "the loss is reported anyway; do not list it as a metric", loss))
    if len(set(map(str, metrics))) != len(metrics):
        issues.append(Issue("metrics", "lists a node twice"))
    return str(loss), tuple(str(m) for m in metrics)
