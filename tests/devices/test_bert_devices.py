"""The imported all-MiniLM-L6-v2 on the CPython devices: its sentence embeddings on lavapipe (wgpu-py) and on
the CPU path (wasmtime), at debug and prod, against the ones sentence-transformers gave (cosine >= 0.99999,
max abs <= 1e-5), for edge-case texts and corpus mails; the same bits from a second compile."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from scellis.checks.cases import run_case
from scellis.ir.function import input_name
from scellis.levels import Level
from scellis.runtime.cpu.device import CpuDevice
from scellis.runtime.webgpu.native import WgpuDevice
from tests.models.bert_case import embedding_function, reference_rows, tokens
from tests.models.test_bert import compare

ROWS = [3, 14, 40, 200]  # two edge cases (one of 102 tokens), two mails of 128
LENGTH = 128


@pytest.fixture(scope="module", params=["lavapipe", "wasmtime"])
def device(request: pytest.FixtureRequest) -> object:
    return WgpuDevice() if request.param == "lavapipe" else asyncio.run(CpuDevice.open())


@pytest.fixture(scope="module")
def case() -> tuple:
    rows, want = reference_rows(ROWS)
    fn, params = embedding_function(LENGTH, len(rows))
    inputs = {"tokens": tokens(rows, LENGTH).astype("<i4").tobytes(), **{k: v.tobytes() for k, v in params.items()}}
    assert set(inputs) == {input_name(n) for n in fn.inputs}
    return fn, inputs, want


@pytest.mark.parametrize("level", [Level.DEBUG, Level.PROD], ids=lambda v: v.value)
def test_embeddings_match_sentence_transformers(device: object, case: tuple, level: Level) -> None:
    fn, inputs, want = case
    _, outputs, repeat = asyncio.run(run_case(device, fn, level, inputs))
    got = np.frombuffer(outputs["embedding"], "<f4")[: want.size].reshape(want.shape)
    compare(got.astype(np.float64), want.astype(np.float64))
    assert repeat, "a second compile gave other bits"
