"""Provenance: the Guide's links, JSON-ready. From each program node to its IR ops (forward, backward and
optimizer, as numbered in each printed function), to the kernels that compute them, and from each kernel
to its label, bindings, workgroup counts and CPU-path calls, and back to its program nodes and IR ops.
A kernel's WGSL is not in its entry: the caller renders the schedule once and holds the code (the Guide's
WGSL stage, which points each kernel at its lines there).

IR ops are numbered as `ir.to_text` prints them (`%n`, every node but the inputs, in canonical order); a
text's line of `%n` is its `first_op_line` + n. The backward list holds only the ops the backward adds to
the forward (recomputed copies included), the optimizer list only those the update adds to the backward;
the step list holds all of a node's ops in the training step, the numbering kernels' `ops` use.

Who owns what is recorded by the stages as they make the nodes (scellis.ir.owners); constants, which
every function shares, are their readers' there (and a constant node's).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from scellis.codegen import WgslKernel
from scellis.codegen.cpu import cpu_calls
from scellis.graph import ValidProgram
from scellis.ir import Function, to_text
from scellis.ir.owners import LOOP, Owners
from scellis.lower import Schedule
from scellis.lower.kernels import Kind
from scellis.ops import Node, Op

TEXTS = ("forward", "backward", "optimizer", "step")  # the step's text is the optimizer stage's
Found = dict[int, frozenset[str]]  # id of each node of one function -> its owners there


class ProvenanceError(ValueError):
    """A node of a linked function whose owners no stage recorded."""


def links(
    program: ValidProgram,
    forward: Function,
    backward: Function,
    step: Function,
    *,
    owners: Owners,
    schedule: Schedule,
    code: Sequence[WgslKernel],
) -> dict[str, Any]:
    """The links for the training `step` (built from `forward` and `backward`, their nodes' owners in
    `owners`) and its kernel `schedule`, rendered as `code` (a kernel each; module docstring)."""
    found = [function_owners(fn, owners) for fn in (forward, backward, step)]
    by_kernel = kernel_owners(schedule, step, found[2], owners.output)
    kernels_of: dict[str, list[int]] = {}
    for i, who in enumerate(by_kernel):
        for node_id in who:
            kernels_of.setdefault(node_id, []).append(i)
    ops = op_numbers(forward, backward, step, *found)
    order = [(node.id, node.op) for node in program.nodes] + [(LOOP, LOOP)]
    texts = zip(TEXTS, (forward, backward, step, step), strict=True)
    first_op_line = {id(fn): _first_op_line(fn) for fn in (forward, backward, step)}  # each printed once
    return {
        "texts": {text: {"first_op_line": first_op_line[id(fn)]} for text, fn in texts},
        "nodes": [
            {
                "id": node_id,
                "op": op,
                "ir": ops.get(node_id, {text: [] for text in TEXTS}),
                "kernels": kernels_of.get(node_id, []),
            }
            for node_id, op in order
        ],
        "kernels": kernel_entries(schedule, code, step, by_kernel, [node_id for node_id, _ in order]),
    }


def function_owners(fn: Function, owners: Owners) -> Found:
    """Each node of `fn` -> its owners: as recorded; a constant, its readers' in `fn` and a constant
    node's (equal constants are one node, shared by every function), or the loop's where only an output
    reads it. ProvenanceError where a node has no record."""
    found: Found = {}
    readers: dict[int, set[str]] = {}
    nodes, constant = fn.nodes(), Op.CONST
    constants = [n for n in nodes if n.op is constant]
    for node in nodes:
        if node.op is constant:
            continue
        if node not in owners:
            raise ProvenanceError(f"{fn.name}: a {node.op.value} node that no stage recorded the owners of")
        who = found[id(node)] = owners[node]
        for s in node.src:
            if s.op is constant:
                readers.setdefault(id(s), set()).update(who)
    for node in constants:
        found[id(node)] = frozenset(readers.get(id(node), set()) | owners[node]) or frozenset({LOOP})
    return found


def _numbered(fn: Function) -> list[tuple[int, Node]]:
    """Each node of `fn` in canonical order with the number `to_text` gives it (`%n`); an input, which it
    does not number, gets the next node's."""
    out, count = [], 0
    for node in fn.nodes():
        out.append((count, node))
        count += node.op is not Op.INPUT
    return out


