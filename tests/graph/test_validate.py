"""Validation: each class of problem is reported with its node, port or field and a reason; all at once."""

from __future__ import annotations

import copy
import math
import random
from typing import Any

import pytest

from scellis.graph import FORMAT, Issue, Program, ProgramError, ValidProgram, validate
from scellis.graph.errors import show


def classifier() -> dict[str, Any]:
    """x -> h (linear) -> loss (cross_entropy) and acc (accuracy), against labels y."""
    p = Program("classifier")
    x = p.input("x", [4])
    y = p.input("y", [], dtype="int32", role="labels")
    h = p.linear(x, 3, id="h")
    p.set_loss(p.cross_entropy(h, y, id="loss"))
    p.add_metric(p.accuracy(h, y, id="acc"))
    p.set_loop(epochs=1, batch_size=8)
    return p.to_json()


def issues(data: Any) -> list[Issue]:
    with pytest.raises(ProgramError) as caught:
        validate(data)
    found = caught.value.issues
    assert found, "a ProgramError must hold at least one issue"
    assert all(str(i) and i.message for i in found)
    return found


def only(data: Any) -> Issue:
    """The one issue of a program with a single problem (no cascades, no duplicates)."""
    found = issues(data)
    assert len(found) == 1, "\n".join(map(str, found))
    return found[0]


def node_index(data: dict[str, Any], node_id: str) -> int:
    return next(i for i, n in enumerate(data["nodes"]) if n.get("id") == node_id)


def edge(src: str, dst: str, port: str, src_port: str = "out") -> dict[str, Any]:
    return {"from": {"node": src, "port": src_port}, "to": {"node": dst, "port": port}}


def with_loss(build: Any, name: str = "t") -> dict[str, Any]:
    """A program whose loss is the sum of what `build(p)` returns."""
    p = Program(name)
    p.set_loss(p.sum(build(p), id="total"))
    p.set_loop(batch_size=8)
    return p.to_json()


def test_the_base_program_is_valid() -> None:
    valid = validate(classifier())
    assert isinstance(valid, ValidProgram)
    assert [n.id for n in valid.nodes] == ["x", "y", "h", "loss", "acc"]
    assert valid.loss == "loss" and valid.metrics == ("acc",)


def test_nodes_come_in_topological_order_keeping_file_order() -> None:
    data = classifier()
    data["nodes"].reverse()  # acc, loss, h, y, x
    assert [n.id for n in validate(data).nodes] == ["y", "x", "h", "acc", "loss"]


# -- the program object ----------------------------------------------------------------------------


@pytest.mark.parametrize("data", [None, [], "program", 3, 2.5, True, [classifier()]])
def test_a_program_is_an_object(data: Any) -> None:
    issue = only(data)
    assert issue.path == "" and issue.node is None
    assert f"a program is a JSON object, got {type(data).__name__}" == issue.message


@pytest.mark.parametrize("value", ["scellis.program/2", "", None, 1, ["scellis.program/1"]])
def test_bad_format_string(value: Any) -> None:
    data = classifier()
    data["format"] = value
    issue = only(data)
    assert (issue.path, issue.node) == ("format", None)
    assert issue.message == f"must be {FORMAT!r}, got {value!r}"


def test_missing_format() -> None:
    data = classifier()
    del data["format"]
    assert only(data).message == f"must be {FORMAT!r}, got None"


def test_unknown_top_level_field_and_bad_name() -> None:
    data = classifier()
    data["layers"] = []
    data["name"] = 7
    found = {(i.path, i.message.split(" (")[0]) for i in issues(data)}
    assert found == {("layers", "unknown field"), ("name", "must be a string")}


@pytest.mark.parametrize("nodes", [None, [], {}, "x"])
def test_nodes_must_be_a_non_empty_list(nodes: Any) -> None:
    data = classifier()
    data["nodes"], data["edges"], data["metrics"] = nodes, [], []
    issue = only(data)  # the loss names a node: whether it exists is unknown, so it is not reported
    assert (issue.path, issue.node, issue.message) == ("nodes", None, "must be a non-empty list of nodes")


# -- nodes -----------------------------------------------------------------------------------------


