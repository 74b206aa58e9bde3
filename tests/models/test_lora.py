"""LoRA on the imported MiniLM: adapters on the chosen linears, the pretrained weights frozen. At init (B = 0)
the embedding is the pretrained one bit for bit; only adapters and the head have gradients and optimizer
state (the plan says so); training moves them and nothing else; settings it cannot build are refused."""

from __future__ import annotations

import asyncio
from hashlib import sha256

import numpy as np
import pytest

from scellis.checks.cases import run_case
from scellis.graph import validate
from scellis.graph.validate import Weights
from scellis.ir import Function
from scellis.ir.function import input_name
from scellis.levels import Level
from scellis.models.bert import Classifier, Lora, ModelError, sentence_classifier
from scellis.models.lora import MERGED, adapters, merge_function
from scellis.models.safetensors import read_safetensors, write_safetensors
from scellis.pipeline import compile_program
from scellis.runtime.cpu.device import CpuDevice
from scellis.session import Session
from tests.models.bert_case import classifier, embedding_function, embedding_of, model, reference_rows, tokens
from tests.models.test_pretrained_session import LENGTH, split

ADAPTED = ("query", "value")
LORA = Lora(rank=4, alpha=8.0, dropout=0.1, targets=ADAPTED)


def test_adapters_sit_on_the_chosen_linears_and_start_as_the_pretrained_model() -> None:
    program = classifier(LENGTH, 2, lora=LORA)
    ids = {n["id"] for n in program["nodes"]}
    assert {f"layer{i}-{part}-linear-lora-{ab}" for i in range(6) for part in ADAPTED for ab in "ab"} <= ids
    assert not any("-key-linear-lora" in i or "-expand-linear-lora" in i for i in ids)
    x = tokens(reference_rows([2, 4])[0], LENGTH).astype("<i4").tobytes()
    device = asyncio.run(CpuDevice.open())
    rng = np.random.default_rng(0)
    outs = []
    for lora in (None, LORA):
        fn, params = embedding_function(LENGTH, 2, lora=lora)
        inputs = {"tokens": x, **{k: v.tobytes() for k, v in params.items()}}
        for node in fn.inputs:  # A of any values, B zeros: the adapters add exactly nothing
            name = input_name(node)
            if name.endswith("-lora-a.value"):
                inputs[name] = rng.uniform(-0.05, 0.05, node.shape).astype("<f4").tobytes()
            elif name.endswith("-lora-b.value"):
                inputs[name] = np.zeros(node.shape, "<f4").tobytes()
        _, out, _ = asyncio.run(run_case(device, fn, Level.DEBUG, inputs))
        outs.append(out["embedding"])
    assert outs[0] == outs[1]


def test_only_adapters_and_the_head_learn_and_hold_optimizer_state() -> None:
    compiled = compile_program(classifier(LENGTH, 4, lora=LORA))
    trainable = set(compiled.forward.trainable)
    assert trainable == {
        f"layer{i}-{part}-linear-lora-{ab}.value" for i in range(6) for part in ADAPTED for ab in "ab"
    } | {
        "head.weight",
        "head.bias",
    }
    adapter_floats = 6 * 2 * (4 * 384 + 384 * 4) + 384 * 2 + 2
    plan = compiled.at(Level.PROD).plan
    assert plan.step.bytes["optimizer state"] < 3 * 4 * adapter_floats  # two Adam moments (and a step count)
    assert plan.step.bytes["gradients"] < 4 * adapter_floats + 2**20  # no gradient of a frozen weight
    assert plan.step.bytes["parameters"] == 4 * (22_713_216 - 147_840 + adapter_floats)  # all but the pooler


