"""The typed IR: canonical order, verifier, text form, structural key."""

from __future__ import annotations

import dataclasses

import pytest

from scellis import examples
from scellis.graph import Program
from scellis.guide import stages
from scellis.ir import Function, IRError, structural_key, to_text, toposort, verify
from scellis.ir.key import encode
from scellis.levels import Level
from scellis.ops import DType, Node, Op, const, make
from scellis.ops import defs as d
from scellis.ops.node import input_node
from scellis.pipeline import compile_program


def mlp(hidden: int = 16, lr: float = 1e-3) -> dict:
    p = Program("mlp")
    x = p.input("x", [8])
    y = p.input("y", [], dtype="int32", role="labels")
    logits = p.linear(p.relu(p.linear(x, hidden)), 3)
    p.set_loss(p.cross_entropy(logits, y))
    p.add_metric(p.accuracy(logits, y))
    p.set_optimizer("adam", lr=lr)
    p.set_loop(epochs=1, batch_size=4)
    return p.to_json()


def test_toposort_is_iterative_and_ordered() -> None:
    x = input_node("x", d.Role.DATA, DType.F32, (2,))
    node = x
    for _ in range(20_000):  # far deeper than Python's (or Pyodide's) recursion limit
        node = make(Op.NEG, node)
    order = toposort([node])
    assert len(order) == 20_001 and order[0] is x and order[-1] is node


def test_text_form_is_readable() -> None:
    text = to_text(compile_program(mlp()).forward.fn)
    assert text.startswith(
        "func mlp.train(\n    %x: f32[4,8] data,\n    %y: i32[4] label,\n    %linear1.weight: f32[8,16] param,"
    )
    assert "  %0 = matmul(%x, %linear1.weight) : f32[4,16]" in text
    assert "log_softmax[axis=1]" in text and "one_hot[classes=3](%y)" in text
    assert text.rstrip().endswith("}") and "  return loss=%10, metric/accuracy1=%14\n}" in text


def test_structural_key_is_stable_and_sensitive() -> None:
    first, second = compile_program(mlp()), compile_program(mlp())
    key = first.at(Level.PROD).key
    assert key == second.at(Level.PROD).key and key.startswith("sha256:")
    assert encode(first.step) == encode(second.step)
    assert compile_program(mlp(hidden=17)).at(Level.PROD).key != key
    assert compile_program(mlp(lr=2e-3)).at(Level.PROD).key != key
    assert first.at(Level.DEBUG).key == key  # the same step function; only the kernels differ
    assert first.at(Level.FAST, frozenset({"shader-f16"})).key == key  # too small for float16 tiles: no scaling
    large = compile_program(examples.mlp(64, [1026, 1026], 10, 512))
    assert large.at(Level.FAST, frozenset({"shader-f16"})).key != large.at(Level.PROD).key  # fast scales its loss


def test_key_ignores_object_identity_but_not_structure() -> None:
    def build(alpha: float) -> Function:
        x = input_node("x", d.Role.DATA, DType.F32, (3,))
        return Function("f", (x,), (("y", make(Op.LEAKY_RELU, x, arg=d.LeakyReluArg(alpha))),))

    assert structural_key(build(0.1)) == structural_key(build(0.1))
    assert structural_key(build(0.1)) != structural_key(build(0.2))


def test_zero_and_negative_zero_constants_differ() -> None:
    assert const(0.0) is const(0.0)
    assert const(0.0) is not const(-0.0)


def test_verifier_accepts_compiled_functions() -> None:
    compiled = compile_program(mlp())
    for fn in (compiled.forward.fn, compiled.backward, compiled.step, compiled.evaluate, compiled.init):
        verify(fn)


def test_verifier_rejects_a_mistyped_node() -> None:
    x = input_node("x", d.Role.DATA, DType.F32, (3,))
    bad = Node(Op.NEG, DType.F32, (4,), (x,))
    with pytest.raises(IRError, match=r"neg node says f32\[4\], its rule infers"):
        verify(Function("f", (x,), (("y", bad),)))


def test_verifier_rejects_undeclared_and_duplicate_inputs() -> None:
    x = input_node("x", d.Role.DATA, DType.F32, (3,))
    x2 = input_node("x", d.Role.DATA, DType.F32, (3,))
    with pytest.raises(IRError, match="input 'x' is used but not declared"):
        verify(Function("f", (), (("y", make(Op.NEG, x)),)))
    with pytest.raises(IRError, match="input names repeat"):
        verify(Function("f", (x, x2), (("y", make(Op.ADD, x, x2)),)))


def test_verifier_rejects_a_bad_argument() -> None:
    x = input_node("x", d.Role.DATA, DType.F32, (2, 3))
    node = make(Op.SUM, x, arg=d.ReduceArg((1,), False))
    broken = dataclasses.replace(node, arg=d.ReduceArg((5,), False))
    with pytest.raises(IRError, match="ill-typed"):
        verify(Function("f", (x,), (("y", broken),)))


def test_fast_stages_show_the_loss_scaled_functions() -> None:
    compiled = compile_program(examples.mlp(64, [1026, 1026], 10, 512))
    fast, prod = dict(stages(compiled.at(Level.FAST, frozenset({"shader-f16"})))), dict(stages(compiled.at(Level.PROD)))
    for title in ("backward IR", "optimizer IR (training step)"):
        assert "loss_scaled" in fast[title] and "loss_scaled" not in prod[title]
    assert "opt.loss_scale" in fast["init IR"] and "opt.loss_scale" not in prod["init IR"]
