"""The safetensors reader and writer against the reference implementation (the `safetensors` package): files
it writes read back bit for bit, files this module writes load there; the bundled MiniLM file reads whole;
and damaged files are refused by name."""

from __future__ import annotations

import json
import struct

import numpy as np
import pytest
from safetensors.numpy import load as reference_load
from safetensors.numpy import save as reference_save

from scellis.models.safetensors import SafetensorsError, read_safetensors, write_safetensors
from tests.fixtures.minilm import minilm_file

DTYPES = {"F64": np.float64, "F32": np.float32, "F16": np.float16, "I64": np.int64, "I32": np.int32, "I16": np.int16,
          "I8": np.int8, "U8": np.uint8, "BOOL": np.bool_}  # fmt: skip


def arrays() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(7)
    out = {f"t.{code.lower()}": rng.normal(size=(3, 5)).astype(dt) for code, dt in DTYPES.items()}
    out["scalar"] = np.array(2.5, dtype=np.float32)
    out["empty"] = np.zeros((0, 4), dtype=np.float32)
    out["deep.name.with.dots"] = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
    return out


def test_reads_what_the_reference_writes() -> None:
    expected = arrays()
    raw = reference_save(expected, metadata={"format": "np"})
    file = read_safetensors(raw)
    assert file.metadata == {"format": "np"}
    assert set(file.tensors) == set(expected)
    codes = {np.dtype(dt): code for code, dt in DTYPES.items()}
    for key, array in expected.items():
        tensor = file.tensors[key]
        assert tensor.dtype == codes[array.dtype], key
        assert tensor.shape == array.shape, key
        assert bytes(tensor.data) == array.astype(array.dtype.newbyteorder("<")).tobytes(), key


def test_the_reference_reads_what_it_writes() -> None:
    expected = arrays()
    codes = {np.dtype(dt): code for code, dt in DTYPES.items()}
    raw = write_safetensors({k: (codes[a.dtype], a.shape, a.tobytes()) for k, a in expected.items()}, {"by": "scellis"})
    assert struct.unpack_from("<Q", raw)[0] % 8 == 0
    loaded = reference_load(raw)
    assert set(loaded) == set(expected)
    for key, array in expected.items():
        assert loaded[key].dtype == array.dtype and loaded[key].shape == array.shape, key
        assert loaded[key].tobytes() == array.tobytes(), key
    again = read_safetensors(raw)
    assert (
        write_safetensors({k: (t.dtype, t.shape, bytes(t.data)) for k, t in again.tensors.items()}, again.metadata)
        == raw
    )


def test_the_bundled_minilm_reads_whole() -> None:
    file = read_safetensors(minilm_file("model.safetensors"), "model.safetensors")
    assert len(file.tensors) == 104  # embeddings and 6 layers: 101; the pooler: 2; position_ids
    assert file.tensors["embeddings.position_ids"].dtype == "I64"
    assert {t.dtype for k, t in file.tensors.items() if k != "embeddings.position_ids"} == {"F32"}
    assert file.tensors["embeddings.word_embeddings.weight"].shape == (30522, 384)
    assert file.tensors["encoder.layer.5.intermediate.dense.weight"].shape == (1536, 384)
    assert sum(t.size for t in file.tensors.values() if t.dtype == "F32") == 22_713_216
    first = np.frombuffer(file.tensors["embeddings.LayerNorm.weight"].data, "<f4")
    assert np.array_equal(first, reference_load(minilm_file("model.safetensors"))["embeddings.LayerNorm.weight"])


def header_file(header: dict, data: bytes = b"") -> bytes:
    text = json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + data


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b"\x01\x02", "too short"),
        (struct.pack("<Q", 10**6) + b"{}", "header length says 1,000,000 bytes"),
        (struct.pack("<Q", 3) + b"{x}", "not JSON"),
        (header_file([]), "a JSON list, not an object"),
        (header_file({"w": {"dtype": "F8", "shape": [1], "data_offsets": [0, 1]}}, b"\0"), "tensor 'w': dtype 'F8'"),
        (header_file({"w": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 4]}}, b"\0" * 4), "tensor 'w': shape"),
        (header_file({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 4]}}, b"\0" * 4), "offsets span 4"),
        (header_file({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}, b"\0" * 4), "ends at byte 8"),
        (header_file({"w": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}, b"\0" * 8), "4 unused bytes"),
        (
            header_file(
                {
                    "a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                    "b": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]},
                },
                b"\0" * 8,
            ),
            "overlaps",
        ),
        (header_file({"w": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]}}, b"\0\0"), "1 bytes after the last"),
        (header_file({"__metadata__": {"n": 1}}), "__metadata__"),
        (header_file({"w": {"dtype": "F32", "shape": [1], "data_offsets": [0]}}, b"\0" * 4), "data_offsets [0]"),
    ],
)
def test_refuses_damaged_files_by_name(raw: bytes, message: str) -> None:
    with pytest.raises(SafetensorsError, match=r"weights\.safetensors") as caught:
        read_safetensors(raw, "weights.safetensors")
    assert message in str(caught.value)


def test_writer_refuses_data_of_the_wrong_size() -> None:
    with pytest.raises(SafetensorsError, match="tensor 'w': F32 of shape \\[2, 2\\] is 16 bytes, got 12"):
        write_safetensors({"w": ("F32", (2, 2), b"\0" * 12)})
