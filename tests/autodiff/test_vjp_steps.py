"""The reverse walk's record (autodiff.grad.grad_with_vjps): the same gradient function as `grad`, and
every node the backward adds is made by one step of the walk (what the Guide attributes it by)."""

from __future__ import annotations

from scellis.autodiff import grad
from scellis.autodiff.grad import grad_with_vjps
from scellis.examples import char_transformer
from scellis.graph import validate
from scellis.graph.lowering import Mode
from scellis.ir import structural_key
from scellis.ir.from_program import forward, forward_values
from scellis.ops import Op


def test_the_record_changes_nothing_and_accounts_for_every_backward_node() -> None:
    program = validate(char_transformer())
    lowered, values = forward_values(program, Mode.TRAIN)
    assert structural_key(lowered.fn) == structural_key(forward(program, Mode.TRAIN).fn)
    assert set(values) == {n.id for n in program.nodes}
    backward, steps = grad_with_vjps(lowered.fn, "loss", lowered.trainable)
    assert structural_key(backward) == structural_key(grad(lowered.fn, "loss", lowered.trainable))
    seen = {id(n) for n in lowered.fn.nodes()}
    inside = {id(n) for n in backward.nodes()}
    for step in steps:
        stack = [g for g in (step.cotangent, *step.grads) if g is not None and id(g) in inside]
        while stack:
            node = stack.pop()
            if id(node) not in seen:
                seen.add(id(node))
                stack.extend(node.src)
    assert {id(n) for n in backward.nodes() if n.op is not Op.CONST} <= seen
    assert {s.node.op for s in steps} >= {Op.INPUT, Op.MATMUL, Op.SOFTMAX, Op.GATHER}
