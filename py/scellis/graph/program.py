"""The Python builder: writes the same program JSON the editor does.

    p = Program("digits-mlp")
    x = p.input("x", [64])
    y = p.input("y", [], dtype="int32", role="labels")
    logits = p.linear(p.relu(p.linear(x, 128)), 10)
    p.set_loss(p.cross_entropy(logits, y))
    p.add_metric(p.accuracy(logits, y))
    p.set_optimizer("adam", lr=1e-3)
    program_json = p.to_json()

Any op of the catalog is a method: tensors (Refs) fill the op's input ports in order, other positional
values fill its parameters in catalog order, keywords name parameters; `id=` names the node.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from scellis.graph.catalog import CATALOG
from scellis.graph.validate import FORMAT, ValidProgram, validate

DEFAULT_OPTIMIZER = {"kind": "adam", "lr": 1e-3}


@dataclass(frozen=True)
class Ref:
    """The output of a node, to wire into another node's input."""

    node: str
    port: str = "out"


class Program:
    def __init__(self, name: str = "program") -> None:
        self.name = name
        self.nodes: list[dict[str, Any]] = []
        self.edges: list[dict[str, Any]] = []
        self.loss: str | None = None
        self.metrics: list[str] = []
        self.optimizer: dict[str, Any] | None = None  # Adam at 1e-3 for a program with a loss, unless set
        self.loop: dict[str, Any] = {"epochs": 10, "batch_size": 64}
        self.memory: dict[str, Any] = {}
        self.weights: dict[str, Any] | None = None  # the pretrained weights file: {file, sha256, bytes}
        self._counts: dict[str, int] = {}

    def _new_id(self, op: str) -> str:
        taken = {n["id"] for n in self.nodes}
        while True:
            self._counts[op] = self._counts.get(op, 0) + 1
            candidate = f"{op}{self._counts[op]}"
            if candidate not in taken:
                return candidate

    def node(self, op: str, *args: Any, id: str | None = None, **params: Any) -> Ref:  # noqa: A002 - JSON field
        """Add a node of catalog op `op`; see the module docstring for how arguments are matched."""
        spec = CATALOG.get(op)
        if spec is None:
            raise ValueError(f"unknown op {op!r}; known ops: {', '.join(sorted(CATALOG))}")
        values = [a for a in args if not _is_refs(a)]
        refs = [a for a in args if _is_refs(a)]
        if len(refs) > len(spec.inputs):
            raise ValueError(f"{op} has {len(spec.inputs)} input(s), got {len(refs)} tensors")
        for param, value in zip(spec.params, values, strict=False):
            if param.name in params:
                raise ValueError(f"{op}: parameter {param.name!r} given twice")
            params[param.name] = value
        if len(values) > len(spec.params):
            raise ValueError(f"{op} takes {len(spec.params)} parameter(s), got {len(values)} positional values")
        node_id = id or self._new_id(op)
        entry: dict[str, Any] = {"id": node_id, "op": op}
        if params:
            entry["params"] = {k: list(v) if isinstance(v, tuple) else v for k, v in params.items()}
        self.nodes.append(entry)
        for port, ref in zip(spec.inputs, refs, strict=False):
            for one in ref if isinstance(ref, list) else [ref]:
                self.edges.append(
                    {"from": {"node": one.node, "port": one.port}, "to": {"node": node_id, "port": port.name}}
                )
        return Ref(node_id)

    def input(self, id: str, shape: list[int], dtype: str = "float32", role: str = "features") -> Ref:  # noqa: A002
        return self.node("input", id=id, shape=list(shape), dtype=dtype, role=role)

    def __getattr__(self, op: str) -> Callable[..., Ref]:
        if op.startswith("_") or op not in CATALOG:
            raise AttributeError(f"Program has no attribute or op {op!r}")
        return lambda *args, **kwargs: self.node(op, *args, **kwargs)

    def set_loss(self, ref: Ref | None) -> None:
        self.loss = ref.node if ref is not None else None

    def add_metric(self, ref: Ref) -> None:
        self.metrics.append(ref.node)

    def set_optimizer(self, kind: str, **settings: Any) -> None:
        self.optimizer = {"kind": kind, **settings}

    def set_loop(self, **settings: Any) -> None:
        self.loop = dict(settings)

    def set_memory(self, **settings: Any) -> None:
        self.memory = dict(settings)

    def set_weights(self, file: str, sha256: str, size: int) -> None:
        """The weights file the program's pretrained parameters read, pinned by content."""
        self.weights = {"file": file, "sha256": sha256, "bytes": size}

    def to_json(self) -> dict[str, Any]:
        """The program JSON; a program without a loss (a simulation, an analysis) has no optimizer."""
        optimizer = self.optimizer if self.optimizer is not None or self.loss is None else DEFAULT_OPTIMIZER
        return copy.deepcopy(
            {
                "format": FORMAT,
                "name": self.name,
                "nodes": self.nodes,
                "edges": self.edges,
                "loss": self.loss,
                "metrics": self.metrics,
                **({"optimizer": optimizer} if optimizer is not None else {}),
                "loop": self.loop,
                **({"memory": self.memory} if self.memory else {}),
                **({"weights": self.weights} if self.weights else {}),
            }
        )

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Program:
        """A builder holding a program's JSON (validated first), to edit it further in Python."""
        validate(data)
        p = cls(data.get("name", "program"))
        p.nodes = copy.deepcopy(data["nodes"])
        p.edges = copy.deepcopy(data.get("edges", []))
        p.loss = data.get("loss")
        p.metrics = list(data.get("metrics", []))
        p.optimizer = copy.deepcopy(data.get("optimizer"))
        p.loop = copy.deepcopy(data.get("loop", p.loop))
        p.memory = copy.deepcopy(data.get("memory", p.memory))
        p.weights = copy.deepcopy(data.get("weights"))
        return p

    def validate(self) -> ValidProgram:
        return validate(self.to_json())


def _is_refs(value: Any) -> bool:
    return isinstance(value, Ref) or (
        isinstance(value, list) and bool(value) and all(isinstance(v, Ref) for v in value)
    )
