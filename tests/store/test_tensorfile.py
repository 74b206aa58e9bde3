"""The tensor file (safetensors layout): round trips, canonical bytes, and every malformed file named."""

from __future__ import annotations

import ast
import json
import struct
from pathlib import Path

import pytest

from scellis.lower.kernels import storage_bytes
from scellis.ops.dtypes import DType
from scellis.store import FormatError, Tensor, decode, encode, key_of

F32_12 = struct.pack("<3f", 1.0, 2.0, -0.5)
TENSORS = {
    "param/w": Tensor("F32", (3, 1), F32_12),
    "opt.m/w": Tensor("F32", (3,), bytes(12)),
    "mask": Tensor("BOOL", (2, 2), b"\1\0\0\1"),
    "half": Tensor("F16", (3,), struct.pack("<3e", 1.0, 0.5, -2.0)),
    "index": Tensor("I32", (2,), struct.pack("<2i", -1, 7)),
    "counter": Tensor("U32", (1,), struct.pack("<I", 2**32 - 1)),
    "empty": Tensor("F32", (0, 4), b""),
}


def test_round_trip() -> None:
    tensors, metadata = decode(encode(TENSORS, {"note": "ü", "a": "1"}))
    assert tensors == TENSORS and list(tensors) == sorted(TENSORS)
    assert metadata == {"a": "1", "note": "ü"}
    assert decode(encode({}, {})) == ({}, {})


def test_exact_bytes_of_a_small_file() -> None:
    """The layout pinned byte for byte: a change here changes every checkpoint's key."""
    data = encode({"b": Tensor("I32", (1,), b"\1\0\0\0"), "a": Tensor("BOOL", (2,), b"\1\0")}, {"k": "v"})
    header = (
        b'{"__metadata__":{"k":"v"},"a":{"data_offsets":[0,2],"dtype":"BOOL","shape":[2]},'
        b'"b":{"data_offsets":[2,6],"dtype":"I32","shape":[1]}}'
    )
    header += b" " * (-len(header) % 8)
    assert data == struct.pack("<Q", len(header)) + header + b"\1\0" + b"\1\0\0\0"


def test_the_same_state_always_has_the_same_bytes() -> None:
    backwards = dict(reversed(list(TENSORS.items())))
    a = encode(TENSORS, {"x": "1", "y": "2"})
    assert encode(backwards, {"y": "2", "x": "1"}) == a
    assert key_of(encode(dict(decode(a)[0]), decode(a)[1])) == key_of(a)
    changed = dict(TENSORS, mask=Tensor("BOOL", (2, 2), b"\1\0\1\1"))
    assert key_of(encode(changed, {"x": "1", "y": "2"})) != key_of(a)


def test_data_starts_eight_aligned() -> None:
    for names in (["a"], ["ab"], ["abc", "defgh"]):
        data = encode({n: Tensor("U32", (1,), bytes(4)) for n in names}, {})
        (length,) = struct.unpack_from("<Q", data)
        assert length % 8 == 0 and data[8 : 8 + length].decode().startswith("{")


@pytest.mark.parametrize(
    ("tensors", "metadata", "message"),
    [
        ({"": Tensor("F32", (1,), bytes(4))}, {}, "tensor name '': a tensor needs a non-empty name"),
        ({"__metadata__": Tensor("F32", (1,), bytes(4))}, {}, "tensor name '__metadata__'"),
        ({"w": Tensor("F64", (1,), bytes(8))}, {}, "tensor 'w': dtype 'F64' is not one of F32, F16, I32, U32, BOOL"),
        ({"w": Tensor("F32", (2,), bytes(4))}, {}, r"tensor 'w': shape \[2\] of F32 is 8 bytes, but it has 4"),
        ({"w": Tensor("F32", (-1,), b"")}, {}, "tensor 'w': shape must be a list of non-negative integers"),
        ({"m": Tensor("BOOL", (1,), b"\2")}, {}, "tensor 'm': a BOOL byte is neither 0 nor 1"),
        ({}, {"k": 1}, "__metadata__ entry 'k': keys and values are strings"),
    ],
)
def test_encode_refuses_what_it_cannot_write(tensors: dict, metadata: dict, message: str) -> None:
    with pytest.raises(FormatError, match=message):
        encode(tensors, metadata)


def raw(header: object, body: bytes = b"", length: int | None = None, text: bytes | None = None) -> bytes:
    """A file built by hand, faults and all."""
    text = json.dumps(header).encode() if text is None else text
    return struct.pack("<Q", len(text) if length is None else length) + text + body


