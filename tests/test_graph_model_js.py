"""The graph editor's pure model (app/src/graph/*.js) under Node: the palette from the engine's catalog,
graph <-> program JSON (exact for every example), the automatic layout, the edits and connection rules,
copy/paste, undo/redo, validation issues put onto the drawing, and program text in and out. Python
writes the inputs (examples, catalog, the validator's issues) as JSON for the JS, and checks its answers
with the engine."""

from __future__ import annotations

import copy
import inspect
import json
from pathlib import Path
from typing import Any

import pytest
from nodejs import run_node

from scellis import examples
from scellis.graph import ProgramError, palette, validate

ROOT = Path(__file__).resolve().parents[1]
SRC = (ROOT / "app" / "src" / "graph").as_uri()

# Every example program; a new example in scellis.examples must be added here (test below).
EXAMPLES = {
    "digits_mlp": examples.digits_mlp(),
    "digits_cnn": examples.digits_cnn(),
    "char_transformer": examples.char_transformer(),
    "deep_chain": examples.deep_chain(24),
    "mlp": examples.mlp(784, [512, 512], 10, 64),
    "option_pricing": examples.option_pricing(),
    "ising": examples.ising(),
    "logistic_bootstrap": examples.logistic_bootstrap(),
}
# an IR function for the RNG tests, the analytic checks, and the example index: not programs
NOT_PROGRAMS = {"random_draws", "black_scholes_call", "onsager_magnetisation", "catalogue"}

PRELUDE = f"""
import assert from "node:assert/strict";
import {{ readFileSync }} from "node:fs";
import * as palette from "{SRC}/palette.js";
import * as model from "{SRC}/model.js";
import * as layout from "{SRC}/layout.js";
import * as edits from "{SRC}/edits.js";
import * as wiring from "{SRC}/wiring.js";
import * as history from "{SRC}/history.js";
import * as issues from "{SRC}/issues.js";
import * as io from "{SRC}/io.js";
const input = JSON.parse(readFileSync(process.argv[2], "utf8"));
const ops = palette.opIndex(input.catalog ?? {{ ops: [] }});
// Edits must never write to their input: a frozen graph throws on any write (modules are strict).
const deepFreeze = (v) => {{
  if (v && typeof v === "object") {{ Object.values(v).forEach(deepFreeze); Object.freeze(v); }}
  return v;
}};
const plain = (v) => JSON.parse(JSON.stringify(v, (k, x) => (x instanceof Map ? Object.fromEntries(x) : x)));
const out = {{}};
"""


def run_js(body: str, **inputs: Any) -> Any:
    return run_node(PRELUDE, body, inputs)


def issues_of(program: dict[str, Any]) -> list[dict[str, Any]]:
    with pytest.raises(ProgramError) as err:
        validate(program)
    return [issue.to_json() for issue in err.value.issues]


def index_of(program: dict[str, Any], node_id: str) -> int:
    return next(i for i, n in enumerate(program["nodes"]) if n["id"] == node_id)


def edge_into(program: dict[str, Any], node_id: str, port: str) -> int:
    return next(i for i, e in enumerate(program["edges"]) if e["to"] == {"node": node_id, "port": port})


# -- graph <-> program -------------------------------------------------------------------------------


def test_every_example_is_listed() -> None:
    public = {n for n, f in inspect.getmembers(examples, inspect.isfunction) if f.__module__ == examples.__name__}
    assert public == set(EXAMPLES) | NOT_PROGRAMS


def test_every_example_round_trips_exactly() -> None:
    out = run_js(
        """
for (const [name, program] of Object.entries(input.examples)) {
  const graph = model.toGraph(deepFreeze(structuredClone(program)));
  const back = model.toProgram(graph, model.restOf(program));
  assert.equal(JSON.stringify(back), JSON.stringify(program), name); // same text: same order of everything
  out[name] = { graph, back };
}
""",
        examples=EXAMPLES,
    )
    for name, program in EXAMPLES.items():
        graph, back = out[name]["graph"], out[name]["back"]
        assert back == program  # (the text and its order are compared in JS: Python writes 100.0 as 100.0)
        assert [n["id"] for n in graph["nodes"]] == [n["id"] for n in program["nodes"]]
        for node, source in zip(graph["nodes"], program["nodes"], strict=True):
            assert set(node) == {"id", "type", "position", "data"} and node["type"] == "op"
            assert node["data"] == {"op": source["op"], "params": source.get("params", {}), "placed": False}
        for edge, source in zip(graph["edges"], program["edges"], strict=True):
            assert (edge["source"], edge["sourceHandle"]) == (source["from"]["node"], source["from"]["port"])
            assert (edge["target"], edge["targetHandle"]) == (source["to"]["node"], source["to"]["port"])
        assert len({e["id"] for e in graph["edges"]}) == len(graph["edges"])
        validate(back)


