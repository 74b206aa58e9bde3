"""Chains model.py computes as one PyTorch call: attention (scaled_dot_product_attention, with the
program's scale, additive mask and dropout) and a layer norm followed by a learned scale and shift
(layer_norm with that weight and bias); a chain whose inner value something else reads stays node by node."""

from __future__ import annotations

from scellis.examples import char_transformer
from scellis.graph import validate
from scellis.torchexport.model import model_source
from tests.torchexport.cases import tiny_encoder


def source(program: dict) -> str:
    return model_source(validate(program), "a test")


def test_the_char_transformers_attention_is_one_call() -> None:
    text = source(char_transformer())
    assert "F.scaled_dot_product_attention(query_split, key_split, value_split, scale=0.25)" in text
    assert "softmax" not in text and "key_t" not in text


def test_the_encoders_attention_and_norms_are_fused_with_mask_and_dropout() -> None:
    program = tiny_encoder()[0]
    for node in program["nodes"]:
        if node["op"] == "dropout":
            node["params"]["p"] = 0.1
    text = source(program)
    assert text.count("F.scaled_dot_product_attention(") == 2  # two layers
    assert "attn_mask=mask_bias, dropout_p=0.1 if self.training else 0.0, scale=0.17677669529663687" in text
    assert text.count("F.layer_norm(") == 5  # the embeddings' and two a layer
    assert "getattr(self, 'layer0-norm1-g').value" in text
    assert "self.add_module('layer0-norm1-g', Tensor(64, trainable=False))" in text


def test_a_chain_read_elsewhere_stays_node_by_node() -> None:
    program = char_transformer()
    program["nodes"].append({"id": "sharpest", "op": "max"})
    program["edges"].append({"from": {"node": "attention", "port": "out"}, "to": {"node": "sharpest", "port": "x"}})
    program["metrics"] = [*program["metrics"], "sharpest"]
    text = source(program)
    assert "scaled_dot_product_attention" not in text
    assert "attention = torch.softmax(scores, dim=3)" in text
