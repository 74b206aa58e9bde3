"""QLoRA on the imported MiniLM: the encoder's linear weights kept as NF4 words, packed on the device at
start, frozen, read by the products directly (no float32 copy of them is planned); LoRA adapters learn
beside them. The packed words are the reference's; the model is the plain model with its weights read
back, to float32 rounding; training moves adapters and head only; merging reads the words back."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from scellis.graph import validate
from scellis.levels import Level
from scellis.models.bert import Classifier, Lora, ModelError
from scellis.models.lora import MERGED, adapters, merge_function
from scellis.models.safetensors import read_safetensors
from scellis.models.weights import nf4_packer
from scellis.ops import nf4
from scellis.pipeline import compile_program, planner
from scellis.plan.budget import Budget, DeviceLimits
from scellis.plan.planned import lowered
from scellis.plan.program import judge
from scellis.plan.remedies import Target, advise, device_judge
from scellis.runtime.cpu.device import CpuDevice
from scellis.runtime.reference.oracle import run
from scellis.session import Session
from tests.models.bert_case import classifier, model
from tests.models.test_pretrained_session import LENGTH, split

LORA = Lora(rank=4, alpha=8.0, dropout=0.0, targets=("query", "value"))
LINEARS = 36  # six layers of query, key, value, attention output, intermediate and output


def test_the_plan_holds_words_for_the_linear_weights_and_no_float32_copy() -> None:
    compiled = compile_program(classifier(LENGTH, 4, lora=LORA, nf4=True))
    packed = [s for s in compiled.forward.params if s.init.nf4]
    assert len(packed) == LINEARS and all(not s.trainable for s in packed)
    step = compiled.at(Level.PROD).plan.functions[0].planned.logical
    weight_bytes = {4 * 384 * 384, 4 * 384 * 1536}
    assert not [b for b in step.buffers if 4 * b.size in weight_bytes], "an unpacked float32 weight is planned"
    plain = compile_program(classifier(LENGTH, 4, lora=LORA)).at(Level.PROD).plan.step.bytes["parameters"]
    quantised = compiled.at(Level.PROD).plan.step.bytes["parameters"]
    linear_floats = 6 * (4 * 384 * 384 + 2 * 384 * 1536)
    assert plain - quantised == 4 * linear_floats - 4 * 6 * (4 * nf4.words(384, 384) + 2 * nf4.words(384, 1536))


def test_an_nf4_base_needs_adapters() -> None:
    with pytest.raises(ModelError, match="trains through LoRA adapters"):
        Classifier(nf4=True)


@pytest.fixture(scope="module")
def session() -> Session:
    train = split([2, 4, 5, 7, 9, 10, 11, 12], [0, 1, 0, 1, 0, 1, 0, 1])
    program = classifier(LENGTH, 4, lora=LORA, nf4=True, lr=1e-2)
    s = Session(program, asyncio.run(CpuDevice.open()), seed=7, level=Level.DEBUG, weights=model().raw)
    asyncio.run(s.start(train))
    s.train = train  # type: ignore[attr-defined]
    return s


def test_the_device_packs_the_words_the_reference_packs(session: Session) -> None:
    values = asyncio.run(session.tensors(session.carried))
    file = read_safetensors(model().raw)
    for node, key, shape in (
        ("layer0-query-linear", "encoder.layer.0.attention.self.query.weight", (384, 384)),
        ("layer5-expand-linear", "encoder.layer.5.intermediate.dense.weight", (1536, 384)),
    ):
        w = np.frombuffer(file.tensors[key].data, "<f4").reshape(shape).astype(np.float64)
        want = run(nf4_packer(*shape), {"w": w})["packed"]
        assert values[f"{node}.weight"].data == np.asarray(want, dtype="<u4").tobytes(), node


def test_training_moves_adapters_and_head_and_leaves_the_words(session: Session) -> None:
    before = asyncio.run(session.tensors(session.carried))
    train = session.train  # type: ignore[attr-defined]
    first = asyncio.run(session.evaluate(train))["loss"]
    asyncio.run(session.run(train, train, epochs=2))
    after = asyncio.run(session.tensors(session.carried))
    params = [k for k in before if "/" not in k and k.endswith((".value", ".weight", ".bias"))]
    moved = {k for k in params if after[k].data != before[k].data}
    assert moved == {k for k in params if "-lora-" in k} | {"head.weight", "head.bias"}
    assert asyncio.run(session.evaluate(train))["loss"] < first


def test_merging_reads_the_words_back(session: Session) -> None:
    program = validate(classifier(LENGTH, 4, lora=LORA, nf4=True))
    found = adapters(program)
    assert all(a.nf4 for a in found) and len(found) == 12
    values = {k: t.data for k, t in asyncio.run(session.tensors(session.carried)).items()}
    merge = merge_function(found)
    device = session.device
    compiled = asyncio.run(device.compile(lowered(merge, Level.DEBUG, device.features)))
    names = [name for name, _ in merge.outputs]
    inputs = {n.arg.name: values[n.arg.name] for n in merge.inputs}
    merged = asyncio.run(compiled.step(inputs, names))
    first = found[0]
    w = np.array(nf4.dequantize(np.frombuffer(values[first.weight], "<u4").tolist(), first.out, first.inp)).reshape(
        first.out, first.inp
    )
    b = np.frombuffer(values[first.b], "<f4").reshape(first.out, first.rank).astype(np.float64)
    a = np.frombuffer(values[first.a], "<f4").reshape(first.rank, first.inp).astype(np.float64)
    got = np.frombuffer(merged[MERGED + first.weight], "<f4").reshape(first.out, first.inp)
    assert np.max(np.abs(got - (w + first.scale * b @ a))) <= 1e-6


def test_the_plan_offers_lora_and_qlora_where_full_fine_tuning_does_not_fit() -> None:
    """The three configurations of MiniLM at one batch and length, planned: full fine-tuning with Adam holds
    weights and two moments (each matmul updates the weight whose gradient it computes); LoRA the weights
    and a sliver; QLoRA the embeddings, norms and biases in float32 and 4.25 bits a linear weight. With a
    budget between LoRA's and full fine-tuning's, the remedies offer both, and both plan green."""
    full_program = classifier(LENGTH, 4)
    plan = planner(Level.PROD, frozenset())
    full = plan(full_program)
    budget = Budget(int(full.total * 0.8), "a test budget")
    advice = advise(full_program, full, budget, Target(plan, device_judge(DeviceLimits(1 << 31, 1 << 31, 32), budget)))
    offered = {r.name: r for r in advice.remedies}
    lora, qlora = offered["LoRA adapters (rank 8, base frozen)"], offered["QLoRA (4-bit NF4 base, LoRA rank 8)"]
    assert judge(full, DeviceLimits(1 << 31, 1 << 31, 32), budget).color == "red"
    assert lora.verdict.color == qlora.verdict.color == "green"
    assert qlora.plan.total < lora.plan.total < full.total
    assert lora.plan.totals.get("optimizer state", 0) < full.totals["optimizer state"] / 50
    # no plan stores a linear weight's gradient: its matmul updates the weight (or adapter) itself
    assert lora.plan.totals.get("gradients", 0) <= full.totals.get("gradients", 0) / 50
    linear_floats = 6 * (4 * 384 * 384 + 2 * 384 * 1536)  # 36 linears: 4.25 bits a weight instead of 32
    words = 6 * (4 * nf4.words(384, 384) + 2 * nf4.words(384, 1536))
    assert lora.plan.totals["parameters"] - qlora.plan.totals["parameters"] == 4 * linear_floats - 4 * words