def test_positions_live_in_the_programs_own_field_and_only_where_known() -> None:
    program = copy.deepcopy(EXAMPLES["digits_mlp"])
    program["nodes"][0]["position"] = {"x": 10, "y": -20.5}
    validate(program)  # the format has a position field for the editor: no need to keep them beside
    out = run_js(
        """
const program = input.program;
out.same = model.toProgram(model.toGraph(program), model.restOf(program));
const graph = model.toGraph(program, { relu: { x: 1, y: 2 } });
out.placed = graph.nodes.filter((n) => n.data.placed).map((n) => [n.id, n.position]);
out.given = model.toProgram(graph, model.restOf(program));
""",
        program=program,
    )
    assert json.dumps(out["same"]) == json.dumps(program)
    assert out["placed"] == [["pixels", {"x": 10, "y": -20.5}], ["relu", {"x": 1, "y": 2}]]
    positions = {n["id"]: n.get("position") for n in out["given"]["nodes"]}
    assert positions["relu"] == {"x": 1, "y": 2} and positions["hidden"] is None
    validate(out["given"])


def test_a_broken_program_round_trips_too() -> None:
    program = copy.deepcopy(EXAMPLES["digits_mlp"])
    program["nodes"][2].update({"label": "first layer", "color": "red", "__proto__": {"x": 1}})
    program["nodes"][3]["op"] = "no_such_op"
    program["nodes"].append({"id": "9bad", "op": "relu", "params": {}})
    program["extra"] = [1, 2]
    program["toString"] = "a field like any other"
    program["__proto__"] = {"polluted": True}
    out = run_js(
        """
const program = input.program;
out.back = model.toProgram(model.toGraph(program), model.restOf(program));
out.protoKept = [out.back.nodes[2], out.back].every((o) => Object.getPrototypeOf(o) === Object.prototype);
""",
        program=program,
    )
    del program["nodes"][-1]["params"]  # an empty params object means no params: it is left out
    assert out["back"] == program and list(out["back"]) == list(program) and out["protoKept"]
    assert list(out["back"]["nodes"][2]) == ["id", "op", "params", "label", "color", "__proto__"]


# -- layout ------------------------------------------------------------------------------------------

OVERLAPS = """
const { width, height } = layout.NODE_SIZE;
const overlaps = (nodes) => {
  const found = [];
  for (let i = 0; i < nodes.length; i++) for (let j = i + 1; j < nodes.length; j++) {
    const [a, b] = [nodes[i].position, nodes[j].position];
    if (Math.abs(a.x - b.x) < width && Math.abs(a.y - b.y) < height) found.push([nodes[i].id, nodes[j].id]);
  }
  return found;
};
"""


def test_layout_by_depth_is_deterministic_and_without_overlaps() -> None:
    out = run_js(
        OVERLAPS
        + """
for (const [name, program] of Object.entries(input.examples)) {
  const graph = model.toGraph(program);
  const at = new Map(graph.nodes.map((n) => [n.id, n.position]));
  out[name] = {
    overlaps: overlaps(graph.nodes),
    upward: graph.edges.filter((e) => at.get(e.source).y >= at.get(e.target).y).map((e) => e.id),
    again: JSON.stringify(model.toGraph(program)) === JSON.stringify(graph),
    rows: new Set(graph.nodes.map((n) => n.position.y)).size,
  };
}
""",
        examples=EXAMPLES,
    )
    for name, found in out.items():
        assert found["overlaps"] == [] and found["upward"] == [] and found["again"], name
    assert out["digits_mlp"]["rows"] == 5  # inputs; hidden; relu; logits; loss and accuracy
    assert out["deep_chain"]["rows"] == 2 + 2 * 10 + 1


