"""A program's pinned weights file and its pretrained parameters: the `weights` field and the `tensor`
parameter are checked by name, and a pretrained parameter draws nothing at init (the host writes it)."""

from __future__ import annotations

import copy

import pytest

from scellis.graph import Program, ProgramError, validate
from scellis.graph.building import Mode
from scellis.ir.from_program import forward, init_function

SHA = "ab" * 32


def program() -> dict:
    p = Program("pretrained")
    p.set_weights("w.safetensors", SHA, 1234)
    x = p.input("x", [3])
    y = p.input("y", [], dtype="int32", role="labels")
    w = p.parameter([3, 2], init="pretrained", tensor="dense.weight", trainable=False, id="w")
    b = p.parameter([2], init="zeros", id="b")
    logits = p.add(p.reshape(p.matmul(p.reshape(x, [1, 3]), w), [2]), b)  # an example's row times w
    p.set_loss(p.cross_entropy(logits, y))
    return p.to_json()


def test_a_pinned_file_and_a_pretrained_parameter_validate() -> None:
    valid = validate(program())
    assert valid.weights is not None and (valid.weights.file, valid.weights.bytes) == ("w.safetensors", 1234)
    slots = {s.name: s for s in forward(valid, Mode.TRAIN).params}
    assert slots["w.value"].init.kind == "pretrained" and slots["w.value"].init.tensor == "dense.weight"
    assert not slots["w.value"].trainable


def test_init_draws_nothing_for_a_pretrained_parameter() -> None:
    init = init_function(forward(validate(program()), Mode.TRAIN))
    assert [name for name, _ in init.outputs] == ["param/b.value"]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d.update(weights=[1]), "weights: must be an object"),
        (lambda d: d["weights"].update(sha256="AB" * 32), "weights.sha256: must be 64 lowercase hexadecimal"),
        (lambda d: d["weights"].update(bytes=0), "weights.bytes: must be the file's size"),
        (lambda d: d["weights"].update(bytes=True), "weights.bytes: must be the file's size"),
        (lambda d: d["weights"].update(file=""), "weights.file: must be the file's name"),
        (lambda d: d["weights"].update(url="x"), "weights.url: unknown field"),
        (lambda d: d.pop("weights"), "node 'w' (w.params.init): pretrained, but the program names no weights file"),
        (lambda d: d["nodes"][2]["params"].update(tensor="a\nb"), "must be a tensor's name"),
        (lambda d: d["nodes"][2]["params"].update(tensor="x" * 257), "1 to 256 printable characters"),
        (lambda d: d["nodes"][2]["params"].pop("tensor"), "init pretrained names its `tensor`, and only it does"),
        (lambda d: d["nodes"][3]["params"].update(tensor="b"), "init pretrained names its `tensor`, and only it does"),
    ],
)
def test_bad_weights_fields_are_named(change, message: str) -> None:
    data = copy.deepcopy(program())
    change(data)
    with pytest.raises(ProgramError) as caught:
        validate(data)
    assert message in str(caught.value)


def test_a_file_no_parameter_reads_pins_nothing() -> None:
    data = program()
    data["nodes"][2]["params"] = {"shape": [3, 2]}
    with pytest.raises(ProgramError, match="no parameter is pretrained"):
        validate(data)
