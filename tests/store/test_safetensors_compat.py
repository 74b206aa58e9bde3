"""The tensor file is the safetensors layout: the `safetensors` package (tests only) reads what we write,
checkpoints straight from the store's files included, and we read what it writes."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
import pytest
from safetensors import safe_open
from safetensors.numpy import load, save

from scellis.levels import Level
from scellis.rng import RngState
from scellis.store import Checkpoint, DirectoryStore, Tensor, decode, encode
from scellis.store import save as save_checkpoint

NUMPY = {"F32": "<f4", "F16": "<f2", "I32": "<i4", "U32": "<u4", "BOOL": "bool"}


def arrays(seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {
        "param/w": rng.standard_normal((7, 5)).astype("<f4"),
        "param/b": rng.standard_normal(5).astype("<f4"),
        "half": rng.standard_normal((3, 3)).astype("<f2"),
        "tokens": rng.integers(-(2**31), 2**31, (4, 2), dtype="<i4"),
        "keys": rng.integers(0, 2**32, 6, dtype="<u4"),
        "mask": rng.random((2, 3)) < 0.5,
        "scalar": np.array(3.5, dtype="<f4"),
        "none": np.zeros((0, 3), dtype="<f4"),
    }


def ours(values: dict[str, np.ndarray]) -> dict[str, Tensor]:
    names = {np.dtype(numpy): name for name, numpy in NUMPY.items()}
    return {n: Tensor(names[a.dtype], a.shape, a.tobytes()) for n, a in values.items()}


def assert_same(read: dict[str, np.ndarray], want: dict[str, np.ndarray]) -> None:
    assert set(read) == set(want)
    for name, array in want.items():
        assert read[name].dtype == array.dtype and read[name].shape == array.shape, name
        assert np.array_equal(read[name], array), name


@pytest.mark.parametrize("seed", [0, 1])
def test_safetensors_reads_our_files(seed: int) -> None:
    want = arrays(seed)
    assert_same(load(encode(ours(want), {"k": "v"})), want)


@pytest.mark.parametrize("seed", [0, 1])
def test_we_read_safetensors_files(seed: int) -> None:
    want = arrays(seed)
    tensors, metadata = decode(save(want, metadata={"who": "safetensors", "n": "1"}))
    assert metadata == {"n": "1", "who": "safetensors"}
    assert_same({n: np.frombuffer(t.data, NUMPY[t.dtype]).reshape(t.shape) for n, t in tensors.items()}, want)
    assert tensors == ours(want)


def test_a_stored_checkpoint_opens_with_safetensors(tmp_path: Path) -> None:
    want = arrays(2)
    checkpoint = Checkpoint("sha256:" + "0" * 64, Level.PROD, "cpu", 7, 1, 2, RngState(5), {"lr": 0.1}, ours(want))
    store = DirectoryStore(tmp_path)
    key = asyncio.run(save_checkpoint(store, checkpoint))
    with safe_open(store.path(key), framework="np") as file:
        assert file.metadata() == checkpoint.metadata()
        assert_same({name: file.get_tensor(name) for name in file.keys()}, want)  # noqa: SIM118
