"""Owners (scellis.ir.owners): the table the stages fill as they make nodes, on graphs built by hand, and
what the graph -> IR builder records for a program's forward."""

from __future__ import annotations

from scellis.examples import digits_cnn
from scellis.graph import Program, validate
from scellis.graph.building import Mode
from scellis.ir import structural_key
from scellis.ir.from_program import forward
from scellis.ir.owners import LOOP, Owners
from scellis.ops import DType, Op, const
from scellis.ops.build import add, cast, mul, sub
from scellis.ops.defs import Role
from scellis.ops.node import input_node


def test_a_claim_stops_at_recorded_nodes_and_owns_no_constant() -> None:
    x = input_node("x", Role.PARAM, DType.F32, (3,))
    owners = Owners()
    y = mul(x, const(2.0))
    owners.claim([y], frozenset({"a"}))
    z = add(y, x)
    owners.claim([z, y], frozenset({"b"}))
    assert (owners[x], owners[y], owners[z]) == ({"a"}, {"a"}, {"b"})
    assert const(2.0) not in owners and owners[const(2.0)] == frozenset()


def test_a_rewrite_keeps_its_originals_owners_and_a_constant_node_owns_its_value() -> None:
    x = input_node("x", Role.PARAM, DType.F32, (3,))
    owners = Owners()
    owners.claim([x], frozenset({"a"}))
    half = cast(x, DType.F16)
    owners.keep(half, x)
    widened = cast(half, DType.F32)
    owners.keep(widened, input_node("y", Role.DATA, DType.F32, (3,)))  # of a node with no record: none
    owners.constant(const(7.0), "seven")
    owners.constant(const(7.0), "also_seven")  # equal constants are one node
    assert owners[half] == {"a"} and widened not in owners and owners[const(7.0)] == {"seven", "also_seven"}


def test_outputs_are_their_program_nodes_and_the_rest_the_loops() -> None:
    owners = Owners()
    owners.slots = {"layer.weight": "layer", "norm.mean": "norm"}
    owners.loss = "loss"
    named = {
        "loss": "loss",
        "metric/accuracy": "accuracy",
        "param/layer.weight": "layer",
        "state/opt.m/layer.weight": "layer",
        "state/opt.master/layer.weight": "layer",
        "state/norm.mean": "norm",
        "state/opt.step": LOOP,
        "state/loop.seen": LOOP,
        "lr": LOOP,
        "grad_norm": LOOP,
    }
    assert {name: owners.output(name) for name in named} == named


def test_what_a_loop_output_reaches_is_the_loops_and_a_shared_piece_every_readers() -> None:
    w, b = (input_node(n, Role.PARAM, DType.F32, (2,)) for n in ("w", "b"))
    owners = Owners()
    owners.slots = {"w": "layer", "b": "bias"}
    owners.claim([w], frozenset({"layer"}))
    owners.claim([b], frozenset({"bias"}))
    step = input_node("opt.step", Role.STATE, DType.I32, ())
    t = cast(step, DType.F32)
    shared = add(t, const(1.0))  # like Adam's bias corrections: read by every update, by no loop output
    new_w, new_b = sub(w, shared), sub(b, shared)
    counter = add(step, const(1, DType.I32))
    owners.claim_by_reach([("param/w", new_w), ("param/b", new_b), ("state/opt.step", counter), ("lr", t)])
    assert (owners[new_w], owners[new_b], owners[shared]) == ({"layer"}, {"bias"}, {"layer", "bias"})
    assert owners[counter] == owners[step] == owners[t] == {LOOP}
    assert owners[w] == {"layer"}  # recorded before: not the update's


def test_the_builder_records_every_forward_node_and_changes_none() -> None:
    program = validate(digits_cnn())
    owners = Owners()
    lowered = forward(program, Mode.TRAIN, owners=owners)
    assert structural_key(lowered.fn) == structural_key(forward(program, Mode.TRAIN).fn)
    ids = {n.id for n in program.nodes}
    for node in lowered.fn.nodes():
        if node.op is not Op.CONST:
            assert len(owners[node]) == 1 and owners[node] <= ids, node
    assert {owners[lowered.fn.output(f"state/{s.name}")] for s in lowered.states} == {
        frozenset({"norm1"}),
        frozenset({"norm2"}),
    }  # running statistics' updates: their batch norm's
    assert owners.slots["conv1.weight"] == "conv1" and owners.loss == "loss"


def test_a_constant_nodes_value_is_its_own() -> None:
    p = Program("offset")
    x = p.input("x", [3])
    p.set_loss(p.mean(p.mul(p.linear(x, 3, id="layer"), p.constant(3.5, id="gain"), id="scaled"), id="loss"))
    p.set_loop(epochs=1, batch_size=4)
    owners = Owners()
    lowered = forward(validate(p.to_json()), Mode.TRAIN, owners=owners)
    assert owners[const(3.5)] == {"gain"}
    assert {n.op: owners[n] for n in lowered.fn.nodes() if n.op in (Op.MATMUL, Op.MUL)} == {
        Op.MATMUL: {"layer"},
        Op.MUL: {"scaled"},
    }


def test_a_walk_by_reach_claims_before_anything_recorded_after_it() -> None:
    """claim_by_reach's walk waits for the table's next use, which walks it first: a later claim of
    something reading the update does not take the update."""
    w = input_node("w", Role.PARAM, DType.F32, (2,))
    owners = Owners()
    owners.slots = {"w": "layer"}
    owners.claim([w], frozenset({"layer"}))
    new_w = sub(w, const(0.5))
    owners.claim_by_reach([("param/w", new_w)])
    reader = mul(new_w, const(2.0))
    owners.claim([reader], frozenset({"later"}))
    assert (owners[new_w], owners[reader]) == ({"layer"}, {"later"})
