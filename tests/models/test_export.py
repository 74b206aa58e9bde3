"""The fine-tuned encoder's files for Hugging Face's tools: PEFT's adapter layout (key names, shapes, config
fields as PEFT writes them), the head as torch.nn.Linear holds it, and the merged model's file (adapted
weights replaced, every other tensor as it was). That `peft` loads them and gives Scellis' logits is
bench/peft_check.py's to show, where torch is installed."""

from __future__ import annotations

import json

import numpy as np
import pytest
from safetensors.numpy import load

from scellis.graph import validate
from scellis.models.bert import Lora
from scellis.models.export import head_file, merged_model, peft_adapter
from scellis.models.lora import MERGED, adapters
from scellis.models.safetensors import read_safetensors
from tests.models.bert_case import classifier, model

LORA = Lora(rank=4, alpha=8.0, dropout=0.05, targets=("query", "value", "dense"))


def trained_values(program: dict) -> dict[str, bytes]:
    """Adapter and head values as a checkpoint would hold them: random, of the right shapes."""
    rng = np.random.default_rng(2)
    out = {}
    for node in program["nodes"]:
        nid = node["id"]
        if "-lora-" in nid and node["op"] == "parameter":
            out[f"{nid}.value"] = rng.normal(size=node["params"]["shape"]).astype("<f4").tobytes()
    out["head.weight"] = rng.normal(size=(384, 2)).astype("<f4").tobytes()
    out["head.bias"] = np.array([0.5, -0.5], "<f4").tobytes()
    return out


def test_the_adapter_is_laid_out_as_peft_saves_it() -> None:
    program = classifier(16, 2, lora=LORA)
    values = trained_values(program)
    files = peft_adapter(validate(program), values, base="sentence-transformers/all-MiniLM-L6-v2")
    config = json.loads(files["adapter_config.json"])
    assert config["peft_type"] == "LORA" and config["r"] == 4 and config["lora_alpha"] == 8
    assert config["lora_dropout"] == 0.05 and config["bias"] == "none" and not config["fan_in_fan_out"]
    assert config["target_modules"] == [
        "attention.output.dense", "attention.self.query", "attention.self.value", "intermediate.dense", "output.dense",
    ]  # fmt: skip
    tensors = load(files["adapter_model.safetensors"])
    modules = [f"base_model.model.encoder.layer.{i}.{m}" for i in range(6) for m in config["target_modules"]]
    assert set(tensors) == {f"{m}.lora_{ab}.weight" for m in modules for ab in "AB"}
    query = "base_model.model.encoder.layer.2.attention.self.query"
    assert tensors[f"{query}.lora_A.weight"].shape == (4, 384) and tensors[f"{query}.lora_B.weight"].shape == (384, 4)
    assert tensors["base_model.model.encoder.layer.0.intermediate.dense.lora_B.weight"].shape == (1536, 4)
    assert tensors[f"{query}.lora_A.weight"].tobytes() == values["layer2-query-linear-lora-a.value"]


def test_the_head_is_laid_out_as_torch_linear_holds_it() -> None:
    values = trained_values(classifier(16, 2, lora=LORA))
    head = load(head_file(values))
    ours = np.frombuffer(values["head.weight"], "<f4").reshape(384, 2)
    assert np.array_equal(head["weight"], ours.T) and head["bias"].tolist() == [0.5, -0.5]


def test_the_merged_model_replaces_the_adapted_weights_only() -> None:
    program = validate(classifier(16, 2, lora=LORA))
    found = adapters(program)
    merged = {MERGED + a.weight: np.full((a.out, a.inp), i, "<f4").tobytes() for i, a in enumerate(found)}
    base = read_safetensors(model().raw)
    out = read_safetensors(merged_model(program, base, merged))
    assert set(out.tensors) == set(base.tensors) and out.metadata == base.metadata
    replaced = {a.tensor: i for i, a in enumerate(found)}
    for key, tensor in out.tensors.items():
        if key in replaced:
            assert bytes(tensor.data) == np.full(tensor.shape, replaced[key], "<f4").tobytes(), key
        else:
            assert tensor.data == base.tensors[key].data, key


def test_a_program_without_adapters_has_none_to_export() -> None:
    with pytest.raises(ValueError, match="has no LoRA adapters to export"):
        peft_adapter(validate(classifier(16, 2)), {})
    with pytest.raises(ValueError, match=r"the trained values lack 'layer0-query-linear-lora-a\.value'"):
        peft_adapter(validate(classifier(16, 2, lora=LORA)), {})
