"""A session over the imported MiniLM: the pretrained parameters are written from the pinned file exactly
(the device holds the file's bytes), only the head learns when the encoder is frozen (and checkpoints hold
it, not the frozen weights the program pins), and a session given
no weights, or other ones, refuses to start by name."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from scellis.datasets import Split
from scellis.levels import Level
from scellis.models.safetensors import read_safetensors
from scellis.models.weights import WeightsError
from scellis.runtime.cpu.device import CpuDevice
from scellis.session import Session
from tests.models.bert_case import classifier, model, reference_rows, tokens

LENGTH, BATCH = 32, 4


def split(pick: list[int], labels: list[int]) -> Split:
    rows, _ = reference_rows(pick)
    return Split(tokens(rows, LENGTH).astype("<i4").tobytes(), np.array(labels, "<i4").tobytes(), 2 * LENGTH)


def test_pretrained_values_arrive_exactly_and_a_frozen_encoder_stays_put() -> None:
    program = classifier(LENGTH, BATCH, train_encoder=False, lr=1e-2)
    short = [2, 4, 5, 7, 9, 10, 11, 12]  # edge cases of at most 32 tokens
    train = split(short, [0, 1, 0, 1, 0, 1, 0, 1])
    session = Session(program, asyncio.run(CpuDevice.open()), seed=3, level=Level.DEBUG, weights=model().raw)
    asyncio.run(session.start(train))
    file = read_safetensors(model().raw)
    frozen = [s.name for s in session.compiled.forward.params if s.init.kind == "pretrained"]
    before = asyncio.run(session.tensors(frozen))
    table = before["words-table.value"]
    assert table.data == bytes(file.tensors["embeddings.word_embeddings.weight"].data)
    expand = file.tensors["encoder.layer.5.intermediate.dense.weight"]
    assert before["layer5-expand-linear.weight"].data == bytes(expand.data)
    first = asyncio.run(session.evaluate(train))["loss"]
    start = asyncio.run(session.checkpoint())
    asyncio.run(session.run(train, train, epochs=2))
    after = asyncio.run(session.tensors(frozen))
    assert len(frozen) == 101 and all(after[k].data == before[k].data for k in frozen)
    # a checkpoint holds what trains (and the optimizer's state), not the frozen weights the program pins
    checkpoint = asyncio.run(session.checkpoint())
    assert not set(frozen) & set(checkpoint.tensors) and "head.weight" in checkpoint.tensors
    assert checkpoint.tensors["head.weight"].data != start.tensors["head.weight"].data
    assert asyncio.run(session.evaluate(train))["loss"] < first


def test_a_session_without_the_pinned_weights_refuses_to_start() -> None:
    program = classifier(LENGTH, BATCH)
    device = asyncio.run(CpuDevice.open())
    with pytest.raises(WeightsError, match=r"starts from pretrained weights: give the session model\.safetensors"):
        Session(program, device, seed=1, level=Level.DEBUG)
    with pytest.raises(WeightsError, match="bytes, but sentence-classifier pins a file of 90,868,376"):
        Session(program, device, seed=1, level=Level.DEBUG, weights=b"not the file")