def test_layout_keeps_placed_nodes_and_puts_the_rest_beside_them() -> None:
    program = copy.deepcopy(EXAMPLES["digits_cnn"])
    for i, node in enumerate(program["nodes"][:5]):
        node["position"] = {"x": 300 + 50 * i, "y": 400 * i}  # overlapping each other is the user's choice
    out = run_js(
        OVERLAPS
        + """
const graph = model.toGraph(input.program);
const placed = graph.nodes.filter((n) => n.data.placed);
const free = graph.nodes.filter((n) => !n.data.placed);
out.placed = placed.map((n) => n.position);
const onPlaced = free.flatMap((f) => overlaps([f, ...placed]).filter((pair) => pair[0] === f.id));
out.overlaps = [...onPlaced, ...overlaps(free)];
const wire = ([s, t]) => ({ from: { node: s, port: "out" }, to: { node: t, port: "x" } });
out.cycle = model.toGraph({ nodes: [{ id: "a", op: "relu" }, { id: "b", op: "relu" }, { id: "c", op: "exp" }],
  edges: [["a", "b"], ["b", "a"], ["a", "c"]].map(wire) });
out.cycleOverlaps = overlaps(out.cycle.nodes);
""",
        program=program,
    )
    assert out["placed"] == [n["position"] for n in program["nodes"][:5]]
    assert out["overlaps"] == [] and out["cycleOverlaps"] == []


# -- palette -----------------------------------------------------------------------------------------


def test_the_palette_groups_every_catalog_op_by_category() -> None:
    catalog = palette()
    out = run_js(
        """
out.groups = palette.paletteGroups(input.catalog);
out.linear = palette.initialParams(ops.get("linear"));
out.conv = palette.initialParams(ops.get("conv2d"));
out.input = palette.initialParams(ops.get("input"));
out.missing = palette.missingParams(ops.get("slice"), { starts: [0] });
out.kinds = [
  palette.outputKind(ops.get("input"), {}), palette.outputKind(ops.get("input"), { dtype: "int32" }),
  palette.outputKind(ops.get("input"), { dtype: "float64" }), palette.outputKind(ops.get("less"), {}),
  palette.outputKind(ops.get("linear"), {}),
];
const crops = [1, 2].map(() => palette.initialParams(ops.get("random_crop")).params);
out.shared = crops[0] === crops[1];
""",
        catalog=catalog,
    )
    groups = out["groups"]
    assert [g["category"] for g in groups] == catalog["categories"]
    listed = [op["name"] for g in groups for op in g["ops"]]
    assert sorted(listed) == sorted(op["name"] for op in catalog["ops"]) and len(listed) == len(set(listed))
    for group in groups:
        for op in group["ops"]:
            source = next(o for o in catalog["ops"] if o["name"] == op["name"])
            assert source["category"] == group["category"] and op["doc"] == source["doc"]
            assert op["inputs"] == source["inputs"] and op["output"]["name"] == "out"
            for param, given in zip(op["params"], source["params"], strict=True):
                assert param == {**given, "required": "default" not in given}
    assert out["linear"] == {"params": {"bias": True, "trainable": True}, "required": ["features"]}
    assert out["conv"]["required"] == ["out_channels", "kernel"] and out["conv"]["params"]["stride"] == 1
    assert out["input"] == {"params": {"dtype": "float32", "role": "features"}, "required": ["shape"]}
    assert out["missing"] == ["stops"]
    assert out["kinds"] == ["float", "int", "any", "bool", "float"] and not out["shared"]


# -- edits -------------------------------------------------------------------------------------------