def test_unknown_op() -> None:
    data = classifier()
    data["nodes"][node_index(data, "h")]["op"] = "lineer"
    issue = only(data)  # edges from and to h, and the loss reading h, are not reported again
    assert (issue.path, issue.node, issue.port) == ("nodes[2].op", "h", None)
    assert issue.message == "unknown op 'lineer'"
    assert str(issue) == "node 'h' (nodes[2].op): unknown op 'lineer'"


@pytest.mark.parametrize("op", [None, 3, ["linear"], {"op": "linear"}, "Linear", ""])
def test_an_op_that_is_not_a_catalog_name(op: Any) -> None:
    data = classifier()
    data["nodes"][2]["op"] = op
    issue = only(data)
    assert (issue.path, issue.node) == ("nodes[2].op", "h") and issue.message == f"unknown op {op!r}"


@pytest.mark.parametrize("node_id", ["", "1h", "h.x", "h x", "a" * 65, "ünï"])
def test_bad_node_id(node_id: str) -> None:
    data = classifier()
    data["nodes"][2]["id"] = node_id
    for e in data["edges"]:
        for end in (e["from"], e["to"]):
            end["node"] = node_id if end["node"] == "h" else end["node"]
    issue = only(data)  # the edges naming the node are not reported again, nor the ports they reach
    assert (issue.path, issue.node) == ("nodes[2].id", None)
    assert (
        issue.message == f"must be a name of letters, digits, _ or - (not starting with a digit), got {show(node_id)}"
    )


@pytest.mark.parametrize("node_id", [None, 5, ["h"]])
def test_node_id_that_is_not_a_string(node_id: Any) -> None:
    data = classifier()
    data["nodes"][2]["id"] = node_id
    found = issues(data)
    assert (found[0].path, found[0].node) == ("nodes[2].id", None)
    assert found[0].message.endswith(f"got {node_id!r}")
    # the edges still name 'h', which no node has now
    assert {i.path for i in found[1:]} == {"edges[0].to.node", "edges[1].from.node", "edges[3].from.node"}


def test_duplicate_node_id() -> None:
    data = classifier()
    data["nodes"].append(copy.deepcopy(data["nodes"][2]))
    issue = only(data)
    assert (issue.path, issue.node, issue.message) == ("nodes[5].id", "h", "is used by another node")


def test_node_that_is_not_an_object() -> None:
    data = classifier()
    data["nodes"].append(["relu"])
    issue = only(data)
    assert (issue.path, issue.message) == ("nodes[5]", "a node is an object, got list")


def test_unknown_node_field() -> None:
    data = classifier()
    data["nodes"][2]["weights"] = [1, 2]
    issue = only(data)
    assert (issue.path, issue.node) == ("nodes[2].weights", "h")
    assert issue.message.startswith("unknown field (known: id, op, params, label, position)")


def test_label_and_position_are_accepted() -> None:
    data = classifier()
    data["nodes"][2].update(label="hidden layer", position={"x": 10, "y": 20})
    assert validate(data).node("h").params["features"] == 3


# -- edges: missing, extra, dangling ---------------------------------------------------------------


def test_missing_input_is_an_unconnected_port() -> None:
    data = classifier()
    data["edges"] = [e for e in data["edges"] if e["to"] != {"node": "loss", "port": "labels"}]
    issue = only(data)
    assert (issue.path, issue.node, issue.port) == ("edges", "loss", "labels")
    assert issue.message == "input 'labels' of cross_entropy is not connected"


def test_every_unconnected_port_is_reported() -> None:
    data = classifier()
    data["edges"] = [e for e in data["edges"] if e["to"]["node"] != "acc"]
    found = issues(data)
    assert [(i.node, i.port) for i in found] == [("acc", "logits"), ("acc", "labels")]


def test_extra_input_to_a_port_the_op_does_not_have() -> None:
    data = classifier()
    data["edges"].append(edge("x", "h", "bias"))
    issue = only(data)
    assert (issue.path, issue.node, issue.port) == ("edges[5].to.port", "h", "bias")
    assert issue.message == "linear has no input port 'bias' (it has: x)"


def test_extra_input_to_an_op_without_inputs() -> None:
    data = classifier()
    data["edges"].append(edge("x", "y", "x"))
    issue = only(data)
    assert (issue.path, issue.node, issue.port) == ("edges[5].to.port", "y", "x")
    assert issue.message == "input has no input port 'x' (it has: none)"