def entry(dtype: object = "F32", shape: object = (1,), offsets: object = (0, 4)) -> dict:
    return {"dtype": dtype, "shape": list(shape) if isinstance(shape, tuple) else shape, "data_offsets": offsets}


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"\1\0\0", "starts with an 8-byte header length; this one has 3 bytes"),
        (raw({}, length=1000), r"header length 1000 runs past the end of the file \(10 bytes\)"),
        (raw(None, text=b"\xff\xfe"), "the header is not JSON"),
        (raw(None, text=b'{"a": '), "the header is not JSON"),
        (raw(None, text=b"[" * 100_000 + b"]" * 100_000), "the header is not JSON"),
        (raw([1, 2]), "the header is a JSON list, not an object"),
        (raw(None, text=b'{"w": 1, "w": 2}'), "the header names 'w' twice"),
        (raw({"__metadata__": [1]}), "__metadata__ must be an object of strings, not list"),
        (raw({"__metadata__": {"k": 5}}), "__metadata__ entry 'k': keys and values are strings, not int"),
        (raw({"w": [1]}, bytes(4)), "tensor 'w': an entry has exactly the fields dtype, shape, data_offsets"),
        (raw({"w": {**entry(), "extra": 1}}, bytes(4)), "tensor 'w': an entry has exactly the fields"),
        (raw({"w": {"dtype": "F32", "shape": [1]}}, bytes(4)), "tensor 'w': an entry has exactly the fields"),
        (raw({"w": entry(offsets=[0])}, bytes(4)), r"tensor 'w': data_offsets must be two non-negative integers"),
        (raw({"w": entry(offsets=[-4, 0])}, bytes(4)), "tensor 'w': data_offsets must be two non-negative"),
        (raw({"w": entry(offsets=[0, 4.0])}, bytes(4)), "tensor 'w': data_offsets must be two non-negative"),
        (raw({"w": entry(offsets=[True, 4])}, bytes(4)), "tensor 'w': data_offsets must be two non-negative"),
        (raw({"w": entry(offsets=[4, 0])}, bytes(4)), r"tensor 'w': data_offsets \[4, 0\] are not a range inside 4"),
        (raw({"w": entry(offsets=[0, 8])}, bytes(4)), r"tensor 'w': data_offsets \[0, 8\] are not a range inside 4"),
        (raw({"w": entry(dtype="F64")}, bytes(4)), "tensor 'w': dtype 'F64' is not one of"),
        (raw({"w": entry(dtype=None)}, bytes(4)), "tensor 'w': dtype None is not one of"),
        (raw({"w": entry(shape=[-1])}, bytes(4)), "tensor 'w': shape must be a list of non-negative integers"),
        (raw({"w": entry(shape=[1.0])}, bytes(4)), "tensor 'w': shape must be a list of non-negative integers"),
        (raw({"w": entry(shape="1")}, bytes(4)), "tensor 'w': shape must be a list of non-negative integers"),
        (raw({"w": entry(shape=(2,))}, bytes(4)), r"tensor 'w': shape \[2\] of F32 is 8 bytes, but it has 4"),
        (raw({"w": entry(dtype="F16", shape=(1,))}, bytes(4)), r"shape \[1\] of F16 is 2 bytes, but it has 4"),
        (
            raw({"a": entry(offsets=[0, 4]), "b": entry(offsets=[2, 6])}, bytes(6)),
            r"tensor 'b': its data_offsets \[2, 6\] overlaps the tensor before it",
        ),
        (
            raw({"a": entry(offsets=[0, 4]), "b": entry(offsets=[6, 10])}, bytes(10)),
            r"tensor 'b': its data_offsets \[6, 10\] leaves bytes 4..6 unused",
        ),
        (raw({"w": entry(offsets=[2, 6])}, bytes(6)), r"tensor 'w': .* leaves bytes 0..2 unused"),
        (raw({"w": entry()}, bytes(6)), "the data is 6 bytes, but the tensors cover only 4"),
        (raw({"m": entry(dtype="BOOL", offsets=[0, 1])}, b"\7"), "tensor 'm': a BOOL byte is neither 0 nor 1"),
    ],
)
def test_decode_names_what_is_wrong(data: bytes, message: str) -> None:
    with pytest.raises(FormatError, match=message):
        decode(data)


def test_decode_reads_other_orders_and_padding() -> None:
    """Another writer may order the data differently from the header, and pad with spaces."""
    header = {"b": entry(offsets=[0, 4]), "a": entry(dtype="U32", offsets=[4, 8])}
    text = json.dumps(header).encode() + b"   "
    tensors, metadata = decode(raw(None, b"\0\0\x80\x3f" + b"\7\0\0\0", text=text))
    assert tensors == {"a": Tensor("U32", (1,), b"\7\0\0\0"), "b": Tensor("F32", (1,), b"\0\0\x80\x3f")}
    assert metadata == {}


@pytest.mark.parametrize("dtype", list(DType))
@pytest.mark.parametrize("size", [0, 1, 2, 3, 5])
def test_device_bytes_match_the_devices_buffers(dtype: DType, size: int) -> None:
    """A device buffer holds storage_bytes(dtype, size); from_device and device_bytes convert exactly."""
    width = {DType.BOOL: 1, DType.F16: 2}.get(dtype, 4)
    values = bytes([i % 2 for i in range(size)]) if dtype is DType.BOOL else bytes(range(size * width))
    tensor = Tensor.from_device(dtype, (size,), device := _device_form(dtype, values))
    assert tensor.data == values and len(device) == storage_bytes(dtype, size)
    assert tensor.device_bytes() == device


def _device_form(dtype: DType, values: bytes) -> bytes:
    data = b"".join(struct.pack("<I", b) for b in values) if dtype is DType.BOOL else values
    return data + bytes(-len(data) % 4 if data else 4)


def test_from_device_refuses_short_or_non_boolean_buffers() -> None:
    with pytest.raises(ValueError, match=r"a float32 tensor of shape \[2, 2\] needs 16 bytes, got 12"):
        Tensor.from_device(DType.F32, (2, 2), bytes(12))
    with pytest.raises(ValueError, match="a bool buffer holds words other than 0 and 1"):
        Tensor.from_device(DType.BOOL, (2,), struct.pack("<2I", 1, 2))


def test_the_store_needs_neither_numpy_nor_safetensors() -> None:
    """It runs in the page, where neither exists."""
    package = Path(__file__).resolve().parents[2] / "py" / "scellis" / "store"
    for path in package.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            names += [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            assert not [n for n in names if n.split(".")[0] in {"numpy", "safetensors"}], path