def test_add_remove_set_and_move_are_pure() -> None:
    out = run_js(
        """
const g0 = deepFreeze(model.toGraph(input.program));
const g1 = edits.addNode(g0, ops.get("linear"), { x: 5, y: 6 });
const g2 = edits.addNode(g1, ops.get("linear"));
out.ids = [g1.nodes.at(-1).id, g2.nodes.at(-1).id, edits.newId(edits.removeNodes(g2, ["linear1"]), "linear")];
out.added = g1.nodes.at(-1);
out.beside = g2.nodes.at(-1).position;
out.placed = g1.nodes.every((n) => n.data.placed);
const g3 = edits.removeNodes(g0, ["relu"]);
out.removed = { nodes: g3.nodes.map((n) => n.id), edges: g3.edges.map((e) => e.id) };
const g4 = edits.setParam(edits.setParam(g0, "hidden", "bias", false), "hidden", "features", 32);
out.params = g4.nodes.find((n) => n.id === "hidden").data.params;
out.order = Object.keys(out.params);
out.unset = edits.setParam(g4, "hidden", "features", undefined).nodes.find((n) => n.id === "hidden").data.params;
out.labelled = edits.setLabel(g0, "relu", "activation").nodes.find((n) => n.id === "relu").data;
const g5 = edits.moveNodes(g0, new Map([["relu", { x: 7, y: 8 }]]));
out.moved = model.toProgram(g5, model.restOf(input.program)).nodes.map((n) => n.position);
out.shares = g4.nodes.filter((n, i) => n === g0.nodes[i]).length;
out.untouched = JSON.stringify(model.toProgram(g0, model.restOf(input.program))) === JSON.stringify(input.program);
""",
        catalog=palette(),
        program=EXAMPLES["digits_mlp"],
    )
    assert out["ids"] == ["linear1", "linear2", "linear3"]
    assert out["added"] == {
        "id": "linear1",
        "type": "op",
        "position": {"x": 5, "y": 6},
        "data": {"op": "linear", "params": {"bias": True, "trainable": True}, "placed": True},
    }
    assert out["beside"]["x"] > 5 and out["placed"]
    assert out["removed"]["nodes"] == ["pixels", "digit", "hidden", "logits", "loss", "accuracy"]
    assert all("relu" not in e for e in out["removed"]["edges"]) and len(out["removed"]["edges"]) == 5
    assert out["params"] == {"features": 32, "bias": False} and out["unset"] == {"bias": False}
    assert out["order"] == ["features", "bias"]  # a changed parameter keeps its place in the file
    assert out["labelled"]["label"] == "activation"
    assert len(out["moved"]) == 7 and out["moved"][3] == {"x": 7, "y": 8} and None not in out["moved"]
    assert out["shares"] == 6 and out["untouched"]  # only the edited node is new


def test_connections_the_catalog_forbids_are_refused_with_the_reason() -> None:
    out = run_js(
        """
const g = deepFreeze(model.toGraph(input.program));
const free = edits.disconnect(g, g.edges.filter((e) => e.target === "hidden").map((e) => e.id));
const tryOn = (graph, source, target, targetHandle, sourceHandle = "out") =>
  wiring.connect(graph, ops, { source, sourceHandle, target, targetHandle });
out.refused = {
  kind: tryOn(free, "digit", "hidden", "x").error,
  labels: tryOn(g, "logits", "loss", "labels").error,
  taken: tryOn(g, "pixels", "hidden", "x").error,
  port: tryOn(g, "pixels", "hidden", "y").error,
  source: tryOn(free, "pixels", "hidden", "x", "value").error,
  node: tryOn(free, "nobody", "hidden", "x").error,
};
out.same = tryOn(g, "digit", "hidden", "x").graph === g;
const ok = tryOn(free, "pixels", "hidden", "x");
out.ok = { error: ok.error, edge: ok.graph.edges.at(-1) };
out.program = model.toProgram(ok.graph, model.restOf(input.program));
let c = edits.addNode(g, ops.get("concat"), { x: 0, y: 0 });
for (const s of ["relu", "relu", "logits"]) c = tryOn(c, s, "concat1", "xs").graph;
out.concat = c.edges.filter((e) => e.target === "concat1").map((e) => e.id);
let w = edits.addNode(g, ops.get("where"), { x: 0, y: 0 });
w = edits.addNode(w, ops.get("less"), { x: 0, y: 0 });
out.cond = [tryOn(w, "less1", "where1", "cond").error, tryOn(w, "relu", "where1", "cond").error];
const tokens = edits.setParam(edits.addNode(g, ops.get("input"), { x: 0, y: 0 }), "input1", "dtype", "int32");
out.tokens = [tryOn(tokens, "input1", "hidden", "x").error,
  tryOn(edits.addNode(tokens, ops.get("embedding")), "input1", "embedding1", "indices").error];
""",
        catalog=palette(),
        program=EXAMPLES["digits_mlp"],
    )
    assert out["refused"] == {
        "kind": "input 'x' of 'hidden' takes float, but 'digit' gives int",
        "labels": "input 'labels' of 'loss' takes int, but 'logits' gives float",
        "taken": "input 'x' of 'hidden' takes one edge and has one from 'pixels': disconnect it first",
        "port": "linear has no input port 'y' (it has: x)",
        "source": "input has one output port, 'out'",
        "node": "there is no node 'nobody'",
    }
    assert out["same"]
    assert out["ok"] == {
        "error": None,
        "edge": {"id": "pixels.out->hidden.x", "source": "pixels", "sourceHandle": "out", "target": "hidden",
                 "targetHandle": "x"},
    }  # fmt: skip
    validate(out["program"])
    assert out["concat"] == ["relu.out->concat1.xs", "relu.out->concat1.xs#2", "logits.out->concat1.xs"]
    assert out["cond"] == [None, "input 'cond' of 'where1' takes bool, but 'relu' gives float"]
    assert out["tokens"] == ["input 'x' of 'hidden' takes float, but 'input1' gives int", None]


