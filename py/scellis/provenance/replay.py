"""Provenance: the training step rebuilt stage by stage, recording which program node each IR node comes
from. The rebuild calls the same stage functions the pipeline does (float32, in canonical order, nothing
recomputed); `provenance.match` carries its owners over to the functions the pipeline really built.

Owners. A forward node belongs to the program node whose lowering made it: what that node's value and
its running statistics' updates reach beyond its sources' values (parameters included). A backward node
belongs to the owner of the node whose vector-Jacobian product made it (`autodiff.grad.Vjp`). An
optimizer node belongs to the owners of the parameters whose updated value or state it feeds, except that
whatever the loop's outputs need (the learning rate, the step counter, the skip and loss-scale counters,
the clipping norm) is the loop's, and so is what loss scaling adds to the loss. Constants are shared by
every node: they get their readers' owners once matched (`provenance.match`), and a constant node's.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from scellis.autodiff.grad import Vjp, grad_with_vjps
from scellis.graph import ValidProgram
from scellis.graph.lowering import Mode
from scellis.graph.settings import LossScaling
from scellis.ir import Function
from scellis.ir.from_program import Lowered, forward_values, state_name
from scellis.ops import Node, Op
from scellis.ops.defs import Role
from scellis.optim import apply_optimizer
from scellis.optim.loss_scaling import SCALED_LOSS, scale_loss

LOOP = "loop"  # the owner of what the loop program adds, beside the program's node ids
Owners = dict[int, frozenset[str]]  # id of a node of the replay -> the program nodes (or LOOP) it comes from


@dataclass(frozen=True)
class Outputs:
    """Who a step's outputs belong to, by name."""

    slots: dict[str, str]  # each parameter's and running statistic's name -> its program node
    loss: str  # the loss's program node ("" when the program has none)

    def owner(self, name: str) -> str:
        """`loss`, `metric/<id>`, `state/<statistic>`, `param/<p>` and `state/opt.<kind>/<p>` (a master copy
        too): their program node; the rest (the learning rate, the counters, the loss scale, the clipping
        norm): the loop."""
        kind, _, rest = name.partition("/")
        if name == "loss":
            return self.loss
        if kind == "metric":
            return rest
        if kind == "state" and rest not in self.slots:
            rest = rest.partition("/")[2]  # opt.<kind>/<p>
        return self.slots.get(rest, LOOP) if kind in ("param", "state") else LOOP


@dataclass(frozen=True)
class Replay:
    """The rebuilt forward (the loss unscaled), gradient function and training step (they share nodes),
    the owners of every node of the step but its constants, and of its outputs."""

    forward: Function
    backward: Function
    step: Function
    owners: Owners
    outputs: Outputs


def replay(program: ValidProgram, forward: Function, scaled: bool) -> Replay:
    """The training step of `program` whose forward pass is `forward` (as compiled: its batch inputs give
    the batch and a resident data set's size), with loss scaling where `scaled`."""
    batch, examples = _sizes(program, forward)
    lowered, values = forward_values(program, Mode.TRAIN, batch, examples)
    owners = forward_owners(program, lowered, values)
    slots = {s.name: s.node_id for s in (*lowered.params, *lowered.states)}
    if program.loss is None:  # no loss: the step is the forward, nothing added to it
        owners.update((id(n), frozenset({LOOP})) for n in lowered.fn.nodes() if _owned(n) and id(n) not in owners)
        return Replay(lowered.fn, lowered.fn, lowered.fn, owners, Outputs(slots, ""))
    fn, loss = (scale_loss(lowered.fn), SCALED_LOSS) if scaled else (lowered.fn, "loss")
    owners.update((id(n), frozenset({LOOP})) for n in fn.nodes() if _owned(n) and id(n) not in owners)
    backward, vjps = grad_with_vjps(fn, loss, lowered.trainable)
    owners.update(backward_owners(fn, backward, vjps, owners))
    settings = LossScaling() if scaled else None
    step = apply_optimizer(backward, program.optimizer, lowered.trainable, settings, program.loop.rules)
    outputs = Outputs(slots, program.loss)
    owners.update(optimizer_owners(backward, step, outputs.owner))
    return Replay(lowered.fn, backward, step, owners, outputs)


def _sizes(program: ValidProgram, forward: Function) -> tuple[int, int | None]:
    """The batch size and resident examples `forward` was lowered for: only batch inputs carry them (a
    forward that reads none is the same for any)."""
    batch = [*forward.inputs_with(Role.DATA), *forward.inputs_with(Role.LABEL)]
    tables = forward.inputs_with(Role.DATASET)
    return (batch[0].shape[0] if batch else program.loop.batch_size), (tables[0].shape[0] if tables else None)


def _owned(node: Node) -> bool:
    """Constants are no node's own: equal constants are one node, shared by every function."""
    return node.op is not Op.CONST


def fresh(roots: Iterable[Node], seen: set[int]) -> list[Node]:
    """The nodes `roots` reach without passing through `seen`, constants left out; adds them to `seen`."""
    out: list[Node] = []
    stack = [r for r in roots if id(r) not in seen]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if _owned(node):
            out.append(node)
        stack.extend(s for s in node.src if id(s) not in seen)
    return out


def forward_owners(program: ValidProgram, lowered: Lowered, values: dict[str, Node]) -> Owners:
    """Each forward node -> the program node whose lowering made it (module docstring)."""
    updates = dict(lowered.fn.outputs)
    owners: Owners = {}
    seen: set[int] = set()
    for node in program.nodes:
        states = (state_name(s.name) for s in lowered.states if s.node_id == node.id)
        roots = [values[node.id], *(updates[name] for name in states if name in updates)]
        owners.update((id(n), frozenset({node.id})) for n in fresh(roots, seen))
        if not _owned(values[node.id]):  # a constant node: the constant is its own too
            owners[id(values[node.id])] = owners.get(id(values[node.id]), frozenset()) | {node.id}
    return owners


def backward_owners(fn: Function, backward: Function, vjps: tuple[Vjp, ...], owners: Owners) -> Owners:
    """Each node `grad` added to `fn` -> the owners of the node whose rule made it; a gradient no rule
    made (zeros, for a parameter the loss does not reach) -> its parameter's owners."""
    seen = {id(n) for n in fn.nodes()}
    inside = {id(n) for n in backward.nodes()}  # a rule may build a gradient the walk then drops
    made: Owners = {}
    for vjp in vjps:
        roots = [r for r in (vjp.cotangent, *vjp.grads) if r is not None and id(r) in inside]
        made.update((id(n), owners[id(vjp.node)]) for n in fresh(roots, seen))
    for name, node in backward.outputs:
        if name.startswith("grad/"):
            param = fn.input(name.removeprefix("grad/"))
            made.update((id(n), owners[id(param)]) for n in fresh([node], seen))
    return made


def optimizer_owners(backward: Function, step: Function, output_owner: Callable[[str], str]) -> Owners:
    """Each node `apply_optimizer` added -> LOOP where a loop output reaches it, else the owners of the
    outputs (updated parameters and their optimizer state) that reach it."""
    before = {id(n) for n in backward.nodes()}
    reach: dict[int, set[str]] = {}
    for name, node in step.outputs:
        owner = output_owner(name)
        for n in fresh([node], set(before)):
            reach.setdefault(id(n), set()).add(owner)
    return {i: frozenset({LOOP}) if LOOP in who else frozenset(who) for i, who in reach.items()}
