"""The palette JSON the app's editor is built from: every catalog op in order, with categories, and output
kinds that agree with what its builder makes."""

from __future__ import annotations

import json

import pytest
from test_program import build

from scellis import examples
from scellis.graph import CATALOG, palette, validate
from scellis.graph.building import Builder, Mode
from scellis.graph.catalog import DTYPE_KINDS, SPECS
from scellis.graph.validate import build_node
from scellis.ops import DType

KIND_OF = {DType.F32: "float", DType.I32: "int", DType.BOOL: "bool"}


def test_palette_is_strict_json_of_every_op_in_catalog_order() -> None:
    doc = palette()
    assert json.loads(json.dumps(doc, allow_nan=False)) == doc
    assert [op["name"] for op in doc["ops"]] == [spec.name for spec in SPECS] == list(CATALOG)
    for op, spec in zip(doc["ops"], SPECS, strict=True):
        described = spec.describe()
        assert {k: v for k, v in op.items() if k != "outputs"} == {k: v for k, v in described.items() if k != "outputs"}
        assert [o["name"] for o in op["outputs"]] == ["out"]


def test_categories_come_in_order_of_first_use_and_cover_every_op() -> None:
    doc = palette()
    assert doc["categories"][:3] == ["data", "math", "layers"]
    assert len(set(doc["categories"])) == len(doc["categories"])
    assert {op["category"] for op in doc["ops"]} == set(doc["categories"])


def test_required_params_have_no_default_and_the_others_do() -> None:
    linear = next(op for op in palette()["ops"] if op["name"] == "linear")
    params = {p["name"]: p for p in linear["params"]}
    assert "default" not in params["features"] and params["bias"]["default"] is True


def test_input_output_kind_follows_its_dtype_choices() -> None:
    dtype = next(p for p in CATALOG["input"].params if p.name == "dtype")
    assert set(DTYPE_KINDS) == set(dtype.choices)


def lowered_kinds(program: dict) -> dict[str, tuple[str, str]]:
    """node id -> (op, kind of the output its builder makes), for a valid program."""
    valid = validate(program)
    ctx = Builder(valid.loop.batch_size, Mode.TRAIN)
    values = {}
    for node in valid.nodes:
        values[node.id] = build_node(ctx, CATALOG[node.op], node, values)
    return {node.id: (node.op, KIND_OF[values[node.id].dtype]) for node in valid.nodes}


def palette_kind(op: dict, params: dict) -> str:
    out = op["outputs"][0]
    if "kind_param" not in out:
        return out["kind"]
    default = next(p["default"] for p in op["params"] if p["name"] == out["kind_param"])
    return out["kinds"][params.get(out["kind_param"], default)]


PROGRAMS = [
    examples.digits_mlp(),
    examples.digits_cnn(),
    examples.char_transformer(),
    *(build(op).to_json() for op in CATALOG),
]


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p["name"])
def test_output_kinds_agree_with_the_builders(program: dict) -> None:
    ops = {op["name"]: op for op in palette()["ops"]}
    params = {n["id"]: n.get("params", {}) for n in program["nodes"]}
    sources = {e["to"]["node"]: e["from"]["node"] for e in program["edges"]}
    kinds = lowered_kinds(program)
    for nid, (op, kind) in kinds.items():
        expected = palette_kind(ops[op], params[nid])
        if expected == "any":  # an op that moves values: its output is of its input's kind
            expected = kinds[sources[nid]][1]
        assert expected == kind, (nid, op)


def test_the_kind_check_sees_every_op() -> None:
    assert {op for program in PROGRAMS for op, _ in lowered_kinds(program).values()} == set(CATALOG)
