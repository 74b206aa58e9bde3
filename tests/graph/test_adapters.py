"""LoRA adapters as a change to program JSON (scellis.graph.adapters): beside each chosen pretrained linear,
its readers rewired to the adapted value, every pretrained weight frozen, NF4 storage for the whole base
with nf4; refused by name where nothing can be adapted or settings are out of range."""

from __future__ import annotations

import copy

import pytest

from scellis.graph import Program, validate
from scellis.graph.adapters import Adapters, adapted

SHA = "cd" * 32


def program() -> dict:
    p = Program("two-linears")
    p.set_weights("w.safetensors", SHA, 4096)
    x = p.input("x", [2, 64])
    y = p.input("y", [], dtype="int32", role="labels")
    h = p.pretrained_linear(x, 64, "encoder.layer.0.attention.self.query.weight", trainable=True, id="q")
    h = p.relu(h, id="act")
    h = p.pretrained_linear(h, 64, "encoder.layer.0.output.dense.weight", trainable=True, id="out")
    bias = p.parameter([64], init="pretrained", tensor="encoder.layer.0.output.dense.bias", id="out-b")
    logits = p.linear(p.flatten(p.add(h, bias, id="biased")), 2, id="head")
    p.set_loss(p.cross_entropy(logits, y))
    return p.to_json()


def test_adapters_sit_beside_the_chosen_linears_and_take_their_readers() -> None:
    before = program()
    after = adapted(before, Adapters(rank=4, alpha=8.0, dropout=0.1, modules=("attention.self.query",)))
    assert before == program()  # the given JSON is not touched
    nodes = {n["id"]: n for n in after["nodes"]}
    assert {f"q{s}" for s in ("-lora-a", "-lora-b", "-lora-drop", "-lora-scale", "-adapted")} <= set(nodes)
    assert "out-lora-a" not in nodes
    assert nodes["q-lora-a"]["params"]["shape"] == [4, 64] and nodes["q-lora-b"]["params"]["shape"] == [64, 4]
    assert nodes["q-lora-scale"]["params"]["value"] == 2.0 and nodes["q-lora-drop"]["params"]["p"] == 0.1
    readers = [e["to"]["node"] for e in after["edges"] if e["from"]["node"] == "q"]
    assert sorted(readers) == ["q-adapted"]
    assert any(e["from"]["node"] == "q-adapted" and e["to"]["node"] == "act" for e in after["edges"])
    frozen = [
        n for n in after["nodes"] if n["op"] == "pretrained_linear" or n.get("params", {}).get("init") == "pretrained"
    ]
    assert len(frozen) == 3 and not any(n["params"]["trainable"] for n in frozen)
    valid = validate(after)
    trainable = {s.name for s in valid.built.builder.params if s.trainable}  # type: ignore[union-attr]
    assert trainable == {"q-lora-a.value", "q-lora-b.value", "head.weight", "head.bias"}


def test_no_modules_chooses_every_linear_and_nf4_packs_the_whole_base() -> None:
    after = adapted(program(), Adapters(rank=2, nf4=True))
    nodes = {n["id"]: n for n in after["nodes"]}
    assert "q-lora-a" in nodes and "out-lora-a" in nodes
    assert nodes["q"]["params"]["storage"] == nodes["out"]["params"]["storage"] == "nf4"
    only_out = adapted(program(), Adapters(modules=("output.dense",), nf4=True))
    nodes = {n["id"]: n for n in only_out["nodes"]}
    assert "q-lora-a" not in nodes and nodes["q"]["params"]["storage"] == "nf4"  # the base is 4-bit throughout


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"modules": ["intermediate.dense"]}, "no pretrained linear of intermediate.dense to adapt"),
        ({"rank": 0}, "LoRA rank must lie in 1..4096"),
        ({"alpha": -1}, "LoRA alpha must be a positive number"),
        ({"dropout": 1}, "LoRA dropout must lie in [0, 1)"),
        ({"depth": 2}, "adapters: unknown field 'depth'"),
        ({"modules": "query"}, "adapters.modules must be a list"),
        ({"nf4": "yes"}, "adapters.nf4 must be true or false"),
    ],
)
def test_what_cannot_be_adapted_is_named(settings: dict, message: str) -> None:
    with pytest.raises(ValueError) as caught:
        adapted(program(), Adapters.read(settings))
    assert message in str(caught.value)


def test_a_linear_is_adapted_once() -> None:
    once = adapted(program(), Adapters())
    with pytest.raises(ValueError, match="'q' has adapters already"):
        adapted(copy.deepcopy(once), Adapters())