def test_two_edges_into_a_single_port() -> None:
    data = classifier()
    data["edges"].append(edge("x", "h", "x"))
    issue = only(data)
    assert (issue.path, issue.node, issue.port) == ("edges", "h", "x")
    assert issue.message == "input 'x' takes one edge, 2 are connected"


def test_an_edge_from_a_port_that_is_not_out() -> None:
    data = classifier()
    data["edges"][0]["from"]["port"] = "x"
    issue = only(data)  # h's input counts as connected: no second report
    assert (issue.path, issue.node, issue.port) == ("edges[0].from.port", "x", "x")
    assert issue.message == "input has one output port, 'out'"


def test_dangling_edge_from_a_missing_node() -> None:
    data = classifier()
    data["edges"][0]["from"]["node"] = "ghost"
    issue = only(data)  # and h's port x is not reported as unconnected besides
    assert (issue.path, issue.node, issue.port) == ("edges[0].from.node", None, None)
    assert issue.message == "dangling edge: there is no node 'ghost'"


def test_dangling_edge_to_a_missing_node() -> None:
    data = classifier()
    data["edges"].append(edge("h", "ghost", "x"))
    issue = only(data)
    assert (issue.path, issue.message) == ("edges[5].to.node", "dangling edge: there is no node 'ghost'")


def test_dangling_edge_at_both_ends() -> None:
    data = classifier()
    data["edges"].append(edge("ghost", "phantom", "x"))
    found = issues(data)
    assert [(i.path, i.message) for i in found] == [
        ("edges[5].from.node", "dangling edge: there is no node 'ghost'"),
        ("edges[5].to.node", "dangling edge: there is no node 'phantom'"),
    ]


EDGE_SHAPE = 'an edge is {"from": {"node": ..., "port": ...}, "to": {...}} and nothing else'
END_SHAPE = 'must be {"node": <node id>, "port": <port name>}'


@pytest.mark.parametrize(
    ("bad", "path", "message"),
    [
        ({"from": {"node": "x", "port": "out"}}, "edges[0]", EDGE_SHAPE),
        ({"from": {"node": "x", "port": "out"}, "to": {"node": "h", "port": "x"}, "via": 1}, "edges[0]", EDGE_SHAPE),
        ("x->h", "edges[0]", EDGE_SHAPE),
        (None, "edges[0]", EDGE_SHAPE),
        ({"from": {"node": "x", "port": "out"}, "to": ["h", "x"]}, "edges[0].to", END_SHAPE),
        ({"from": {"node": "x", "port": "out"}, "to": {"node": "h", "port": None}}, "edges[0].to", END_SHAPE),
    ],
)
def test_malformed_edge(bad: Any, path: str, message: str) -> None:
    data = classifier()
    data["edges"][0] = bad  # the edge x -> h.x; where it goes is unknown, so h.x is unconnected
    found = issues(data)
    assert [(i.path, i.node, i.port, i.message) for i in found] == [
        (path, None, None, message),
        ("edges", "h", "x", "input 'x' of linear is not connected"),
    ]


@pytest.mark.parametrize("src", [{"node": "x"}, {"node": 3, "port": "out"}, "x", {"port": "out"}])
def test_malformed_edge_source(src: Any) -> None:
    data = classifier()
    data["edges"][0]["from"] = src
    issue = only(data)  # the edge reaches h.x: that port is not reported as unconnected besides
    assert (issue.path, issue.node, issue.message) == ("edges[0].from", None, END_SHAPE)


def test_edges_must_be_a_list() -> None:
    data = classifier()
    data["edges"] = {"x": "h"}
    found = issues(data)
    assert found[0].path == "edges" and found[0].message == "must be a list of edges"


# -- cycles ----------------------------------------------------------------------------------------


def cyclic() -> dict[str, Any]:
    """x -> a (add, also fed by c) -> b (relu) -> c (tanh) -> a: a cycle; d (sum of c) depends on it."""
    p = Program("cyclic")
    x = p.input("x", [4])
    a = p.node("add", x, id="a")
    b = p.relu(a, id="b")
    c = p.tanh(b, id="c")
    p.edges.append(edge(c.node, a.node, "b"))
    p.set_loss(p.sum(c, id="d"))
    return p.to_json()


def test_cycle_reports_every_node_on_it() -> None:
    found = issues(cyclic())
    assert [(i.path, i.node) for i in found] == [("edges", "a"), ("edges", "b"), ("edges", "c")]
    for issue in found:
        assert issue.message == "is part of a cycle through 'a', 'b', 'c': a program must be acyclic"
    # d only depends on the cycle, and the loss names d: neither is reported as a problem of its own


