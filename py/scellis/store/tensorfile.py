"""Named tensors as one file in the safetensors layout, pure Python (no numpy: this runs in the page).

Layout: an 8-byte little-endian header length; a JSON header mapping each tensor's name to its dtype,
shape and `data_offsets` (begin and end in the data that follows), plus an optional `__metadata__` map of
strings to strings; then the tensors' raw little-endian bytes, back to back with no gaps.

`encode` is canonical, so the same tensors and metadata always give the same bytes and therefore the same
object key: tensors in sorted name order, the header as compact JSON with sorted keys, padded with
spaces to a multiple of 8 bytes (which the layout allows) so that the data starts 8-aligned. `decode`
reads any file in the layout (other writers order and pad differently) and checks every field.
"""

from __future__ import annotations

import json
import math
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scellis.ops.dtypes import DType

ITEMSIZE = {"F32": 4, "F16": 2, "I32": 4, "U32": 4, "BOOL": 1}  # bytes per element, in the file
STORED = {DType.F32: "F32", DType.F16: "F16", DType.I32: "I32", DType.U32: "U32", DType.BOOL: "BOOL"}
METADATA = "__metadata__"
MAX_HEADER = 100_000_000  # bytes of JSON; the safetensors package refuses larger headers too
WORD = 4  # devices move whole 4-byte words (runtime.device: bools are u32, float16 padded to words)


class FormatError(ValueError):
    """Bytes that are not a valid tensor file; the message names the tensor or field at fault."""


@dataclass(frozen=True)
class Tensor:
    """One tensor as the file holds it: a dtype name of ITEMSIZE, a shape, and its raw bytes."""

    dtype: str
    shape: tuple[int, ...]
    data: bytes

    @classmethod
    def from_device(cls, dtype: DType, shape: tuple[int, ...], data: bytes) -> Tensor:
        """A tensor from a device buffer's bytes, which come in whole words: a bool per u32 word (0 or 1),
        float16 padded to a word, and at least one word even when empty."""
        size = math.prod(shape)
        name = STORED[dtype]
        width = WORD if dtype is DType.BOOL else ITEMSIZE[name]
        if len(data) < size * width:
            raise ValueError(
                f"a {dtype.value} tensor of shape {list(shape)} needs {size * width} bytes, got {len(data)}"
            )
        if dtype is DType.BOOL:
            words = struct.unpack_from(f"<{size}I", data)
            if any(word > 1 for word in words):
                raise ValueError("a bool buffer holds words other than 0 and 1")
            return cls(name, shape, bytes(words))
        return cls(name, shape, bytes(data[: size * width]))

    def device_bytes(self) -> bytes:
        """The bytes a device buffer of this tensor holds (the inverse of from_device)."""
        data = struct.pack(f"<{len(self.data)}I", *self.data) if self.dtype == "BOOL" else self.data
        return data + bytes(-len(data) % WORD if data else WORD)


