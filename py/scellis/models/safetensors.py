"""Tensor files in the safetensors format: read (checked, without copying tensor data) and written.

Expects the file's bytes: an 8-byte little-endian header length, a JSON header mapping each tensor's name to
its dtype, shape and [begin, end) byte offsets into the data that follows (and an optional `__metadata__`
of strings). Guarantees: `read_safetensors` returns every tensor with a view of its bytes, or raises
SafetensorsError naming the tensor and what is wrong: a header that is not a JSON object, an unknown dtype,
a shape that is not a list of non-negative integers, offsets whose length disagrees with dtype and shape,
data outside the file, tensors that overlap or leave bytes between them. `write_safetensors` writes names in
sorted order, data in that order without gaps, the header padded with spaces to a multiple of 8 bytes:
what the reference implementation reads, and what this module reads back bit for bit.
"""

from __future__ import annotations

import json
import math
import struct
from dataclasses import dataclass
from typing import Any

ITEM_BYTES = {
    "F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1,
    "U64": 8, "U32": 4, "U16": 2, "U8": 1, "BOOL": 1,
}  # fmt: skip
HEADER_LIMIT = 100_000_000  # bytes of JSON header read at most (the reference implementation's bound)


class SafetensorsError(ValueError):
    """A tensor file that cannot be read; the message names the file and the tensor."""


@dataclass(frozen=True)
class Tensor:
    dtype: str  # a key of ITEM_BYTES
    shape: tuple[int, ...]
    data: memoryview  # the tensor's bytes, row-major, little-endian

    @property
    def size(self) -> int:
        return math.prod(self.shape)


@dataclass(frozen=True)
class TensorFile:
    tensors: dict[str, Tensor]  # in the order of their data
    metadata: dict[str, str]


def read_safetensors(raw: bytes | memoryview, name: str = "the tensor file") -> TensorFile:
    """Every tensor of the file: see the module's contract; `name` is how errors name the file."""
    view = memoryview(raw).cast("B")
    if len(view) < 8:
        raise SafetensorsError(
            f"{name}: {len(view)} bytes is too short for a safetensors file (8 bytes of header length)"
        )
    (length,) = struct.unpack_from("<Q", view, 0)
    if length > min(HEADER_LIMIT, len(view) - 8):
        raise SafetensorsError(
            f"{name}: its header length says {length:,} bytes, but the file holds {len(view) - 8:,} after it; "
            "is it a safetensors file?"
        )
    try:
        header = json.loads(bytes(view[8 : 8 + length]).decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as error:
        raise SafetensorsError(f"{name}: its header is not JSON ({error})") from None
    if not isinstance(header, dict):
        raise SafetensorsError(f"{name}: its header is a JSON {type(header).__name__}, not an object")
    metadata = header.pop("__metadata__", None) or {}
    if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
        raise SafetensorsError(f"{name}: __metadata__ must map names to strings")
    data = view[8 + length :]
    spans = []
    for key, entry in header.items():
        dtype, shape, begin, end = _entry(name, key, entry)
        if end > len(data):
            raise SafetensorsError(
                f"{name}: tensor {key!r} ends at byte {end:,} of the data, which holds {len(data):,}"
            )
        spans.append((begin, end, key, dtype, shape))
    spans.sort()
    at = 0
    tensors = {}
    for begin, end, key, dtype, shape in spans:
        if begin != at:
            what = "overlaps the tensor before it" if begin < at else f"leaves {begin - at:,} unused bytes before it"
            raise SafetensorsError(f"{name}: tensor {key!r} {what} (it starts at byte {begin:,}, expected {at:,})")
        tensors[key] = Tensor(dtype, shape, data[begin:end])
        at = end
    if at != len(data):
        raise SafetensorsError(f"{name}: {len(data) - at:,} bytes after the last tensor belong to none")
    return TensorFile(tensors, dict(metadata))


def _entry(name: str, key: str, entry: Any) -> tuple[str, tuple[int, ...], int, int]:
    where = f"{name}: tensor {key!r}"
    if not isinstance(entry, dict):
        raise SafetensorsError(f"{where}: its header entry is not an object")
    dtype = entry.get("dtype")
    if dtype not in ITEM_BYTES:
        raise SafetensorsError(f"{where}: dtype {dtype!r} is none of {', '.join(ITEM_BYTES)}")
    shape = entry.get("shape")
    if not isinstance(shape, list) or not all(type(n) is int and n >= 0 for n in shape):
        raise SafetensorsError(f"{where}: shape {shape!r} is not a list of non-negative integers")
    offsets = entry.get("data_offsets")
    if not (isinstance(offsets, list) and len(offsets) == 2 and all(type(n) is int and n >= 0 for n in offsets)):
        raise SafetensorsError(f"{where}: data_offsets {offsets!r} is not [begin, end] in bytes")
    begin, end = offsets
    expected = math.prod(shape) * ITEM_BYTES[dtype]
    if end - begin != expected:
        raise SafetensorsError(
            f"{where}: {dtype} of shape {shape} holds {expected:,} bytes, but its offsets span {end - begin:,}"
        )
    return dtype, tuple(shape), begin, end


def write_safetensors(
    tensors: dict[str, tuple[str, tuple[int, ...], bytes]], metadata: dict[str, str] | None = None
) -> bytes:
    """A safetensors file of `tensors` (name -> (dtype, shape, little-endian bytes)): see the module's contract."""
    header: dict[str, Any] = {}
    if metadata:
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in metadata.items()):
            raise SafetensorsError("metadata must map strings to strings")
        header["__metadata__"] = dict(metadata)
    at = 0
    chunks = []
    for key in sorted(tensors):
        dtype, shape, data = tensors[key]
        if dtype not in ITEM_BYTES:
            raise SafetensorsError(f"tensor {key!r}: dtype {dtype!r} is none of {', '.join(ITEM_BYTES)}")
        expected = math.prod(shape) * ITEM_BYTES[dtype]
        if len(data) != expected:
            raise SafetensorsError(
                f"tensor {key!r}: {dtype} of shape {list(shape)} is {expected:,} bytes, got {len(data):,}"
            )
        header[key] = {"dtype": dtype, "shape": list(shape), "data_offsets": [at, at + expected]}
        chunks.append(data)
        at += expected
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    return b"".join([struct.pack("<Q", len(text)), text, *chunks])