def test_a_connection_closing_a_cycle_is_refused_naming_the_cycle() -> None:
    out = run_js(
        """
const g = model.toGraph(input.program);
const free = edits.disconnect(g, g.edges.filter((e) => e.target === "hidden").map((e) => e.id));
const tryOn = (graph, source, target, targetHandle) =>
  wiring.connect(graph, ops, { source, sourceHandle: "out", target, targetHandle }).error;
out.loop = tryOn(free, "logits", "hidden", "x");
out.self = tryOn(free, "hidden", "hidden", "x");
let c = edits.addNode(g, ops.get("concat"), { x: 0, y: 0 });
c = edits.disconnect(c, c.edges.filter((e) => e.target === "hidden").map((e) => e.id));
c = wiring.connect(c, ops, { source: "pixels", sourceHandle: "out", target: "concat1", targetHandle: "xs" }).graph;
c = wiring.connect(c, ops, { source: "concat1", sourceHandle: "out", target: "hidden", targetHandle: "x" }).graph;
out.wired = c.edges.map((e) => e.id).filter((id) => id.includes("concat1"));
out.multiple = tryOn(c, "logits", "concat1", "xs");
out.fine = tryOn(c, "pixels", "concat1", "xs");
""",
        catalog=palette(),
        program=EXAMPLES["digits_mlp"],
    )
    acyclic = ": a program must be acyclic"
    assert out["loop"] == "it would close a cycle 'logits' -> 'hidden' -> 'relu' -> 'logits'" + acyclic
    assert out["self"] == "'hidden' would be its own input (a cycle)" + acyclic
    assert out["multiple"] == "it would close a cycle 'logits' -> 'concat1' -> 'hidden' -> 'relu' -> 'logits'" + acyclic
    assert out["wired"] == ["pixels.out->concat1.xs", "concat1.out->hidden.x"] and out["fine"] is None


def test_paste_renames_keeps_internal_edges_and_drops_external_ones() -> None:
    out = run_js(
        """
const g = deepFreeze(model.toGraph(input.mlp));
const moved = edits.moveNodes(g, new Map([["hidden", { x: 10, y: 20 }]]));
const clip = deepFreeze(edits.copySelection(moved, ["hidden", "relu"]));
out.clip = clip.edges.map((e) => e.id);
const once = edits.paste(g, clip);
const twice = edits.paste(once.graph, clip, { x: 0, y: 100 });
out.ids = [once.ids, twice.ids];
out.edges = twice.graph.edges.slice(g.edges.length).map((e) => e.id);
out.position = twice.graph.nodes.find((n) => n.id === "hidden3").position;
out.data = once.graph.nodes.find((n) => n.id === "hidden2").data;
out.elsewhere = edits.paste({ nodes: [], edges: [] }, clip).ids;
const cnn = model.toGraph(input.cnn);
out.conv = edits.paste(cnn, edits.copySelection(cnn, ["conv1"])).ids;
""",
        mlp=EXAMPLES["digits_mlp"],
        cnn=EXAMPLES["digits_cnn"],
    )
    assert out["clip"] == ["hidden.out->relu.x"]  # pixels -> hidden and relu -> logits stay behind
    assert out["ids"] == [["hidden2", "relu2"], ["hidden3", "relu3"]]
    assert out["edges"] == ["hidden2.out->relu2.x", "hidden3.out->relu3.x"]
    assert out["position"] == {"x": 10, "y": 120}
    assert out["data"] == {"op": "linear", "params": {"features": 128}, "placed": True}
    assert out["elsewhere"] == ["hidden", "relu"]  # free ids are kept
    assert out["conv"] == ["conv3"]  # conv2 exists: numbered past it