def test_training_moves_adapters_and_the_head_only() -> None:
    program = classifier(LENGTH, 4, lora=LORA, lr=1e-2)
    train = split([2, 4, 5, 7, 9, 10, 11, 12], [0, 1, 0, 1, 0, 1, 0, 1])
    session = Session(program, asyncio.run(CpuDevice.open()), seed=5, level=Level.DEBUG, weights=model().raw)
    asyncio.run(session.start(train))
    before = asyncio.run(session.tensors(session.carried))
    first = asyncio.run(session.evaluate(train))["loss"]
    asyncio.run(session.run(train, train, epochs=2))
    after = asyncio.run(session.tensors(session.carried))
    params = [k for k in before if "/" not in k and k.endswith((".value", ".weight", ".bias"))]  # not opt.m/...
    moved = {k for k in params if after[k].data != before[k].data}
    assert moved == {k for k in params if "-lora-" in k} | {"head.weight", "head.bias"}
    assert asyncio.run(session.evaluate(train))["loss"] < first


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"rank": 0}, "rank must lie in 1..4096"),
        ({"alpha": 0.0}, "alpha must be a positive number"),
        ({"dropout": 1.0}, "dropout must lie in [0, 1)"),
        ({"targets": ("query", "attention")}, "each is one of query, key, value, dense"),
        ({"targets": ()}, "each is one of"),
    ],
)
def test_settings_it_cannot_build_are_refused(settings: dict, message: str) -> None:
    with pytest.raises(ModelError) as caught:
        Lora(**settings)
    assert message in str(caught.value)


def test_merged_weights_give_the_adapted_model_without_adapters() -> None:
    """Adapters of random values: the LoRA model's embeddings, and those of the plain model whose weights
    file holds W + (alpha / rank) B A (merged on the device), agree to float32 rounding."""
    valid = validate(classifier(LENGTH, 2, lora=LORA))
    found = adapters(valid)
    assert [a.node for a in found] == [f"layer{i}-{part}-linear" for i in range(6) for part in ADAPTED]
    assert found[0].tensor == "encoder.layer.0.attention.self.query.weight" and found[0].scale == 2.0
    x = tokens(reference_rows([2, 4])[0], LENGTH).astype("<i4").tobytes()
    device = asyncio.run(CpuDevice.open())
    rng = np.random.default_rng(1)
    fn, params = embedding_function(LENGTH, 2, lora=LORA)
    values = {k: v.tobytes() for k, v in params.items()}
    for node in fn.inputs:
        name = input_name(node)
        if "-lora-" in name:
            values[name] = rng.uniform(-0.1, 0.1, node.shape).astype("<f4").tobytes()
    _, adapted, _ = asyncio.run(run_case(device, fn, Level.DEBUG, {"tokens": x, **values}))

    merge = merge_function(found)
    _, merged, _ = asyncio.run(
        run_case(device, merge, Level.DEBUG, {input_name(n): values[input_name(n)] for n in merge.inputs})
    )
    first = found[0]
    want = np.frombuffer(values[first.weight], "<f4").reshape(first.out, first.inp).astype(np.float64) + first.scale * (
        np.frombuffer(values[first.b], "<f4").reshape(first.out, first.rank).astype(np.float64)
        @ np.frombuffer(values[first.a], "<f4").reshape(first.rank, first.inp)
    )
    got = np.frombuffer(merged[MERGED + first.weight], "<f4").reshape(want.shape)
    assert np.max(np.abs(got - want)) <= 1e-6

    file = read_safetensors(model().raw)
    tensors = {k: (t.dtype, t.shape, bytes(t.data)) for k, t in file.tensors.items()}
    for adapter in found:
        tensors[adapter.tensor] = ("F32", (adapter.out, adapter.inp), merged[MERGED + adapter.weight])
    raw = write_safetensors(tensors, file.metadata)
    pin = Weights("merged.safetensors", sha256(raw).hexdigest(), len(raw))
    plain = sentence_classifier(model().config, model().keys, pin, Classifier(length=LENGTH, batch=2))
    adapted_rows, merged_rows, pretrained_rows = (
        np.frombuffer(out, "<f4").reshape(2, 384).astype(np.float64)
        for out in (
            adapted["embedding"],
            embed(device, x, *embedding_of(plain, raw, 2)),
            embed(device, x, *embedding_function(LENGTH, 2)),
        )
    )
    assert np.max(np.abs(adapted_rows - merged_rows)) <= 1e-5
    assert np.max(np.abs(adapted_rows - pretrained_rows)) > 1e-3  # the adapters changed something


def embed(device: object, x: bytes, fn: Function, params: dict[str, np.ndarray]) -> bytes:
    """The embedding `fn` computes of the tokens `x` on `device`."""
    _, out, _ = asyncio.run(
        run_case(device, fn, Level.DEBUG, {"tokens": x, **{k: v.tobytes() for k, v in params.items()}})
    )
    return out["embedding"]
