"""What autodiff records in the owner table (scellis.ir.owners) as it makes nodes: the same gradient
function as without it, every node it adds owned by the program node whose forward op's rule made it,
and recomputed copies (autodiff.checkpoint) owned as their originals."""

from __future__ import annotations

from collections import Counter

from scellis.autodiff import grad
from scellis.autodiff.checkpoint import checkpoint
from scellis.examples import char_transformer, digits_mlp
from scellis.graph import validate
from scellis.graph.building import Mode
from scellis.ir import structural_key
from scellis.ir.from_program import forward
from scellis.ir.owners import Owners
from scellis.ops import Op


def test_the_record_changes_nothing_and_accounts_for_every_backward_node() -> None:
    program = validate(char_transformer())
    owners = Owners()
    lowered = forward(program, Mode.TRAIN, owners=owners)
    backward = grad(lowered.fn, "loss", lowered.trainable, owners)
    assert structural_key(backward) == structural_key(grad(lowered.fn, "loss", lowered.trainable))
    ids = {n.id for n in program.nodes}
    for node in backward.nodes():
        if node.op is not Op.CONST:
            assert owners[node] and owners[node] <= ids, node


def test_a_linear_node_owns_the_matmuls_of_its_gradients() -> None:
    program = validate(digits_mlp())
    owners = Owners()
    lowered = forward(program, Mode.TRAIN, owners=owners)
    forward_ids = {id(n) for n in lowered.fn.nodes()}
    backward = grad(lowered.fn, "loss", lowered.trainable, owners)
    added = Counter(
        (next(iter(owners[n])), n.op) for n in backward.nodes() if id(n) not in forward_ids and n.op is not Op.CONST
    )
    assert added["logits", Op.MATMUL] == 2 and added["hidden", Op.MATMUL] == 1  # dx and dW; the first: dW only
    assert added["logits", Op.SUM] == 1 and not any(op is Op.MATMUL for owner, op in added if owner == "relu")


def test_recomputed_copies_are_owned_as_their_originals() -> None:
    """A copy, and a backward node rebuilt to read copies, is its original's op and argument with its
    original's owners: each such triple is one of the plain backward's."""
    program = validate(char_transformer())
    owners = Owners()
    lowered = forward(program, Mode.TRAIN, owners=owners)
    plain = grad(lowered.fn, "loss", lowered.trainable, owners)
    cut = checkpoint(lowered.fn, plain, "loss", owners)
    before = {id(n) for n in plain.nodes()}
    new = [n for n in cut.nodes() if id(n) not in before]
    assert sum(n.op is Op.MATMUL for n in new) > 1, "the transformer recomputes activations"
    originals = {(owners[n], n.op, n.arg) for n in plain.nodes()}
    for node in new:
        assert owners[node] and (owners[node], node.op, node.arg) in originals, node