def test_a_node_feeding_itself_is_a_cycle() -> None:
    p = Program()
    x = p.input("x", [4])
    m = p.node("mul", x, id="m")
    p.edges.append(edge("m", "m", "b"))
    p.set_loss(p.sum(m))
    issue = only(p.to_json())
    assert (issue.node, issue.message) == ("m", "is its own input (a cycle): a program must be acyclic")


def test_two_separate_cycles_and_a_node_between_them() -> None:
    p = Program()
    x = p.input("x", [4])
    a = p.node("add", x, id="a")
    b = p.relu(a, id="b")
    p.edges.append(edge("b", "a", "b"))
    mid = p.neg(b, id="mid")  # downstream of the first cycle, upstream of the second: not on a cycle
    c = p.node("add", mid, id="c")
    p.edges.append(edge("c", "c", "b"))
    p.set_loss(p.sum(c))
    found = issues(p.to_json())
    assert [i.node for i in found] == ["a", "b", "c"]
    assert "'a', 'b'" in found[0].message and "its own input" in found[2].message


def on_cycles(feeds: dict[str, list[str]]) -> set[str]:
    """The nodes that reach themselves, by brute force (node -> the nodes feeding it)."""
    users = {n: [u for u, sources in feeds.items() if n in sources] for n in feeds}

    def reaches_itself(start: str) -> bool:
        seen, todo = set(), list(users[start])
        while todo:
            nid = todo.pop()
            if nid == start:
                return True
            if nid not in seen:
                seen.add(nid)
                todo.extend(users[nid])
        return False

    return {n for n in feeds if reaches_itself(n)}


def test_cycle_reports_exactly_the_nodes_on_cycles_of_random_graphs() -> None:
    rng = random.Random(7)
    cyclic_graphs = 0
    for _ in range(200):
        count = rng.randint(1, 9)
        feeds = {f"n{i}": [rng.choice(["x", *(f"n{j}" for j in range(count))]) for _ in "ab"] for i in range(count)}
        data = {
            "format": FORMAT,
            "nodes": [{"id": "x", "op": "input", "params": {"shape": [2]}}]
            + [{"id": nid, "op": "add"} for nid in feeds]
            + [{"id": "total", "op": "sum"}],
            "edges": [edge(src, nid, port) for nid, srcs in feeds.items() for src, port in zip(srcs, "ab", strict=True)]
            + [edge("n0", "total", "x")],
            "loss": "total",
        }
        expected = on_cycles(feeds)
        if not expected:
            validate(data)
            continue
        cyclic_graphs += 1
        found = issues(data)
        assert {i.node for i in found} == expected, feeds
        assert all("cycle" in i.message and i.path == "edges" for i in found), feeds
    assert cyclic_graphs >= 50


# -- types: shapes and dtypes ----------------------------------------------------------------------


def test_matmul_inner_dimensions_differ() -> None:
    data = with_loss(lambda p: p.matmul(p.input("a", [2, 3]), p.input("b", [4, 5]), id="mm"))
    issue = only(data)
    assert (issue.path, issue.node, issue.port) == ("nodes", "mm", "b")
    assert "inner dimensions differ" in issue.message and "k=3 vs 4" in issue.message


def test_cross_entropy_labels_of_the_wrong_shape() -> None:
    data = classifier()
    data["nodes"][node_index(data, "y")]["params"]["shape"] = [2]
    found = issues(data)  # the loss and the metric both read y
    assert [(i.node, i.port) for i in found] == [("loss", "labels"), ("acc", "labels")]
    assert found[0].message == "labels (8, 2) must have the shape of logits (8, 3) without the class axis"


def test_mse_target_of_the_wrong_shape() -> None:
    p = Program()
    pred = p.input("pred", [3])
    target = p.input("target", [4], role="labels")
    p.set_loss(p.mse(pred, target, id="err"))
    issue = only(p.to_json())
    assert (issue.node, issue.port) == ("err", "target")
    assert issue.message == "target (64, 4) must have the shape of pred (64, 3)"


def test_binary_shapes_that_do_not_broadcast() -> None:
    issue = only(with_loss(lambda p: p.add(p.input("a", [3]), p.input("b", [4]), id="s")))
    assert (issue.node, issue.port) == ("s", "b") and "do not broadcast" in issue.message


