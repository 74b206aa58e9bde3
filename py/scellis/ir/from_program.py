"""Program -> IR: the forward function (train or eval mode) and the parameter-init function.

Expects a ValidProgram. Guarantees: inputs are exactly those the outputs need, in program order;
outputs are `loss`, `metric/<node>` for each metric, and in train mode `state/<name>` for each
running statistic or state the forward pass updates; parameter and state names are `<node id>.<name>`.
A program without a loss (a simulation, an analysis) has no `loss` output, and its train-mode function
(its step) only carries its states forward: its metrics, its results, are evaluation's.
"""

from __future__ import annotations

from dataclasses import dataclass

from scellis.graph.building import Builder, Mode, Slot
from scellis.graph.catalog import CATALOG
from scellis.graph.validate import ValidProgram, build_node
from scellis.ir.function import Function, input_name, reached
from scellis.ir.owners import LOOP, Owners
from scellis.ops import DType, Node, Op, const, make
from scellis.ops import defs as d
from scellis.ops.build import add, expand, scale
from scellis.ops.node import input_node


@dataclass(frozen=True)
class ProgramIR:
    """An IR function with the parameters and states its inputs hold."""

    fn: Function
    params: tuple[Slot, ...]
    states: tuple[Slot, ...]

    @property
    def trainable(self) -> tuple[str, ...]:
        return tuple(s.name for s in self.params if s.trainable)


def metric_name(node_id: str) -> str:
    return f"metric/{node_id}"


def state_name(name: str) -> str:
    return f"state/{name}"


def forward(
    program: ValidProgram,
    mode: Mode,
    batch: int | None = None,
    examples: int | None = None,
    owners: Owners | None = None,
) -> ProgramIR:
    """The program's forward pass for one batch (of the program's batch size unless given). With
    `examples`, the batch is gathered from a resident data set of that many examples. With `owners`,
    records which program node each node comes from (`record_owners`)."""
    return forward_values(program, mode, batch, examples, owners)[0]


def forward_values(
    program: ValidProgram,
    mode: Mode,
    batch: int | None = None,
    examples: int | None = None,
    owners: Owners | None = None,
) -> tuple[ProgramIR, dict[str, Node]]:
    """`forward`, and each program node's value: its own IR is what that value and its running
    statistics' updates (states named `<node id>.<name>`) reach beyond its sources' values."""
    ctx, values = _built(program, mode, batch or program.loop.batch_size, examples)
    outputs = [("loss", values[program.loss])] if program.loss is not None else []
    outputs += [(metric_name(m), values[m]) for m in program.metrics if program.trains or mode is Mode.EVAL]
    outputs += [(state_name(name), update) for name, update in ctx.state_updates]
    used = reached(node for _, node in outputs)
    updated = {name for name, _ in ctx.state_updates}  # a state set without being read still needs its buffer
    inputs = tuple(n for n in ctx.inputs if n in used or input_name(n) in updated)
    names = {input_name(n) for n in inputs}
    fn = Function(f"{program.name}.{mode.value}", inputs, tuple(outputs))
    built = ProgramIR(
        fn,
        tuple(s for s in ctx.params if s.name in names),
        tuple(s for s in ctx.states if s.name in names),
    )
    if owners is not None:
        record_owners(owners, program, built, values)
    return built, values


def _built(program: ValidProgram, mode: Mode, batch: int, examples: int | None) -> tuple[Builder, dict[str, Node]]:
    """The builder and each program node's IR for `mode`, `batch` and `examples`: the build validation
    made when it is that one (built once, not twice), else a new one."""
    done = program.built
    if done is not None and (done.builder.mode, done.builder.batch, done.builder.examples) == (mode, batch, examples):
        return done.builder, dict(done.values)
    ctx = Builder(batch, mode, examples)
    values: dict[str, Node] = {}
    for node in program.nodes:
        values[node.id] = build_node(ctx, CATALOG[node.op], node, values)
    return ctx, values


def record_owners(owners: Owners, program: ValidProgram, built: ProgramIR, values: dict[str, Node]) -> None:
    """Each node of `built` -> the program node whose builder made it, in program order: what its value
    and its states' updates reach beyond what earlier nodes reached (ir.owners); the rest -> the loop's."""
    updates, constant = dict(built.fn.outputs), Op.CONST
    updated: dict[str, list[Node]] = {}  # program node -> its states' next values
    for s in built.states:
        if state_name(s.name) in updates:
            updated.setdefault(s.node_id, []).append(updates[state_name(s.name)])
    for node in program.nodes:
        value = values[node.id]
        owners.claim([value, *updated.get(node.id, ())], frozenset({node.id}))
        if value.op is constant:
            owners.constant(value, node.id)
    owners.claim([*built.fn.inputs, *updates.values()], frozenset({LOOP}))
    owners.slots.update((s.name, s.node_id) for s in (*built.params, *built.states))
    owners.loss = program.loss or ""


def init_function(built: ProgramIR) -> Function:
    """Initial values of every parameter and state: `param/<name>` and `state/<name>` outputs.

    Random inits draw from the `init` substream at position 0, one site per parameter in order,
    so each parameter's values depend only on the seed and its place in the program. A pretrained
    parameter has no output: the host writes its values from the weights file (its site stays taken)."""
    key = input_node("rng.init", d.Role.RNG, DType.U32, (2,))
    position = const(0, DType.U32)
    slots = [("param", s) for s in built.params] + [("state", s) for s in built.states]
    outputs = [
        (f"{prefix}/{slot.name}", _initial(slot, key, position, site))
        for site, (prefix, slot) in enumerate(slots)
        if slot.init.kind != "pretrained"
    ]
    return Function("init", (key,), tuple(outputs))


def _initial(slot: Slot, key: Node, position: Node, site: int) -> Node:
    init = slot.init
    if init.kind in ("zeros", "ones", "fill"):
        return expand(const({"zeros": 0.0, "ones": 1.0}.get(init.kind, init.scale)), slot.shape)
    dist = d.Distribution.UNIFORM if init.kind == "uniform" else d.Distribution.NORMAL
    draw = make(Op.RANDOM, key, position, arg=d.RandomArg(dist, "init", site, slot.shape))
    if init.kind == "uniform":  # [0, 1) -> [-scale, scale)
        return add(scale(draw, 2 * init.scale), const(-init.scale))
    return scale(draw, init.scale)
