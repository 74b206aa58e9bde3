"""Stage: export. What model.py's generator writes with: a node's value in forward (`Value`), the text being
written (`Emitter`: __init__'s and forward's lines, the layer classes used, the states' updates, the
substreams drawn from) and the small helpers each lowering uses.

Expects a ValidProgram built at its batch size. Guarantees: `Emitter.local` gives each node a Python name
no other local, keyword, builtin or forward variable has; `Emitter.module` registers a node's module under
the node's id (by `add_module` where the id is no attribute name) and returns the expression reading it.
"""

from __future__ import annotations

import builtins
import keyword
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from scellis.graph import ValidProgram
from scellis.graph.validate import ValidNode
from scellis.ops import DType, Node

# names nn.Module already has: a node with one of these ids is registered by add_module and read by getattr
MODULE_NAMES = frozenset(
    (
        "T_destination",
        "add_module",
        "apply",
        "bfloat16",
        "buffers",
        "call_super_init",
        "children",
        "compile",
        "cpu",
        "cuda",
        "double",
        "dump_patches",
        "eval",
        "extra_repr",
        "float",
        "forward",
        "get_buffer",
        "get_extra_state",
        "get_parameter",
        "get_submodule",
        "half",
        "ipu",
        "load_state_dict",
        "modules",
        "mtia",
        "named_buffers",
        "named_children",
        "named_modules",
        "named_parameters",
        "parameters",
        "register_backward_hook",
        "register_buffer",
        "register_forward_hook",
        "register_forward_pre_hook",
        "register_full_backward_hook",
        "register_module",
        "register_parameter",
        "requires_grad_",
        "set_extra_state",
        "set_submodule",
        "share_memory",
        "state_dict",
        "to",
        "to_empty",
        "train",
        "training",
        "type",
        "xpu",
        "zero_grad",
        "inputs",
        "outputs",
    )
)
RESERVED = frozenset({"self", "torch", "nn", "F", "dist", "dtype", "device", "batch", *dir(builtins)})


@dataclass
class Value:
    """A node's value in forward: an expression (a local's name, or a literal for a scalar constant)."""

    expr: str
    scalar: bool = False  # a Python float literal, not a tensor


@dataclass
class Emitter:
    program: ValidProgram
    shapes: dict[str, tuple[int, ...]]
    dtypes: dict[str, DType]
    modules: list[str] = field(default_factory=list)  # __init__ lines
    lines: list[str] = field(default_factory=list)  # forward lines
    layers: set[str] = field(default_factory=set)  # torch_layers classes used
    locals: set[str] = field(default_factory=set)
    refs: dict[str, str] = field(default_factory=dict)  # node id -> the expression of its registered module
    updates: list[tuple[str, str]] = field(default_factory=list)  # (state module, its next value) in order
    substreams: set[str] = field(default_factory=set)  # the substreams forward draws from at a position

    @property
    def values(self) -> dict[str, Node]:
        assert self.program.built is not None
        return self.program.built.values

    def local(self, node_id: str) -> str:
        name = re.sub(r"\W", "_", node_id)
        if keyword.iskeyword(name) or name in RESERVED or name[0].isdigit():
            name = f"{name}_"
        base, n = name, 2
        while name in self.locals:
            name, n = f"{base}_{n}", n + 1
        self.locals.add(name)
        return name

    def module(self, node_id: str, constructor: str) -> str:
        """Register a module under the node's id; the expression that reads it in forward."""
        if node_id.isidentifier() and not keyword.iskeyword(node_id) and node_id not in MODULE_NAMES:
            self.modules.append(f"self.{node_id} = {constructor}")
            ref = f"self.{node_id}"
        else:
            self.modules.append(f"self.add_module({node_id!r}, {constructor})")
            ref = f"getattr(self, {node_id!r})"
        self.refs[node_id] = ref
        return ref


Lowering = Callable[[Emitter, ValidNode, dict[str, list[Value]]], Value | str]


def rank_of(e: Emitter, node: ValidNode, port: str = "x") -> int:
    return len(e.shapes[node.inputs[port][0]])


def axis_of(axis: int, rank: int) -> int:
    return axis % rank


def literal(value: float) -> str:
    if math.isnan(value) or math.isinf(value):
        return f"float({str(value)!r})"
    return repr(float(value))


def as_tensor(v: Value) -> str:
    """`v` as a tensor expression (a scalar literal becomes a tensor of the forward's dtype and device)."""
    return f"torch.tensor({v.expr}, dtype=dtype, device=device)" if v.scalar else v.expr


def pair(value: Any) -> tuple[int, int]:
    return (value, value) if isinstance(value, int) else (int(value[0]), int(value[1]))