def test_concat_shape_mismatch_names_the_multi_edge_port() -> None:
    data = with_loss(lambda p: p.concat([p.input("a", [2, 3]), p.input("b", [4, 3])], axis=-1, id="cat"))
    issue = only(data)
    assert (issue.node, issue.port) == ("cat", "xs") and "does not fit" in issue.message


def test_conv2d_needs_nchw_input() -> None:
    issue = only(with_loss(lambda p: p.conv2d(p.input("x", [8, 8]), 4, 3, id="conv")))
    assert (issue.node, issue.port) == ("conv", "x")
    assert issue.message == "conv2d needs NCHW input (batch, channels, height, width), got (8, 8, 8)"


def test_kernel_larger_than_the_image() -> None:
    issue = only(with_loss(lambda p: p.max_pool2d(p.input("x", [1, 4, 4]), 5, id="pool")))
    assert (issue.node, issue.port) == ("pool", "x") and "does not fit" in issue.message


def test_reshape_to_a_different_size() -> None:
    issue = only(with_loss(lambda p: p.reshape(p.input("x", [2, 3]), [4, -1], id="r")))
    assert (issue.node, issue.port) == ("r", "x")
    assert issue.message == "cannot reshape an example of shape (2, 3) to (4, -1)"


def test_a_parameter_that_does_not_fit_the_input_has_no_port() -> None:
    issue = only(with_loss(lambda p: p.permute(p.input("x", [2, 3]), [0, 2], id="perm")))
    assert (issue.path, issue.node, issue.port) == ("nodes", "perm", None)
    assert issue.message == "perm [0, 2] must order the 2 axes of one example"


def test_axis_out_of_range() -> None:
    issue = only(with_loss(lambda p: p.softmax(p.input("x", [3]), 2, id="sm")))
    assert issue.node == "sm" and issue.message == "axis 2 is out of range for a tensor of 2 dimensions"


@pytest.mark.parametrize("op", ["flatten", "reshape", "permute", "slice"])
def test_shape_ops_on_a_scalar_constant(op: str) -> None:
    params = {"reshape": {"shape": [1]}, "permute": {"perm": []}, "slice": {"starts": [], "stops": []}}
    data = with_loss(lambda p: p.node(op, p.constant(2.0), id="s", **params.get(op, {})))
    issue = only(data)
    assert (issue.node, issue.port) == ("s", "x")
    assert issue.message == f"{op} acts on the axes of each example, but its input is a scalar without a batch axis"


def test_float_into_an_int_port() -> None:
    data = classifier()
    data["nodes"][node_index(data, "y")]["params"]["dtype"] = "float32"
    found = issues(data)
    assert [(i.node, i.port) for i in found] == [("loss", "labels"), ("acc", "labels")]
    assert found[0].message == "expects int (int32), got float32"


def test_float_into_embedding_indices() -> None:
    issue = only(with_loss(lambda p: p.embedding(p.input("tokens", [5]), 10, 4, id="emb")))
    assert (issue.node, issue.port, issue.message) == ("emb", "indices", "expects int (int32), got float32")


def test_int_into_a_float_port() -> None:
    issue = only(with_loss(lambda p: p.relu(p.input("tokens", [5], dtype="int32"), id="act")))
    assert (issue.path, issue.node, issue.port) == ("nodes", "act", "x")
    assert issue.message == "expects float (float32), got int32"


def test_bool_into_a_float_port_and_float_into_a_bool_port() -> None:
    def build(p: Program) -> Any:
        a, b = p.input("a", [3]), p.input("b", [3])
        flag = p.less(a, b, id="flag")
        p.add_metric(p.sum(p.relu(flag, id="act")))
        return p.where(a, a, b, id="pick")

    found = issues(with_loss(build))
    assert [(i.node, i.port, i.message) for i in found] == [
        ("act", "x", "expects float (float32), got bool"),
        ("pick", "cond", "expects bool (bool), got float32"),
    ]


# -- parameters ------------------------------------------------------------------------------------


INT32 = "must be an integer from -2147483647 to 2147483647"


