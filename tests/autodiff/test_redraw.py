"""The backward draws dropout masks again (autodiff.checkpoint.from_the_loss_back): the gradients equal, value
for value on the float64 reference, those of the backward that reads the forward's masks; no draw, and no
dropout output, is held from the forward into the backward; fewer bytes are kept."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

from scellis.autodiff import grad
from scellis.examples import digits_cnn
from scellis.levels import Level
from scellis.models.bert import BertConfig, bert_tensors
from scellis.models.finetune import TextSettings, pin_of, programs
from scellis.models.safetensors import read_safetensors
from scellis.models.weights import bind
from scellis.ops import Op
from scellis.pipeline import Compiled, compile_program
from scellis.runtime.reference import train as rt
from scellis.runtime.reference.oracle import run
from tests.fixtures.tiny_bert import CONFIG, tiny_bert_files


def tiny_lora() -> dict[str, Any]:
    raw = tiny_bert_files()["model.safetensors"]
    config = BertConfig.read(CONFIG)
    keys = bert_tensors(config, read_safetensors(raw))
    settings = TextSettings("tiny", length=8, batch=2, epochs=1)
    return next(p for c, _, p in programs(config, keys, pin_of(raw), settings, 2) if c == "lora")


def pretrained(compiled: Compiled) -> dict[str, np.ndarray]:
    raw = tiny_bert_files()["model.safetensors"]
    shapes = {s.name: s.shape for s in compiled.forward.params}
    views = bind(compiled.program, compiled.forward.params, raw)
    return {name: np.frombuffer(v, "<f4").reshape(shapes[name]).astype(np.float64) for name, v in views.items()}


PROGRAMS = {"digits CNN": digits_cnn, "tiny BERT with LoRA": tiny_lora}


@pytest.mark.parametrize("name", PROGRAMS)
def test_gradients_equal_those_read_from_the_kept_masks(name: str) -> None:
    compiled = compile_program(PROGRAMS[name]())
    fwd = compiled.forward.fn
    kept = grad(fwd, "loss", compiled.forward.trainable)  # reads the forward's masks
    given = pretrained(compiled) if name != "digits CNN" else None
    values = rt.example_inputs(kept, compiled.init, 3, classes=2, pretrained=given)  # token ids and mask 0 or 1
    want, got = run(kept, values), run(compiled.backward, values)
    for out, _ in kept.outputs:
        np.testing.assert_array_equal(got[out], want[out], err_msg=out)
    own = {id(n) for n in fwd.nodes()}
    read = {id(s) for n in compiled.backward.nodes() if id(n) not in own for s in n.src if id(s) in own}
    assert not [n for n in fwd.nodes() if id(n) in read and n.op is Op.RANDOM]


def test_fewer_bytes_are_kept_for_backward() -> None:
    data = tiny_lora()
    data["loop"] = {**data["loop"], "batch_size": 16}
    plan = compile_program(data).at(Level.PROD, frozenset()).plan
    # the tiny model's attention is [16, 2, 8, 8]: without masks and dropout outputs, activations are
    # its softmax, the linears' outputs and the layer norms' inputs
    assert plan.step.bytes["activations kept for backward"] < 3 * 2**20
    assert json.dumps(data)  # the program stays JSON