def test_undo_and_redo_within_a_bounded_depth() -> None:
    out = run_js("""
let h = history.startHistory("s0", 3);
for (const s of ["s1", "s2", "s3", "s4", "s5"]) h = history.record(h, s);
out.kept = h.past;
out.same = history.record(h, "s5") === h;
const undone = [];
for (let i = 0; i < 4; i++) { h = history.undo(h); undone.push(h.present); }
out.undone = undone;
out.flags = [history.canUndo(h), history.canRedo(h)];
h = history.redo(history.redo(h));
out.redone = h.present;
h = history.record(h, "t");
out.afterNew = { present: h.present, future: h.future, canRedo: history.canRedo(h), past: h.past };
out.redoNothing = history.redo(h) === h;
let zero = history.record(history.startHistory("a", 0), "b");
out.zero = [zero.past, history.undo(zero).present];
""")
    assert out["kept"] == ["s2", "s3", "s4"] and out["same"]
    assert out["undone"] == ["s4", "s3", "s2", "s2"]  # the fourth undo has nothing left
    assert out["flags"] == [False, True] and out["redone"] == "s4"
    assert out["afterNew"] == {"present": "t", "future": [], "canRedo": False, "past": ["s2", "s3", "s4"]}
    assert out["redoNothing"] and out["zero"] == [[], "b"]


# -- validation issues onto the drawing --------------------------------------------------------------


def broken_programs() -> dict[str, dict[str, Any]]:
    base = EXAMPLES["digits_mlp"]
    broken = {name: copy.deepcopy(base) for name in ("params", "ports", "types", "cycle", "settings", "ids")}
    hidden, relu, logits = (index_of(base, n) for n in ("hidden", "relu", "logits"))
    broken["params"]["nodes"][hidden]["params"] = {"bias": True}  # features, required, is missing
    broken["params"]["nodes"][logits]["params"]["features"] = 0
    broken["params"]["nodes"][relu].update({"op": "no_such_op", "color": "red"})
    broken["ports"]["edges"][edge_into(base, "hidden", "x")]["to"]["port"] = "y"
    broken["types"]["edges"][edge_into(base, "hidden", "x")]["from"]["node"] = "digit"
    broken["cycle"]["edges"][edge_into(base, "hidden", "x")]["from"]["node"] = "relu"
    broken["settings"]["optimizer"]["lr"] = -1
    broken["settings"]["loss"] = "logits"
    broken["ids"]["nodes"][relu]["id"] = "9relu"
    return broken


def test_issues_are_put_on_their_nodes_ports_params_and_edges() -> None:
    broken = broken_programs()
    given = {name: issues_of(program) for name, program in broken.items()}
    out = run_js(
        """
for (const [name, program] of Object.entries(input.broken)) {
  const graph = model.toGraph(program);
  assert.deepEqual(model.toProgram(graph, model.restOf(program)), program); // the issues index this graph
  out[name] = { located: input.issues[name].map((i) => issues.locateIssue(i, graph)),
    marks: plain(issues.issueMarks(input.issues[name], graph)) };
}
""",
        broken=broken,
        issues=given,
    )

    def where(name: str) -> list[tuple[Any, ...]]:
        return [(a["node"], a["port"], a["param"], a["field"], a["edge"], a["end"]) for a in out[name]["located"]]

    assert where("params") == [
        ("hidden", None, "features", None, None, None),
        ("relu", None, None, "color", None, None),
        ("relu", None, None, "op", None, None),
        ("logits", None, "features", None, None, None),
    ]
    hidden_x = edge_into(broken["ports"], "hidden", "y")
    assert out["ports"]["located"][0]["path"] == f"edges[{hidden_x}].to.port"
    assert where("ports") == [
        ("hidden", "y", None, None, "pixels.out->hidden.y", "target"),  # the edge to a port linear lacks
        ("hidden", "x", None, None, None, None),  # so its own x is not connected
    ]
    assert where("types") == [("hidden", "x", None, None, None, None)]
    assert where("cycle") == [(n, None, None, None, None, None) for n in ("hidden", "relu")]
    assert sorted(where("settings"), key=str) == sorted(
        [("logits", None, None, "loss", None, None), (None, None, None, "optimizer", None, None)], key=str
    )
    assert where("ids")[0] == ("9relu", None, None, "id", None, None)
    marks = out["ports"]["marks"]
    assert set(marks["nodes"]) == {"hidden"} and len(marks["nodes"]["hidden"]) == 2
    assert list(marks["edges"]) == ["pixels.out->hidden.y"] and marks["program"] == []
    assert [m["field"] for m in out["settings"]["marks"]["program"]] == ["optimizer"]
    assert [m["message"] for m in out["types"]["located"]] == [i["message"] for i in given["types"]]