@pytest.mark.parametrize(
    ("params", "name", "message"),
    [
        ({"features": "3"}, "features", "must be an integer, got '3'"),
        ({"features": 3.0}, "features", "must be an integer, got 3.0"),
        ({"features": True}, "features", "must be an integer, got True"),
        ({"features": None}, "features", "must be an integer, got None"),
        ({"features": 0}, "features", "must be at least 1, got 0"),
        ({"features": -5}, "features", "must be at least 1, got -5"),
        ({"features": 2**31}, "features", "must be an integer from -2147483647 to 2147483647, got 2147483648"),
        (
            {"features": -(10**5000)},
            "features",
            "must be an integer from -2147483647 to 2147483647, got -<an integer of 16610 bits>",
        ),
        ({"features": 3, "bias": 1}, "bias", "must be true or false, got 1"),
        ({"features": 3, "trainable": "yes"}, "trainable", "must be true or false, got 'yes'"),
    ],
)
def test_bad_parameter_value(params: dict[str, Any], name: str, message: str) -> None:
    data = classifier()
    data["nodes"][2]["params"] = params
    issue = only(data)  # the loss and the metric downstream of h are not reported
    assert (issue.path, issue.node, issue.port) == (f"nodes[2].params.{name}", "h", None)
    assert issue.message == message


@pytest.mark.parametrize(
    ("op", "params", "name", "message"),
    [
        ("dropout", {"p": 1.5}, "p", "must be at most 0.99, got 1.5"),
        ("dropout", {"p": math.nan}, "p", "must be a finite number, got nan"),
        ("dropout", {"p": math.inf}, "p", "must be a finite number, got inf"),
        ("dropout", {"p": "0.5"}, "p", "must be a finite number, got '0.5'"),
        ("dropout", {"p": 10**400}, "p", "must be a finite number, got <an integer of 1329 bits>"),
        ("gelu", {"approximate": "erf"}, "approximate", "must be one of 'tanh', 'none', got 'erf'"),
        ("sum", {"axes": [1, "2"]}, "axes", "must be a list of integers, got [1, '2']"),
        ("sum", {"axes": 1}, "axes", "must be a list of integers, got 1"),
        ("max_pool2d", {"kernel": [2, 2, 2]}, "kernel", "must be an integer or a list of two integers, got [2, 2, 2]"),
        ("max_pool2d", {"kernel": [2, 0]}, "kernel", "must be at least 1, got 0"),
        ("max_pool2d", {"kernel": 2, "stride": 0}, "stride", "must be at least 1, got 0"),
    ],
)
def test_bad_parameter_value_of_each_kind(op: str, params: dict[str, Any], name: str, message: str) -> None:
    data = with_loss(lambda p: p.node(op, p.input("x", [1, 4, 4]), id="n", **params))
    issue = only(data)
    assert (issue.path, issue.node, issue.message) == (f"nodes[1].params.{name}", "n", message)


def test_unknown_parameter() -> None:
    data = classifier()
    data["nodes"][2]["params"]["units"] = 3
    issue = only(data)
    assert (issue.path, issue.node) == ("nodes[2].params.units", "h")
    assert issue.message == "linear has no parameter 'units' (it has: features, bias, trainable)"


def test_unknown_parameter_of_an_op_without_parameters() -> None:
    data = with_loss(lambda p: p.relu(p.input("x", [3]), id="act"))
    data["nodes"][1]["params"] = {"inplace": True}
    issue = only(data)
    assert (issue.path, issue.message) == ("nodes[1].params.inplace", "relu has no parameter 'inplace' (it has: none)")


def test_missing_required_parameter() -> None:
    data = classifier()
    del data["nodes"][2]["params"]
    issue = only(data)
    assert (issue.path, issue.node, issue.message) == ("nodes[2].params.features", "h", "linear needs 'features'")


def test_params_must_be_an_object() -> None:
    data = classifier()
    data["nodes"][2]["params"] = [3]
    issue = only(data)
    assert (issue.path, issue.node, issue.message) == ("nodes[2].params", "h", "must be an object")