def encode(tensors: Mapping[str, Tensor], metadata: Mapping[str, str]) -> bytes:
    """The canonical file of `tensors` and `metadata` (see the module's docstring)."""
    header: dict[str, Any] = {}
    if metadata:
        header[METADATA] = _checked_metadata(dict(metadata))
    offset = 0
    for name in sorted(tensors):
        tensor = tensors[name]
        if not isinstance(name, str) or not name or name == METADATA:
            raise FormatError(f"tensor name {name!r}: a tensor needs a non-empty name other than {METADATA!r}")
        _check_tensor(name, tensor.dtype, tensor.shape, len(tensor.data))
        _check_bools(name, tensor.dtype, tensor.data)
        header[name] = {
            "dtype": tensor.dtype,
            "shape": list(tensor.shape),
            "data_offsets": [offset, offset + len(tensor.data)],
        }
        offset += len(tensor.data)
    text = json.dumps(header, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    text += b" " * (-len(text) % 8)
    return b"".join([struct.pack("<Q", len(text)), text, *(tensors[name].data for name in sorted(tensors))])


def decode(data: bytes) -> tuple[dict[str, Tensor], dict[str, str]]:
    """The tensors and metadata of a file in the layout, every field checked; FormatError otherwise."""
    header, body = _split(data)
    metadata = _checked_metadata(header.pop(METADATA, {}))
    spans = sorted((_span(name, entry, len(body)), name) for name, entry in header.items())
    position = 0
    for (begin, end), name in spans:
        if begin != position:
            what = "overlaps the tensor before it" if begin < position else f"leaves bytes {position}..{begin} unused"
            raise FormatError(f"tensor {name!r}: its data_offsets [{begin}, {end}] {what}")
        position = end
    if position != len(body):
        raise FormatError(f"the data is {len(body)} bytes, but the tensors cover only {position}")
    tensors = {}
    for (begin, end), name in spans:
        tensor = Tensor(header[name]["dtype"], tuple(header[name]["shape"]), bytes(body[begin:end]))
        _check_bools(name, tensor.dtype, tensor.data)
        tensors[name] = tensor
    return dict(sorted(tensors.items())), metadata


def _split(data: bytes) -> tuple[dict[str, Any], memoryview]:
    """The parsed header and the data after it."""
    if len(data) < 8:
        raise FormatError(f"a tensor file starts with an 8-byte header length; this one has {len(data)} bytes")
    (length,) = struct.unpack_from("<Q", data)
    if length > min(MAX_HEADER, len(data) - 8):
        raise FormatError(f"header length {length} runs past the end of the file ({len(data)} bytes) or its limit")
    try:
        header = json.loads(bytes(data[8 : 8 + length]).decode(), object_pairs_hook=_unique)
    except FormatError:
        raise
    except (ValueError, RecursionError) as error:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        raise FormatError(f"the header is not JSON: {error}") from None
    if not isinstance(header, dict):
        raise FormatError(f"the header is a JSON {type(header).__name__}, not an object")
    return header, memoryview(data)[8 + length :]


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for name, value in pairs:
        if name in found:
            raise FormatError(f"the header names {name!r} twice")
        found[name] = value
    return found


def _span(name: str, entry: object, size: int) -> tuple[int, int]:
    """The checked [begin, end) of one header entry in `size` bytes of data."""
    if not isinstance(entry, dict) or set(entry) != {"dtype", "shape", "data_offsets"}:
        raise FormatError(f"tensor {name!r}: an entry has exactly the fields dtype, shape, data_offsets")
    offsets = entry["data_offsets"]
    if not (isinstance(offsets, list) and len(offsets) == 2 and all(_natural(o) for o in offsets)):
        raise FormatError(f"tensor {name!r}: data_offsets must be two non-negative integers, not {offsets!r}")
    begin, end = offsets
    if not begin <= end <= size:
        raise FormatError(f"tensor {name!r}: data_offsets [{begin}, {end}] are not a range inside {size} bytes of data")
    _check_tensor(name, entry["dtype"], entry["shape"], end - begin)
    return begin, end


def _check_tensor(name: str, dtype: object, shape: object, nbytes: int) -> None:
    if not isinstance(dtype, str) or dtype not in ITEMSIZE:
        raise FormatError(f"tensor {name!r}: dtype {dtype!r} is not one of {', '.join(ITEMSIZE)}")
    if not isinstance(shape, list | tuple) or not all(_natural(n) for n in shape):
        raise FormatError(f"tensor {name!r}: shape must be a list of non-negative integers, not {shape!r}")
    need = math.prod(shape) * ITEMSIZE[str(dtype)]
    if need != nbytes:
        raise FormatError(f"tensor {name!r}: shape {list(shape)} of {dtype} is {need} bytes, but it has {nbytes}")


def _check_bools(name: str, dtype: str, data: bytes) -> None:
    if dtype == "BOOL" and data.translate(None, b"\0\1"):
        raise FormatError(f"tensor {name!r}: a BOOL byte is neither 0 nor 1")


def _checked_metadata(metadata: object) -> dict[str, str]:
    if not isinstance(metadata, dict):
        raise FormatError(f"{METADATA} must be an object of strings, not {type(metadata).__name__}")
    for key, value in metadata.items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise FormatError(f"{METADATA} entry {key!r}: keys and values are strings, not {type(value).__name__}")
    return dict(sorted(metadata.items()))


def _natural(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0