# -- program text in and out -------------------------------------------------------------------------


def test_import_names_where_the_text_is_wrong() -> None:
    texts = {
        "syntax": '{\n  "format": "scellis.program/1",\n  "nodes": [\n    {"id": "x", "op": "input",}\n  ]\n}',
        "ended": '{"nodes": [',
        "after": "{} {}",
        "string": '{"name": "a\nb"}',
        "shape": json.dumps(
            {
                "nodes": [
                    {"id": "a", "op": "relu"},
                    {"id": "a", "op": 3},
                    {"id": "b", "op": "relu", "position": [1, 2]},
                ],
                "edges": [{"from": {"node": "a", "port": "out"}, "to": {"node": "zz", "port": "x"}}, {"from": 1}],
            }
        ),
        "list": "[1, 2]",
        "good": json.dumps(EXAMPLES["digits_mlp"]),
    }
    out = run_js(
        "for (const [name, text] of Object.entries(input.texts)) out[name] = io.importProgram(text);", texts=texts
    )
    assert out["syntax"]["errors"] == [{"line": 4, "column": 31, "message": "expected a key in double quotes"}]
    assert out["ended"]["errors"] == [{"line": 1, "column": 12, "message": "the text ends too early"}]
    assert out["after"]["errors"][0]["column"] == 4
    assert out["string"]["errors"][0] == {
        "line": 1,
        "column": 10,
        "message": "a string that is not closed, or holds a bad escape or a raw control character",
    }
    assert [e["path"] for e in out["shape"]["errors"]] == [
        "nodes[1].id",
        "nodes[1].op",
        "nodes[2].position",
        "edges[0].to.node",
        "edges[1]",
    ]
    assert out["shape"]["program"] is None and 'there is no node "zz"' in out["shape"]["errors"][3]["message"]
    assert out["list"]["errors"] == [{"path": "", "message": "a program is a JSON object"}]
    assert out["good"] == {"program": EXAMPLES["digits_mlp"], "errors": []}


def test_export_is_stable_one_node_and_one_edge_a_line() -> None:
    out = run_js(
        """
for (const [name, program] of Object.entries(input.examples)) {
  const text = io.exportProgram(model.toProgram(model.toGraph(program), model.restOf(program)));
  out[name] = { text, again: io.exportProgram(io.importProgram(text).program) === text };
}
""",
        examples=EXAMPLES,
    )
    for name, program in EXAMPLES.items():
        text = out[name]["text"]
        assert json.loads(text) == program and out[name]["again"], name
        lines = text.splitlines()
        # braces, a line per field, a closing line for the node and edge lists, a line per node and per edge
        assert len(lines) == len(program) + 2 + 2 + len(program["nodes"]) + len(program["edges"])
    first = out["digits_mlp"]["text"].splitlines()
    assert first[:4] == [
        "{",
        '  "format": "scellis.program/1",',
        '  "name": "digits-mlp",',
        '  "nodes": [',
    ]
    params = '"params": {"shape": [64], "dtype": "float32", "role": "features"}'
    assert first[4] == f'    {{"id": "pixels", "op": "input", {params}}},'
