"""A program's nodes computed for inference: the evaluation-mode function from the program's inputs to
chosen nodes (e.g. a classifier's logits or an encoder's embedding), with the parameters it reads.

Expects a ValidProgram and node ids of it. Guarantees: `node_function` returns a Function whose outputs are
the nodes' values in evaluation mode (dropout off) for a batch of `batch` rows, named by node id, and
whose inputs are exactly those they reach (data inputs by node id, parameters `<node id>.<name>`), and the
slots of the parameters among them; KeyError names a node the program lacks.
"""

from __future__ import annotations

from scellis.graph.building import Mode, Slot
from scellis.graph.validate import ValidProgram
from scellis.ir import Function
from scellis.ir.from_program import forward_values
from scellis.ir.function import input_name, reached
from scellis.ops import Op


def node_function(program: ValidProgram, nodes: list[str], batch: int) -> tuple[Function, list[Slot]]:
    built, values = forward_values(program, Mode.EVAL, batch)
    missing = [n for n in nodes if n not in values]
    if missing:
        raise KeyError(f"{program.name} has no node {missing[0]!r}")
    outputs = tuple((n, values[n]) for n in nodes)
    used = reached(node for _, node in outputs)
    known = [n for n in built.fn.inputs if n in used]  # program order
    rest = sorted((n for n in used if n.op is Op.INPUT and n not in known), key=input_name)  # off the loss's path
    inputs = (*known, *rest)
    names = {input_name(n) for n in inputs}
    return Function(f"{program.name}.infer", inputs, outputs), [s for s in built.params if s.name in names]
