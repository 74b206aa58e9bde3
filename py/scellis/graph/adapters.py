"""Stage: graph. LoRA adapters added to a program's pretrained linears: a change to the program JSON, so the
builder, the plan's remedies and the app make the same program.

Expects valid program JSON with pretrained_linear nodes. Guarantees: `adapted` returns new JSON (the given
one is not touched) in which each chosen linear `L` (W [out, in]) gets, beside it, `L-lora-drop` (dropout
of its input, p = dropout), `L-lora-a` (A [rank, in], uniform in +-1/sqrt(in) from the init substream, as
PEFT's kaiming-uniform default draws), `L-lora-b` (B [out, rank], zeros), `L-lora-down`, `L-lora-up`,
`L-lora-scale` (the constant alpha / rank), `L-lora` and `L-adapted` = L + (alpha / rank) dropout(x) A^T
B^T, which every reader of L reads instead; every pretrained weight is frozen (so only adapters and what
was not pretrained learn), and with `nf4` every pretrained linear's weight is kept as NF4 words (QLoRA's
4-bit base), adapted or not. A linear is chosen when its tensor's module (its key without `.weight`) is,
or ends with `.` and, one of `modules` (all pretrained linears when `modules` is empty). `adaptable`
says whether a program has pretrained linears and no adapters yet. ValueError names what cannot be
adapted: no linear chosen, a linear adapted already, settings out of range.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from typing import Any

from scellis.graph.validate import validate

SUFFIXES = ("-lora-drop", "-lora-a", "-lora-b", "-lora-down", "-lora-up", "-lora-scale", "-lora", "-adapted")


@dataclass(frozen=True)
class Adapters:
    rank: int = 8
    alpha: float = 16.0
    dropout: float = 0.1
    modules: tuple[str, ...] = ()  # e.g. ("attention.self.query", "attention.self.value"); () chooses all
    nf4: bool = False  # QLoRA: every pretrained linear's weight as NF4 words

    def __post_init__(self) -> None:
        if not (isinstance(self.rank, int) and 1 <= self.rank <= 4096):
            raise ValueError(f"LoRA rank must lie in 1..4096, got {self.rank!r}")
        if not (isinstance(self.alpha, int | float) and self.alpha > 0 and math.isfinite(self.alpha)):
            raise ValueError(f"LoRA alpha must be a positive number, got {self.alpha!r}")
        if not (isinstance(self.dropout, int | float) and 0 <= self.dropout < 1):
            raise ValueError(f"LoRA dropout must lie in [0, 1), got {self.dropout!r}")

    def chooses(self, tensor: str) -> bool:
        module = tensor.removesuffix(".weight")
        return not self.modules or any(module == m or module.endswith("." + m) for m in self.modules)

    @classmethod
    def read(cls, data: Any) -> Adapters:
        """From JSON ({rank, alpha, dropout, modules, nf4}, each optional), checked."""
        if not isinstance(data, dict):
            raise ValueError(f"adapters must be an object of rank, alpha, dropout, modules and nf4, got {data!r}")
        unknown = sorted(set(data) - {"rank", "alpha", "dropout", "modules", "nf4"})
        if unknown:
            raise ValueError(f"adapters: unknown field {unknown[0]!r} (known: rank, alpha, dropout, modules, nf4)")
        modules = data.get("modules", [])
        if not isinstance(modules, list) or not all(isinstance(m, str) and m for m in modules):
            raise ValueError(f"adapters.modules must be a list of module names, got {modules!r}")
        if not isinstance(data.get("nf4", False), bool):
            raise ValueError(f"adapters.nf4 must be true or false, got {data['nf4']!r}")
        return cls(
            data.get("rank", 8),
            data.get("alpha", 16.0),
            data.get("dropout", 0.1),
            tuple(modules),
            data.get("nf4", False),
        )


def adaptable(program: dict[str, Any]) -> bool:
    """Whether `program` (JSON) has pretrained linears and none of them has adapters yet."""
    nodes = [n for n in program.get("nodes", []) if isinstance(n, dict)]
    return any(n.get("op") == "pretrained_linear" for n in nodes) and not any(
        str(n.get("id", "")).endswith("-lora-a") for n in nodes
    )


def adapted(program: dict[str, Any], settings: Adapters) -> dict[str, Any]:
    """The program with adapters on its chosen pretrained linears (see the module's contract)."""
    valid = validate(program)
    assert valid.built is not None
    out = copy.deepcopy(program)
    nodes = {n["id"]: n for n in out["nodes"]}
    chosen = [n for n in out["nodes"] if n["op"] == "pretrained_linear" and settings.chooses(n["params"]["tensor"])]
    if not chosen:
        which = ", ".join(settings.modules) or "any module"
        raise ValueError(f"{valid.name}: no pretrained linear of {which} to adapt")
    for node in out["nodes"]:
        params = node.get("params", {})
        if node["op"] == "pretrained_linear" or params.get("init") == "pretrained":
            params["trainable"] = False
        if node["op"] == "pretrained_linear" and settings.nf4:
            params["storage"] = "nf4"
    for linear in chosen:
        lid = linear["id"]
        taken = [lid + s for s in SUFFIXES if lid + s in nodes]
        if taken:
            raise ValueError(f"{valid.name}: {lid!r} has adapters already (node {taken[0]!r})")
        x = valid.built.values[lid].src[0]
        _add(out, lid, linear["params"]["features"], x.shape[-1], settings)
    validate(out)
    return out


def _add(program: dict[str, Any], lid: str, rows: int, cols: int, s: Adapters) -> None:
    source = next(e["from"] for e in program["edges"] if e["to"]["node"] == lid and e["to"]["port"] == "x")
    for reader in program["edges"]:  # every reader of the linear reads the adapted value instead
        if reader["from"]["node"] == lid:
            reader["from"] = {"node": f"{lid}-adapted", "port": "out"}

    def node(suffix: str, op: str, **params: Any) -> None:
        program["nodes"].append({"id": lid + suffix, "op": op, "params": params})

    def edge(src: str | dict[str, str], dst: str, port: str) -> None:
        start = src if isinstance(src, dict) else {"node": src, "port": "out"}
        program["edges"].append({"from": start, "to": {"node": dst, "port": port}})

    node("-lora-drop", "dropout", p=s.dropout)
    node("-lora-a", "parameter", shape=[s.rank, cols], init="uniform", scale=1 / math.sqrt(cols))
    node("-lora-b", "parameter", shape=[rows, s.rank], init="zeros")
    node("-lora-down", "matmul", transpose_b=True)
    node("-lora-up", "matmul", transpose_b=True)
    node("-lora-scale", "constant", value=s.alpha / s.rank)
    node("-lora", "mul")
    node("-adapted", "add")
    edge(source, lid + "-lora-drop", "x")
    edge(lid + "-lora-drop", lid + "-lora-down", "a")
    edge(lid + "-lora-a", lid + "-lora-down", "b")
    edge(lid + "-lora-down", lid + "-lora-up", "a")
    edge(lid + "-lora-b", lid + "-lora-up", "b")
    edge(lid + "-lora-up", lid + "-lora", "a")
    edge(lid + "-lora-scale", lid + "-lora", "b")
    edge(lid, lid + "-adapted", "a")
    edge(lid + "-lora", lid + "-adapted", "b")