# -- optimizer and loop ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("optimizer", "path", "message"),
    [
        ({"kind": "adagrad"}, "optimizer.kind", "must be one of 'sgd', 'momentum', 'adam', 'adamw', got 'adagrad'"),
        ({"lr": 0.1}, "optimizer.kind", "is required"),
        ({"kind": "adam", "lr": -0.1}, "optimizer.lr", "must be at least 0, got -0.1"),
        ({"kind": "adam", "lr": "fast"}, "optimizer.lr", "must be a finite number, got 'fast'"),
        ({"kind": "sgd", "momentum": 0.9}, "optimizer.momentum", "unknown setting"),
        ({"kind": "adam", "nesterov": True}, "optimizer.nesterov", "unknown setting"),
        ({"kind": "momentum", "momentum": 1.5}, "optimizer.momentum", "must be at most 1, got 1.5"),
        ({"kind": "adamw", "beta2": 1.0}, "optimizer.beta2", "must be at most 0.999999, got 1.0"),
        ({"kind": "adam", "clip_norm": -1}, "optimizer.clip_norm", "must be at least 0, got -1.0"),
        ({"kind": "adam", "schedule": {"kind": "linear"}}, "optimizer.schedule.kind", "must be one of"),
        ({"kind": "adam", "schedule": {"step_size": 0}}, "optimizer.schedule.step_size", "must be at least 1"),
        ({"kind": "adam", "schedule": {"decay": 2}}, "optimizer.schedule.decay", "unknown setting"),
        ({"kind": "adam", "schedule": [1]}, "optimizer.schedule", "must be an object, got list"),
        ("adam", "optimizer", "must be an object, got str"),
    ],
)
def test_bad_optimizer_settings(optimizer: Any, path: str, message: str) -> None:
    data = classifier()
    data["optimizer"] = optimizer
    issue = only(data)
    assert (issue.path, issue.node, issue.port) == (path, None, None)
    assert issue.message.startswith(message)


@pytest.mark.parametrize(
    ("loop", "path", "message"),
    [
        ({"batch_size": 0}, "loop.batch_size", "must be at least 1, got 0"),
        ({"batch_size": 20_000_000}, "loop.batch_size", "must be at most 16777216, got 20000000"),
        ({"epochs": -1}, "loop.epochs", "must be at least 1, got -1"),
        ({"shuffle": "no"}, "loop.shuffle", "must be true or false, got 'no'"),
        (
            {"repeat": 1},
            "loop.repeat",
            "unknown setting (known: batch_size, epochs, evaluate_every, rules, shuffle, steps)",
        ),
        (
            {"steps": 10},
            "loop.steps",
            "a program with input nodes runs one step per batch of its training split: remove steps",
        ),
        (None, "loop", "must be an object, got NoneType"),
    ],
)
def test_bad_loop_settings(loop: Any, path: str, message: str) -> None:
    data = classifier()
    data["loop"] = loop
    issue = only(data)  # a bad batch size is not used to type-check the nodes (no cascade)
    assert (issue.path, issue.node, issue.message) == (path, None, message)


def test_settings_default_when_absent() -> None:
    data = classifier()
    del data["optimizer"], data["loop"]
    valid = validate(data)
    assert (valid.optimizer.kind, valid.optimizer.lr, valid.loop.batch_size, valid.loop.epochs) == (
        "adam",
        1e-3,
        64,
        10,
    )


# -- loss and metrics ------------------------------------------------------------------------------


@pytest.mark.parametrize("loss", ["ghost", 3, ["loss"]])
def test_loss_naming_a_missing_node(loss: Any) -> None:
    data = classifier()
    data["loss"] = loss
    issue = only(data)
    assert (issue.path, issue.node, issue.message) == ("loss", None, f"must name a node of the program, got {loss!r}")


def test_loss_must_be_a_float_scalar() -> None:
    data = classifier()
    data["loss"] = "h"
    issue = only(data)
    assert (issue.path, issue.node, issue.message) == ("loss", "h", "must be a float scalar, but it is f32[8,3]")


def test_metrics_naming_missing_or_non_scalar_nodes() -> None:
    data = classifier()
    data["metrics"] = ["acc", "ghost", "x", "y"]
    found = issues(data)
    assert [(i.path, i.node, i.message) for i in found] == [
        ("metrics[1]", None, "must name a node of the program, got 'ghost'"),
        ("metrics[2]", "x", "must be a float scalar, but it is f32[8,4]"),
        ("metrics[3]", "y", "must be a float scalar, but it is i32[8]"),
    ]


def test_metrics_must_be_a_list_without_repeats_or_the_loss() -> None:
    data = classifier()
    data["metrics"] = "acc"
    assert [(i.path, i.message) for i in issues(data)] == [("metrics", "must be a list of node ids")]
    data["metrics"] = ["acc", "acc"]
    assert [(i.path, i.message) for i in issues(data)] == [("metrics", "lists a node twice")]
    data["metrics"] = ["loss"]
    issue = only(data)
    assert (issue.path, issue.node) == ("metrics", "loss") and "do not list it as a metric" in issue.message


