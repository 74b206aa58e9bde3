"""LoRA adapters as a program holds them, and their merge into the base weights as an IR function (run on
the device like any other, so no float of a large matrix passes through Python).

Expects a ValidProgram with adapters as scellis.graph.adapters adds them: for each adapted pretrained_linear
`L` (W [out, in], float32 or NF4 words), the parameters `L-lora-a` (A [rank, in]) and `L-lora-b` (B [out,
rank]) and the constant `L-lora-scale` (alpha / rank). Guarantees: `adapters` lists them in program order,
with the base tensor's key in the weights file; `merge_function` computes `merged/L.weight` = W + (alpha /
rank) B A for each (W read back from its words when it is NF4), from inputs named as the step names them,
so a session's values feed it as they are.
"""

from __future__ import annotations

from dataclasses import dataclass

from scellis.graph.validate import ValidProgram
from scellis.ir import Function
from scellis.ops import DType, Op, make, nf4
from scellis.ops import defs as d
from scellis.ops.build import add, scale
from scellis.ops.node import input_node

MERGED = "merged/"


@dataclass(frozen=True)
class Adapter:
    node: str  # the adapted pretrained_linear's node id, e.g. layer0-query-linear
    tensor: str  # its base weight's key in the weights file
    out: int
    inp: int
    rank: int
    scale: float  # alpha / rank
    nf4: bool = False  # W is kept as NF4 words

    @property
    def weight(self) -> str:
        return f"{self.node}.weight"

    @property
    def a(self) -> str:
        return f"{self.node}-lora-a.value"

    @property
    def b(self) -> str:
        return f"{self.node}-lora-b.value"


def adapters(program: ValidProgram) -> list[Adapter]:
    """Every adapted linear of `program` (see the module's contract); [] when it has none."""
    nodes = {n.id: n for n in program.nodes}
    out = []
    for node in program.nodes:
        if not node.id.endswith("-lora-a"):
            continue
        base = node.id.removesuffix("-lora-a")
        linear, up, scaling = nodes.get(base), nodes.get(f"{base}-lora-b"), nodes.get(f"{base}-lora-scale")
        if linear is None or up is None or scaling is None or linear.op != "pretrained_linear":
            raise ValueError(f"{program.name}: node {node.id!r} is no LoRA adapter of a pretrained linear {base!r}")
        rank, inp = node.params["shape"]
        out_, rank_b = up.params["shape"]
        if out_ != linear.params["features"] or rank_b != rank:
            raise ValueError(f"{program.name}: the adapter of {base!r} does not fit its weight's shape")
        scale, packed = float(scaling.params["value"]), linear.params["storage"] == "nf4"
        out.append(Adapter(base, linear.params["tensor"], out_, inp, rank, scale, packed))
    return out


def merge_function(found: list[Adapter]) -> Function:
    """W + (alpha / rank) B A for each adapter (see the module's contract)."""
    if not found:
        raise ValueError("the program has no LoRA adapters to merge")
    inputs, outputs = [], []
    for adapter in found:
        if adapter.nf4:
            packed = input_node(adapter.weight, d.Role.PARAM, DType.U32, (nf4.words(adapter.out, adapter.inp),))
            inputs.append(packed)
            w = make(Op.NF4_UNPACK, packed, arg=d.Nf4Arg(adapter.out, adapter.inp))
        else:
            w = input_node(adapter.weight, d.Role.PARAM, DType.F32, (adapter.out, adapter.inp))
            inputs.append(w)
        a = input_node(adapter.a, d.Role.PARAM, DType.F32, (adapter.rank, adapter.inp))
        b = input_node(adapter.b, d.Role.PARAM, DType.F32, (adapter.out, adapter.rank))
        inputs += [a, b]
        update = scale(make(Op.MATMUL, b, a, arg=d.MatmulArg()), adapter.scale)
        outputs.append((MERGED + adapter.weight, add(w, update)))
    return Function("merge", tuple(inputs), tuple(outputs))
