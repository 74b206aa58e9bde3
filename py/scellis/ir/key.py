"""The structural key: SHA-256 over a canonical byte encoding of a function.

Two functions get the same key exactly when they have the same inputs (names, roles, types), the same
nodes in the same canonical order (op, dtype, shape, sources by position, argument) and the same
outputs. Object identity, Python's `repr` and hash seeds play no part. Compile caches and checkpoints
are addressed by it.
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import struct

from scellis.ir.function import Function
from scellis.ops import Node

KEY_VERSION = b"scellis.ir/1"


def _encode(value: object, out: bytearray) -> None:
    """Type-tagged, length-prefixed: no two different values encode to the same bytes."""
    if isinstance(value, bool):
        out += b"B" + (b"\1" if value else b"\0")
    elif isinstance(value, int):
        out += b"I" + struct.pack("<q", value)
    elif isinstance(value, float):
        out += b"F" + struct.pack("<d", value)
    elif isinstance(value, str):
        data = value.encode()
        out += b"S" + struct.pack("<I", len(data)) + data
    elif isinstance(value, enum.Enum):
        out += b"E"
        _encode(type(value).__name__, out)
        _encode(value.value, out)
    elif isinstance(value, tuple):
        out += b"T" + struct.pack("<I", len(value))
        for item in value:
            _encode(item, out)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        out += b"D"
        _encode(type(value).__name__, out)
        for f in dataclasses.fields(value):
            _encode(f.name, out)
            _encode(getattr(value, f.name), out)
    else:
        raise TypeError(f"cannot encode {type(value).__name__} in a structural key")


def encode(fn: Function) -> bytes:
    out = bytearray(KEY_VERSION)
    index: dict[int, int] = {}
    nodes = fn.nodes()
    out += struct.pack("<I", len(nodes))
    for i, node in enumerate(nodes):
        index[id(node)] = i
        _encode((node.op, node.dtype, node.shape, tuple(index[id(s)] for s in node.src), node.arg), out)
    _encode(tuple(index[id(n)] for n in fn.inputs), out)
    _encode(tuple((name, index[id(n)]) for name, n in fn.outputs), out)
    _encode(fn.name, out)
    return bytes(out)


def structural_key(fn: Function) -> str:
    return "sha256:" + hashlib.sha256(encode(fn)).hexdigest()


def node_key(node: Node) -> str:
    """Key of the computation producing one node (as a single-output function)."""
    return structural_key(Function("node", (), (("out", node),)))