def _first_op_line(fn: Function) -> int:
    lines = to_text(fn).split("\n")
    return next((i for i, line in enumerate(lines) if line.startswith("  %0 = ")), -1)


def op_numbers(forward: Function, backward: Function, step: Function, *found: Found) -> dict[str, dict[str, list[int]]]:
    """Owner -> text -> the numbers of its ops there (module docstring); `found` holds the owners in
    each function (a constant's depend on its readers there)."""
    before: tuple[set[int], ...] = (set(), {id(n) for n in forward.nodes()}, {id(n) for n in backward.nodes()}, set())
    out: dict[str, dict[str, list[int]]] = {}
    texts = zip(TEXTS, (forward, backward, step, step), before, (*found, found[-1]), strict=True)
    for text, fn, skip, owners in texts:
        for n, node in _numbered(fn):
            if node.op is not Op.INPUT and id(node) not in skip:
                for owner in owners[id(node)]:
                    out.setdefault(owner, {t: [] for t in TEXTS})[text].append(n)
    return out


def kernel_owners(
    schedule: Schedule, step: Function, found: Found, output_owner: Callable[[str], str]
) -> list[frozenset[str]]:
    """The owners of each kernel of `schedule` (lowered from `step`): those of the IR nodes it computes.
    A scalar several kernels compute (each reader recomputes a scalar expression of scalars, as Adam's
    bias corrections) counts only for a kernel that computes nothing else. A kernel that computes no node
    copies a value: into an output's buffer (the output's owner), or to make a view contiguous (the
    owners of what wrote, or what the step's input names, the buffer it reads)."""
    nodes, computes = step.nodes(), [k.covers for k in schedule.kernels]
    times = Counter(p for positions in computes for p in positions)
    inline = {p for p, count in times.items() if count > 1 and nodes[p].shape == ()}
    outputs = {b: name for name, b in schedule.outputs}
    inputs = {b: found.get(id(step.input(name)), frozenset()) for name, b in schedule.inputs}
    written: dict[int, frozenset[str]] = {}
    out = []
    for kernel, positions in zip(schedule.kernels, computes, strict=True):
        alone = [p for p in positions if p not in inline] or positions
        who = frozenset().union(*(found[id(nodes[p])] for p in alone))
        if not who:
            who = frozenset(output_owner(outputs[v.buffer]) for v in kernel.writes if v.buffer in outputs)
        if not who:
            read = (written.get(v.buffer) or inputs.get(v.buffer, frozenset()) for v in kernel.inputs)
            who = frozenset().union(*read) or frozenset({LOOP})
        for view in kernel.writes:
            written[view.buffer] = who
        out.append(who)
    return out


def kernel_entries(
    schedule: Schedule, code: Sequence[WgslKernel], step: Function, owners: list[frozenset[str]], order: list[str]
) -> list[dict[str, Any]]:
    """Each kernel of `schedule` (lowered from `step`, rendered as `code`) with its label, bindings and
    dispatch, its CPU-path calls, its owners (in `order`) and the step's ops it computes; not its WGSL. A
    series also lists its parts (kind, variant, label, CPU-path calls, ops), in the order they run."""
    numbers = [n for n, _ in _numbered(step)]
    rank = {owner: i for i, owner in enumerate(order)}
    out = []
    for i, (kernel, rendered) in enumerate(zip(schedule.kernels, code, strict=True)):
        out.append(
            {
                "index": i,
                "label": rendered.label,
                "kind": kernel.kind.value,
                "variant": kernel.variant,
                "bindings": list(rendered.bindings),
                "dispatch": list(rendered.workgroups),
                "cpu": list(cpu_calls(kernel)),
                "nodes": sorted(owners[i], key=rank.__getitem__),
                "ops": sorted(numbers[p] for p in kernel.covers),
            }
        )
        if kernel.kind is Kind.SERIES:
            out[-1]["parts"] = [
                {
                    "kind": part.kind.value,
                    "variant": part.variant,
                    "label": part.label,
                    "cpu": list(cpu_calls(part)),
                    "ops": sorted(numbers[p] for p in part.covers),
                }
                for part in kernel.parts
            ]
    return out
