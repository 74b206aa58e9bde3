"""The imported all-MiniLM-L6-v2 against sentence-transformers: the float64 reference of the program Scellis
builds from the bundled files gives the embeddings sentence-transformers gave (cosine >= 0.99999, max abs
<= 1e-5), on edge-case texts and corpus mails; configs and weight files it cannot map are refused by name."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest

from scellis.graph import ProgramError, validate
from scellis.ir.function import input_name
from scellis.models.bert import BertConfig, ModelError, bert_tensors
from scellis.models.infer import node_function
from scellis.models.safetensors import read_safetensors, write_safetensors
from scellis.models.weights import WeightsError, bind
from scellis.runtime.reference.oracle import run
from tests.fixtures.minilm import minilm_file, minilm_reference
from tests.models.bert_case import classifier, embedding_function, model, reference_rows, tokens

COSINE = 0.99999
MAX_ABS = 1e-5


def compare(got: np.ndarray, want: np.ndarray) -> None:
    cosine = np.sum(got * want, axis=1) / (np.linalg.norm(got, axis=1) * np.linalg.norm(want, axis=1))
    assert float(cosine.min()) >= COSINE, cosine
    assert float(np.max(np.abs(got - want))) <= MAX_ABS, np.max(np.abs(got - want), axis=1)


EDGE = list(range(25))  # the fixture's rows: the tokenizer tests' edge cases, then mails
SHORT = [i for i in EDGE if i != 14]  # all but one hold at most 40 tokens; row 14 holds 102


@pytest.mark.parametrize(
    ("pick", "length"),
    [(SHORT, 40), ([14, *range(25, 267, 30)], 128)],
    ids=["edge cases", "the longest edge case and mails"],
)
def test_reference_embeddings_match_sentence_transformers(pick: list[int], length: int) -> None:
    rows, want = reference_rows(pick)
    fn, params = embedding_function(length, len(rows))
    got = run(fn, {"tokens": tokens(rows, length), **params})["embedding"]
    compare(np.asarray(got, dtype=np.float64), want.astype(np.float64))


def test_padding_changes_nothing_the_mask_hides() -> None:
    record, _ = minilm_reference()
    short = [i for i, row in enumerate(record["rows"]) if len(row["ids"]) <= 16][:4]  # 16 positions hold them
    rows, want = reference_rows(short)
    assert len(rows) == 4
    short_fn, short_params = embedding_function(16, len(rows))
    short = run(short_fn, {"tokens": tokens(rows, 16), **short_params})["embedding"]
    compare(np.asarray(short, dtype=np.float64), want.astype(np.float64))


def test_the_program_pins_the_weights_and_freezes_nothing_by_default() -> None:
    program = classifier(128, 4)
    assert program["weights"]["file"] == "model.safetensors" and program["weights"]["bytes"] == 90_868_376
    pretrained = [n for n in program["nodes"] if n.get("params", {}).get("init") == "pretrained"]
    linears = [n for n in program["nodes"] if n["op"] == "pretrained_linear"]
    assert len(pretrained) + len(linears) == 101 and len(linears) == 36  # every tensor of the encoder, no pooler
    frozen = validate(classifier(128, 4, train_encoder=False))
    readers = [n for n in frozen.nodes if n.params.get("init") == "pretrained" or n.op == "pretrained_linear"]
    assert len(readers) == 101 and not any(n.params["trainable"] for n in readers)


def test_other_weights_are_refused_by_name() -> None:
    valid = validate(classifier(16, 2))
    built = valid.built
    assert built is not None
    slots = built.builder.params
    raw = bytearray(model().raw)
    raw[-1] ^= 1
    with pytest.raises(WeightsError, match=r"its SHA-256 is [0-9a-f]{64}, but sentence-classifier pins"):
        bind(valid, slots, bytes(raw))
    with pytest.raises(WeightsError, match="90,868,375 bytes, but sentence-classifier pins a file of 90,868,376"):
        bind(valid, slots, model().raw[:-1])


def test_a_file_missing_a_tensor_or_of_another_shape_is_refused_by_key() -> None:
    file = read_safetensors(minilm_file("model.safetensors"))
    config = model().config
    tensors = {k: (t.dtype, t.shape, bytes(t.data)) for k, t in file.tensors.items()}
    del tensors["encoder.layer.3.output.dense.bias"]
    with pytest.raises(ModelError, match=r"lacks the tensor 'encoder\.layer\.3\.output\.dense\.bias'"):
        bert_tensors(config, read_safetensors(write_safetensors(tensors)))
    task_model = {f"bert.{k}": (t.dtype, t.shape, bytes(t.data)) for k, t in file.tensors.items()}
    keys = bert_tensors(config, read_safetensors(write_safetensors(task_model)))  # a task model's prefix
    assert all(key.startswith("bert.") for key in keys.values()) and len(keys) == 101
    tensors = {k: v for k, v in task_model.items() if "layer.0." in k}
    with pytest.raises(ModelError, match=r"holds no 'embeddings\.word_embeddings\.weight'"):
        bert_tensors(config, read_safetensors(write_safetensors(tensors)))
    tensors = {k: (t.dtype, t.shape, bytes(t.data)) for k, t in file.tensors.items()}
    tensors["embeddings.LayerNorm.weight"] = ("F32", (383,), bytes(383 * 4))
    with pytest.raises(
        ModelError, match=r"'embeddings\.LayerNorm\.weight' has shape \[383\], the config implies \[384\]"
    ):
        bert_tensors(config, read_safetensors(write_safetensors(tensors)))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"model_type": "gpt2"}, "model_type is 'gpt2'"),
        ({"hidden_act": "relu"}, "hidden_act 'relu' is none of"),
        ({"num_attention_heads": 7}, "num_attention_heads 7 does not divide hidden_size 384"),
        ({"hidden_size": "384"}, "hidden_size must be a positive integer"),
        ({"position_embedding_type": "relative_key"}, "position_embedding_type 'relative_key'"),
        ({"hidden_dropout_prob": 1.5}, "hidden_dropout_prob must be a number in [0, 1)"),
    ],
)
def test_configs_it_cannot_map_are_refused_by_field(change: dict, message: str) -> None:
    data = {**json.loads(minilm_file("config.json")), **change}
    with pytest.raises(ModelError) as caught:
        BertConfig.read(data)
    assert message in str(caught.value)


def test_a_pretrained_parameter_needs_a_pinned_file_and_a_tensor() -> None:
    program = classifier(16, 2)
    without = copy.deepcopy(program)
    del without["weights"]
    with pytest.raises(ProgramError, match="pretrained, but the program names no weights file"):
        validate(without)
    bad = copy.deepcopy(program)
    bad["weights"]["sha256"] = "ABC"
    with pytest.raises(ProgramError, match=r"weights\.sha256: must be 64 lowercase hexadecimal digits"):
        validate(bad)
    untagged = copy.deepcopy(program)
    node = next(n for n in untagged["nodes"] if n.get("params", {}).get("init") == "pretrained")
    del node["params"]["tensor"]
    with pytest.raises(ProgramError, match="init pretrained names its `tensor`"):
        validate(untagged)


def test_node_function_computes_the_chosen_nodes_in_evaluation_mode() -> None:
    valid = validate(classifier(16, 2))
    fn, slots = node_function(valid, ["embedding", "head"], 2)
    assert [name for name, _ in fn.outputs] == ["embedding", "head"]
    assert {input_name(n) for n in fn.inputs} == {"tokens"} | {s.name for s in slots}
    assert "head.weight" in {s.name for s in slots} and len(slots) == 101 + 2
    with pytest.raises(KeyError, match="has no node 'logits'"):
        node_function(valid, ["logits"], 2)
