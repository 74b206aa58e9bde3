"""The Python builder: argument matching, ids, JSON round trips, and a valid program for every catalog op."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from scellis.graph import CATALOG, FORMAT, Program, ProgramError, Ref, ValidProgram, validate


def mlp() -> Program:
    p = Program("digits-mlp")
    x = p.input("x", [64])
    y = p.input("y", [], dtype="int32", role="labels")
    logits = p.linear(p.relu(p.linear(x, 128)), 10)
    p.set_loss(p.cross_entropy(logits, y))
    p.add_metric(p.accuracy(logits, y))
    p.set_optimizer("adam", lr=1e-3)
    p.set_loop(epochs=2, batch_size=16, shuffle=False)
    return p


def params_of(p: Program, node_id: str) -> dict:
    return next(n for n in p.nodes if n["id"] == node_id).get("params", {})


# -- every op of the catalog, in a small valid program ----------------------------------------------


def _pair(p: Program, shape: list[int]) -> tuple[Ref, Ref]:
    return p.input("a", shape), p.input("b", shape)


def _image(p: Program) -> Ref:
    return p.input("img", [3, 8, 8])  # one example is CHW; the batch axis makes it NCHW


def _classifier(p: Program, op: str) -> Ref:
    x, y = p.input("x", [6]), p.input("y", [], dtype="int32", role="labels")
    logits = p.linear(x, 4, id="logits")
    if op == "accuracy":
        p.add_metric(p.accuracy(logits, y))
    return p.cross_entropy(logits, y)


def _binary(op: str) -> Callable[[Program], Ref]:
    return lambda p: p.sum(p.node(op, *_pair(p, [5])))


def _unary(op: str) -> Callable[[Program], Ref]:
    return lambda p: p.sum(p.node(op, p.input("x", [5])))


def _where(p: Program) -> Ref:
    a, b = _pair(p, [5])
    return p.sum(p.where(p.less(a, b), a, b))


def _carried(p: Program) -> Ref:
    """A running total carried from step to step next to a trained linear layer."""
    h = p.linear(p.input("x", [4]), 1)
    total = p.state([1], value=0.5)
    p.update(total, p.add(total, h))
    return p.sum(p.mul(h, total))


def _equal_where(p: Program) -> Ref:
    a, b = _pair(p, [5])
    return p.sum(p.where(p.equal(a, b), a, b))


BUILDERS: dict[str, Callable[[Program], Ref]] = {
    "input": lambda p: p.sum(p.input("x", [4])),
    "constant": lambda p: p.mul(p.sum(p.input("x", [4])), p.constant(0.5)),
    "linear": lambda p: p.sum(p.linear(p.input("x", [4]), 3)),
    "parameter": lambda p: p.sum(p.add(p.input("x", [2, 3]), p.parameter([2, 3], "uniform", 0.1))),
    "matmul": lambda p: p.sum(p.matmul(p.input("a", [2, 3]), p.input("b", [3, 5]))),
    "conv2d": lambda p: p.sum(p.conv2d(_image(p), 4, 3, padding=1, stride=[1, 2])),
    "max_pool2d": lambda p: p.sum(p.max_pool2d(_image(p), 2)),
    "avg_pool2d": lambda p: p.sum(p.avg_pool2d(_image(p), [2, 4], stride=2, padding=1)),
    **{op: _binary(op) for op in ("add", "sub", "mul", "div", "pow", "maximum", "minimum")},
    "less": _where,
    "equal": _equal_where,
    "where": _where,
    **{op: _unary(op) for op in ("neg", "exp", "log", "sqrt", "rsqrt", "abs", "relu", "tanh", "sigmoid")},
    "leaky_relu": lambda p: p.sum(p.leaky_relu(p.input("x", [5]), 0.2)),
    "gelu": lambda p: p.sum(p.gelu(p.input("x", [5]), "none")),
    "softmax": lambda p: p.sum(p.softmax(p.input("x", [3, 5]), 1)),
    "log_softmax": lambda p: p.sum(p.log_softmax(p.input("x", [5]))),
    "layer_norm": lambda p: p.sum(p.layer_norm(p.input("x", [3, 5]), 2)),
    "batch_norm": lambda p: p.sum(p.batch_norm(_image(p))),
    "dropout": lambda p: p.sum(p.dropout(p.input("x", [5]), 0.3)),
    "random_crop": lambda p: p.sum(p.random_crop(_image(p), padding=[2, 1])),
    "random_flip": lambda p: p.sum(p.random_flip(_image(p), 0.3)),
    "gaussian_noise": lambda p: p.sum(p.gaussian_noise(p.input("x", [5]), std=0.2)),
    "embedding": lambda p: p.sum(p.embedding(p.input("tokens", [7], dtype="int32"), 20, 4)),
    "pretrained_linear": lambda p: p.sum(p.pretrained_linear(p.input("x", [64]), 3, "w", "nf4", False)),
    "gather": lambda p: p.sum(p.gather(p.parameter([20, 4]), p.input("tokens", [7], dtype="int32"))),
    "reshape": lambda p: p.sum(p.reshape(p.input("x", [2, 6]), [3, -1])),
    "flatten": lambda p: p.sum(p.flatten(_image(p))),
    "permute": lambda p: p.sum(p.permute(p.input("x", [2, 3, 4]), [2, 0, 1])),
    "concat": lambda p: p.sum(p.concat([p.input("a", [2, 3]), p.input("b", [2, 5])], axis=-1)),
    "slice": lambda p: p.sum(p.slice(p.input("x", [6, 4]), [1, 0], [5, 4], [2, 1])),
    "sum": lambda p: p.sum(p.input("x", [3, 4])),
    "mean": lambda p: p.sum(p.mean(p.input("x", [3, 4]), [2], True)),
    "max": lambda p: p.sum(p.max(p.input("x", [3, 4]), [-1])),
    "var": lambda p: p.var(p.input("x", [3, 4]), correction=1),
    "cross_entropy": lambda p: _classifier(p, "cross_entropy"),
    "mse": lambda p: p.mse(p.linear(p.input("x", [4]), 2), p.input("t", [2], role="labels"), "sum"),
    "accuracy": lambda p: _classifier(p, "accuracy"),
    "float": lambda p: p.sum(p.mul(p.input("x", [3]), p.float(p.input("k", [3], dtype="int32")))),
    "element": lambda p: p.element(p.input("x", [3, 4]), [0, -1, 2]),
    "state": _carried,
    "update": _carried,
    "random": lambda p: p.sum(p.mul(p.input("x", [4]), p.random([4], distribution="normal", substream="noise"))),
    "roll": lambda p: p.sum(p.mul(p.input("x", [4]), p.roll(p.input("x2", [4]), -1, axis=1))),
    "checkerboard": lambda p: p.sum(p.mul(p.input("x", [4, 6]), p.checkerboard([4, 6]))),
    "std_error": lambda p: p.std_error(p.input("x", [3])),
    "sort": lambda p: p.sum(p.mul(p.input("x", [5]), p.sort(p.input("y", [5]), 0))),
    "quantile": lambda p: p.sum(p.quantile(p.input("x", [5]), 0.9, axis=0)),
    "bootstrap": lambda p: p.sum(p.mean(p.bootstrap(p.input("x", [2]), resamples=7), axes=[1])),
    "solve": lambda p: p.sum(p.solve(p.input("a", [3, 3]), p.input("b", [3, 2]))),
    "inverse": lambda p: p.sum(p.inverse(p.input("a", [3, 3]))),
    "diagonal": lambda p: p.sum(p.diagonal(p.input("a", [3, 3]))),
}


def build(op: str) -> Program:
    p = Program(f"uses-{op}")
    p.set_loss(BUILDERS[op](p))
    if op == "pretrained_linear":  # it reads its weight from a pinned file
        p.set_weights("w.safetensors", "ab" * 32, 1024)
    return p


def test_every_catalog_op_has_a_program() -> None:
    assert set(BUILDERS) == set(CATALOG)


@pytest.mark.parametrize("op", sorted(CATALOG))
def test_every_catalog_op_builds_into_a_valid_program(op: str) -> None:
    p = build(op)
    valid = p.validate()
    assert isinstance(valid, ValidProgram)
    assert op in {n.op for n in valid.nodes}
    assert valid.loss == p.loss and valid.name == f"uses-{op}"
    seen: set[str] = set()
    for node in valid.nodes:  # topological: every source comes before its user
        assert all(src in seen for sources in node.inputs.values() for src in sources), node
        seen.add(node.id)
    assert seen == {n["id"] for n in p.nodes}


@pytest.mark.parametrize("op", sorted(CATALOG))
def test_every_catalog_program_round_trips(op: str) -> None:
    program = build(op).to_json()
    assert Program.from_json(program).to_json() == program
    text = json.loads(json.dumps(program))
    assert text == program
    first, second = validate(program), validate(text)
    assert first.nodes == second.nodes
    assert (first.loss, first.metrics, first.optimizer, first.loop) == (
        second.loss,
        second.metrics,
        second.optimizer,
        second.loop,
    )


# -- JSON ------------------------------------------------------------------------------------------


def test_to_json_writes_the_program_format() -> None:
    program = mlp().to_json()
    assert program == {
        "format": FORMAT,
        "name": "digits-mlp",
        "nodes": [
            {"id": "x", "op": "input", "params": {"shape": [64], "dtype": "float32", "role": "features"}},
            {"id": "y", "op": "input", "params": {"shape": [], "dtype": "int32", "role": "labels"}},
            {"id": "linear1", "op": "linear", "params": {"features": 128}},
            {"id": "relu1", "op": "relu"},
            {"id": "linear2", "op": "linear", "params": {"features": 10}},
            {"id": "cross_entropy1", "op": "cross_entropy"},
            {"id": "accuracy1", "op": "accuracy"},
        ],
        "edges": [
            {"from": {"node": "x", "port": "out"}, "to": {"node": "linear1", "port": "x"}},
            {"from": {"node": "linear1", "port": "out"}, "to": {"node": "relu1", "port": "x"}},
            {"from": {"node": "relu1", "port": "out"}, "to": {"node": "linear2", "port": "x"}},
            {"from": {"node": "linear2", "port": "out"}, "to": {"node": "cross_entropy1", "port": "logits"}},
            {"from": {"node": "y", "port": "out"}, "to": {"node": "cross_entropy1", "port": "labels"}},
            {"from": {"node": "linear2", "port": "out"}, "to": {"node": "accuracy1", "port": "logits"}},
            {"from": {"node": "y", "port": "out"}, "to": {"node": "accuracy1", "port": "labels"}},
        ],
        "loss": "cross_entropy1",
        "metrics": ["accuracy1"],
        "optimizer": {"kind": "adam", "lr": 1e-3},
        "loop": {"epochs": 2, "batch_size": 16, "shuffle": False},
    }


def test_builder_json_builder_json_is_identical() -> None:
    program = mlp().to_json()
    again = Program.from_json(program)
    assert again.to_json() == program
    assert Program.from_json(again.to_json()).to_json() == program


def test_json_text_round_trip_validates_to_the_same_program() -> None:
    program = mlp().to_json()
    text = json.dumps(program, indent=2)
    reloaded = json.loads(text)
    first, second = validate(program), validate(reloaded)
    assert first.nodes == second.nodes
    assert [n.id for n in first.nodes] == ["x", "y", "linear1", "relu1", "linear2", "cross_entropy1", "accuracy1"]
    assert first.node("linear1").params == {"features": 128, "bias": True, "trainable": True}
    assert first.node("cross_entropy1").inputs == {"logits": ("linear2",), "labels": ("y",)}
    assert second.loss == "cross_entropy1" and second.metrics == ("accuracy1",)
    assert second.optimizer.kind == "adam" and second.optimizer.lr == 1e-3
    assert (second.loop.epochs, second.loop.batch_size, second.loop.shuffle) == (2, 16, False)


def test_to_json_is_a_copy() -> None:
    p = mlp()
    program = p.to_json()
    program["nodes"][2]["params"]["features"] = 7
    program["edges"].clear()
    program["metrics"].append("x")
    assert p.to_json() == mlp().to_json()


def test_from_json_copies_and_keeps_editing() -> None:
    program = mlp().to_json()
    p = Program.from_json(program)
    extra = p.relu(Ref("linear2"))
    assert extra.node == "relu2"  # ids stay unique after loading: relu1 is taken
    p.add_metric(p.mean(extra))
    assert len(program["nodes"]) == 7 and program["metrics"] == ["accuracy1"]  # the source is untouched
    assert p.validate().metrics == ("accuracy1", "mean1")


def test_from_json_validates_first() -> None:
    program = mlp().to_json()
    program["nodes"][2]["op"] = "lineal"
    with pytest.raises(ProgramError) as caught:
        Program.from_json(program)
    assert [(i.node, i.path) for i in caught.value.issues] == [("linear1", "nodes[2].op")]


# -- argument matching -----------------------------------------------------------------------------


def test_positional_values_fill_parameters_in_catalog_order() -> None:
    p = Program()
    x = p.input("x", [16])
    img = p.input("img", [1, 8, 8])
    assert params_of(p, p.linear(x, 128).node) == {"features": 128}
    assert params_of(p, p.conv2d(img, 8, 3).node) == {"out_channels": 8, "kernel": 3}
    assert params_of(p, p.conv2d(img, 8, (3, 5), 2, bias=False).node) == {
        "out_channels": 8,
        "kernel": [3, 5],  # tuples are written as JSON lists
        "stride": 2,
        "bias": False,
    }
    assert params_of(p, p.dropout(x, 0.1).node) == {"p": 0.1}
    assert params_of(p, p.relu(x).node) == {}


def test_validated_parameters_are_normalised_with_defaults() -> None:
    p = Program()
    img = p.input("img", [1, 8, 8])
    conv = p.conv2d(img, 8, 3, id="conv")
    p.set_loss(p.sum(conv))
    params = p.validate().node("conv").params
    assert params == {
        "out_channels": 8,
        "kernel": (3, 3),
        "stride": (1, 1),
        "padding": (0, 0),
        "dilation": (1, 1),
        "groups": 1,
        "bias": True,
        "trainable": True,
    }


def test_tensors_fill_ports_in_order_and_values_may_interleave() -> None:
    p = Program()
    logits, y = p.input("logits", [3]), p.input("y", [], dtype="int32")
    loss = p.cross_entropy(logits, "sum", y)
    assert [(e["from"]["node"], e["to"]["port"]) for e in p.edges] == [("logits", "logits"), ("y", "labels")]
    assert params_of(p, loss.node) == {"reduction": "sum"}
    p.set_loss(loss)
    assert p.validate().node(loss.node).inputs == {"logits": ("logits",), "labels": ("y",)}


def test_a_list_of_tensors_is_one_edge_each_into_a_multi_edge_port() -> None:
    p = Program()
    a, b, c = p.input("a", [2]), p.input("b", [3]), p.input("c", [4])
    joined = p.concat([a, b, c], axis=-1)
    assert params_of(p, joined.node) == {"axis": -1}
    assert p.edges == [
        {"from": {"node": n, "port": "out"}, "to": {"node": joined.node, "port": "xs"}} for n in ("a", "b", "c")
    ]
    p.set_loss(p.sum(joined))
    assert p.validate().node(joined.node).inputs == {"xs": ("a", "b", "c")}


def test_ids_are_automatic_unique_and_may_be_given() -> None:
    p = Program()
    x = p.input("x", [4])
    first, second = p.relu(x), p.relu(x)
    named = p.relu(x, id="relu3")
    after = p.relu(x)
    assert (first.node, second.node, named.node, after.node) == ("relu1", "relu2", "relu3", "relu4")
    assert p.tanh(x, id="my-tanh") == Ref("my-tanh", "out")
    assert p.tanh(x).node == "tanh1"
    ids = [n["id"] for n in p.nodes]
    assert len(ids) == len(set(ids)) == 7


def test_node_and_method_forms_agree() -> None:
    one, two = Program(), Program()
    for p, make in (
        (one, lambda p, x: p.linear(x, 5, bias=False)),
        (two, lambda p, x: p.node("linear", x, 5, bias=False)),
    ):
        make(p, p.input("x", [3]))
    assert one.to_json() == two.to_json()


def test_unknown_op_is_a_clear_value_error() -> None:
    p = Program()
    x = p.input("x", [4])
    with pytest.raises(ValueError, match=r"unknown op 'lineer'; known ops: .*linear"):
        p.node("lineer", x, 3)
    with pytest.raises(AttributeError, match="no attribute or op 'lineer'"):
        p.lineer(x, 3)
    assert [n["id"] for n in p.nodes] == ["x"] and p.edges == []


def test_too_many_tensors_is_a_clear_value_error() -> None:
    p = Program()
    x = p.input("x", [4])
    with pytest.raises(ValueError, match=r"relu has 1 input\(s\), got 2 tensors"):
        p.relu(x, x)
    with pytest.raises(ValueError, match=r"input has 0 input\(s\), got 1 tensors"):
        p.node("input", x, shape=[2])
    assert [n["id"] for n in p.nodes] == ["x"] and p.edges == []


def test_a_parameter_given_twice_is_a_clear_value_error() -> None:
    p = Program()
    x = p.input("x", [4])
    with pytest.raises(ValueError, match=r"linear: parameter 'features' given twice"):
        p.linear(x, 3, features=4)
    with pytest.raises(ValueError, match=r"conv2d: parameter 'kernel' given twice"):
        p.conv2d(x, 8, 3, kernel=5)
    assert [n["id"] for n in p.nodes] == ["x"] and p.edges == []


def test_too_many_positional_values_is_a_clear_value_error() -> None:
    p = Program()
    x = p.input("x", [4])
    with pytest.raises(ValueError, match=r"relu takes 0 parameter\(s\), got 1 positional values"):
        p.relu(x, 3)
    with pytest.raises(ValueError, match=r"linear takes 3 parameter\(s\), got 4 positional values"):
        p.linear(x, 3, True, True, 9)
    assert [n["id"] for n in p.nodes] == ["x"] and p.edges == []


def test_builder_settings_reach_the_valid_program() -> None:
    p = mlp()
    p.set_optimizer("momentum", lr=0.1, momentum=0.8, nesterov=True, schedule={"kind": "cosine", "total_steps": 50})
    p.set_loop(epochs=3, batch_size=8)
    valid = p.validate()
    assert (valid.optimizer.kind, valid.optimizer.lr, valid.optimizer.momentum) == ("momentum", 0.1, 0.8)
    assert valid.optimizer.nesterov is True
    assert (valid.optimizer.schedule.kind, valid.optimizer.schedule.total_steps) == ("cosine", 50)
    assert (valid.loop.epochs, valid.loop.batch_size, valid.loop.shuffle) == (3, 8, True)