# -- everything at once, and nothing twice ---------------------------------------------------------


def test_independent_problems_are_all_reported_at_once() -> None:
    data = classifier()
    data["format"] = "scellis.program/0"
    data["nodes"][node_index(data, "x")]["params"]["shape"] = [0]
    data["nodes"][node_index(data, "acc")]["op"] = "precision"
    data["nodes"].append({"id": "extra", "op": "relu"})
    data["edges"].append(edge("ghost", "h", "x"))
    data["optimizer"] = {"kind": "adam", "lr": -1}
    data["loop"] = {"batch_size": 0}
    data["metrics"].append("nowhere")
    with pytest.raises(ProgramError) as caught:
        validate(data)
    found = {(i.path, i.node, i.port) for i in caught.value.issues}
    assert found == {
        ("format", None, None),
        ("nodes[0].params.shape", "x", None),
        ("nodes[4].op", "acc", None),
        ("edges[5].from.node", None, None),
        ("edges", "h", "x"),  # the dangling edge makes two into h's single port x
        ("edges", "extra", "x"),
        ("loop.batch_size", None, None),
        ("optimizer.lr", None, None),
        ("metrics[1]", None, None),
    }
    assert len(caught.value.issues) == len(found)
    text = str(caught.value)
    assert text.startswith(f"the program has {len(found)} problem(s):\n  - ")
    assert "node 'acc' (nodes[4].op): unknown op 'precision'" in text


def test_problems_downstream_of_a_broken_node_are_not_cascades() -> None:
    p = Program()
    x = p.input("x", [4])
    y = p.input("y", [], dtype="int32", role="labels")
    bad = p.linear(x, 0, id="bad")  # a bad parameter: its output type is unknown
    deep = p.linear(p.relu(p.tanh(bad)), 3, id="deep")
    p.set_loss(p.cross_entropy(deep, y, id="loss"))
    p.add_metric(p.accuracy(deep, y))
    p.add_metric(p.mean(bad, id="avg"))
    issue = only(p.to_json())
    assert (issue.path, issue.node) == ("nodes[2].params.features", "bad")


def test_a_type_error_upstream_is_reported_once() -> None:
    p = Program()
    mm = p.matmul(p.input("a", [2, 3]), p.input("b", [4, 5]), id="mm")
    h = p.softmax(p.relu(mm), 1)
    p.set_loss(p.mean(p.linear(h, 2)))
    p.add_metric(p.sum(h))
    issue = only(p.to_json())
    assert (issue.node, issue.port) == ("mm", "b")


def test_a_broken_node_does_not_hide_independent_problems_downstream() -> None:
    data = classifier()
    data["nodes"][2]["params"]["features"] = 0
    data["nodes"][node_index(data, "loss")]["params"] = {"reduction": "avg"}
    data["edges"].append(edge("x", "acc", "weights"))
    found = {(i.path, i.node, i.port) for i in issues(data)}
    assert found == {
        ("nodes[2].params.features", "h", None),
        ("nodes[3].params.reduction", "loss", None),
        ("edges[5].to.port", "acc", "weights"),
    }


def test_issues_serialise() -> None:
    data = classifier()
    data["edges"][0]["to"]["port"] = "input"
    found = issues(data)
    assert found[0].to_json() == {
        "path": "edges[0].to.port",
        "node": "h",
        "port": "input",
        "message": "linear has no input port 'input' (it has: x)",
    }
    assert str(found[0]) == "node 'h', port 'input': linear has no input port 'input' (it has: x)"


def test_editor_fields_are_checked() -> None:
    from scellis.graph import Program

    p = Program("editor")
    x = p.input("x", [3])
    p.set_loss(p.sum(x, id="total"))
    data = p.to_json()
    data["nodes"][0]["label"] = "pixels"
    data["nodes"][0]["position"] = {"x": 10, "y": 20.5}
    validate(data)
    data["nodes"][0]["label"] = 5
    data["nodes"][0]["position"] = {"x": 1, "y": float("inf")}
    with pytest.raises(ProgramError) as err:
        validate(data)
    paths = sorted(issue.path for issue in err.value.issues)
    assert paths == ["nodes[0].label", "nodes[0].position"]
