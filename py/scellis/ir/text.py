"""The IR as readable text (what the Guide shows): one line per node, `%n = op args (inputs) : type`."""

from __future__ import annotations

import dataclasses
import enum

from scellis.ir.function import Function, input_name, input_role
from scellis.ops import Node, Op
from scellis.ops.defs import ConstArg, NoArg


def format_arg(arg: object) -> str:
    """`axes=(1,), keepdims=False`; nested args and enums printed by value."""
    if isinstance(arg, NoArg):
        return ""
    parts = []
    for f in dataclasses.fields(arg):  # type: ignore[arg-type]
        value = getattr(arg, f.name)
        if f.default is not dataclasses.MISSING and value == f.default:
            continue  # defaults go unsaid: `sum[axes=(1,), keepdims=False]`
        if isinstance(value, enum.Enum):
            value = value.value
        elif dataclasses.is_dataclass(value):
            value = "{" + format_arg(value) + "}"
        parts.append(f"{f.name}={value}")
    return ", ".join(parts)


def to_text(fn: Function) -> str:
    names: dict[int, str] = {}
    for node in fn.inputs:
        names[id(node)] = f"%{input_name(node)}"
    params = [f"%{input_name(n)}: {n.type_str} {input_role(n).value}" for n in fn.inputs]
    one_line = f"func {fn.name}({', '.join(params)}) {{"
    # long signatures get one input per line
    lines = [one_line] if len(one_line) <= 100 else [f"func {fn.name}(", *(f"    {p}," for p in params), ") {"]
    counter = 0
    for node in fn.nodes():
        if node.op is Op.INPUT:
            continue
        names[id(node)] = f"%{counter}"
        counter += 1
        lines.append(f"  {names[id(node)]} = {_expression(node, names)} : {node.type_str}")
    outs = [f"{name}={names[id(node)]}" for name, node in fn.outputs]
    if len(", ".join(outs)) <= 90:
        lines += [f"  return {', '.join(outs)}", "}"]
    else:
        lines += ["  return", *(f"    {o}," for o in outs), "}"]
    return "\n".join(lines)


def _expression(node: Node, names: dict[int, str]) -> str:
    if node.op is Op.CONST:
        assert isinstance(node.arg, ConstArg)
        # float32 holds ~9 significant digits: 0.09999999999999998 prints as 0.1
        return f"const {node.arg.value:.9g}"
    args = format_arg(node.arg)
    srcs = ", ".join(names[id(s)] for s in node.src)
    return f"{node.op.value}{'[' + args + ']' if args else ''}({srcs})"
