"""The graph editor's pure modules (app/src/editor/*.js) under Node: the document and program text (same
program whatever the spacing, the copy kept in storage), the side panel's fields (a control for every
catalog parameter, typed text to values and back), the keyboard shortcuts, the debounced checker, the
editor's commands over one state value, and what React Flow is given to draw, with the engine's own
issues put on nodes, ports, params and edges. Python writes the inputs (examples, catalog, the engine's
check of a program) as JSON for the JS, and checks its answers with the engine; the editor's examples
come from scellis.app as the worker gives them."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from nodejs import run_node

from scellis import examples
from scellis.app import check_program, examples_json
from scellis.graph import palette, validate

ROOT = Path(__file__).resolve().parents[1]
SRC = (ROOT / "app" / "src").as_uri()

EXAMPLES = {
    "digits_mlp": examples.digits_mlp(),
    "digits_cnn": examples.digits_cnn(),
    "char_transformer": examples.char_transformer(),
    "option_pricing": examples.option_pricing(),
    "ising": examples.ising(),
    "logistic_bootstrap": examples.logistic_bootstrap(),
}

PRELUDE = f"""
import assert from "node:assert/strict";
import {{ readFileSync }} from "node:fs";
import * as palette from "{SRC}/graph/palette.js";
import * as model from "{SRC}/graph/model.js";
import * as issues from "{SRC}/graph/issues.js";
import * as program from "{SRC}/editor/program.js";
import * as params from "{SRC}/editor/params.js";
import * as keys from "{SRC}/editor/keys.js";
import * as checker from "{SRC}/editor/checker.js";
import * as state from "{SRC}/editor/state.js";
import * as view from "{SRC}/editor/view.js";
const input = JSON.parse(readFileSync(process.argv[2], "utf8"));
const ops = palette.opIndex(input.catalog ?? {{ ops: [] }});
// Commands must never write to their input: a frozen state throws on any write (modules are strict).
const deepFreeze = (v) => {{
  if (v && typeof v === "object" && !(v instanceof Map)) {{ Object.values(v).forEach(deepFreeze); Object.freeze(v); }}
  return v;
}};
const plain = (v) => JSON.parse(JSON.stringify(v, (k, x) => (x instanceof Map ? Object.fromEntries(x) : x)));
const out = {{}};
"""


def run_js(body: str, **inputs: Any) -> Any:
    return run_node(PRELUDE, body, inputs)


def check(program: dict[str, Any]) -> list[dict[str, Any]]:
    """The engine's issues of `program`, as the worker's `check` answers them."""
    return json.loads(check_program(json.dumps(program)))["issues"]


# -- the examples the worker gives -------------------------------------------------------------------


def test_the_editors_examples_are_the_builders_own_page_example_first() -> None:
    given = json.loads(examples_json())
    names = ["digits-mlp", "digits-cnn", "char-transformer", "option-pricing", "ising", "logistic-bootstrap"]
    assert [e["name"] for e in given] == names
    assert [e["program"] for e in given] == list(EXAMPLES.values())
    assert [e["source"] for e in given] == ["site", "site", "chars", None, None, "cancer"]
    assert given[0]["summary"].startswith("scikit-learn's 8x8 digits: 64 -> 128 (ReLU) -> 10")
    assert all("\n" not in e["summary"] and e["summary"].endswith(".") for e in given)


# -- the document and program text --------------------------------------------------------------------


def test_every_example_opens_and_is_written_back_as_the_same_program() -> None:
    out = run_js(
        """
for (const [name, p] of Object.entries(input.examples)) {
  const text = program.textOf(program.docOf(deepFreeze(structuredClone(p))));
  out[name] = { text, same: program.sameProgram(text, JSON.stringify(p)) };
}
""",
        examples=EXAMPLES,
    )
    for name, found in out.items():
        assert json.loads(found["text"]) == EXAMPLES[name] and found["same"], name
        lines = found["text"].splitlines()
        assert all(f'    {{"id": {json.dumps(n["id"])},' in lines_of(lines) for n in EXAMPLES[name]["nodes"]), name


def lines_of(lines: list[str]) -> str:
    """The lines of a program's text, each cut after its node id (a node is on a line of its own)."""
    return "\n".join(line.split(' "op"')[0] for line in lines)


def test_same_program_ignores_spacing_and_key_order_only() -> None:
    out = run_js(
        """
const a = JSON.stringify(input.p);
const reordered = JSON.stringify(Object.fromEntries(Object.entries(input.p).reverse()), null, 2);
const changed = structuredClone(input.p);
changed.loop.batch_size = 32;
const swapped = structuredClone(input.p);
swapped.nodes.reverse(); // the order of nodes is the program's (issue paths index it)
out.result = [
  program.sameProgram(a, reordered),
  program.sameProgram(a, JSON.stringify(changed)),
  program.sameProgram(a, JSON.stringify(swapped)),
  program.sameProgram("{not json", "{not json"),
  program.sameProgram("{not json", a),
];
""",
        p=EXAMPLES["digits_mlp"],
    )
    assert out["result"] == [True, False, False, True, False]


def test_placed_positions_and_text_that_cannot_be_opened() -> None:
    out = run_js(
        """
const doc = program.docOf(input.p, { relu: { x: 5, y: 6 } });
out.placed = program.placedPositions(doc.graph);
const kept = program.readProgram(program.textOf(doc));
out.keptPlaced = program.placedPositions(kept.doc.graph);
out.syntax = program.readProgram('{\\n  "nodes": [,]\\n}').errors.map(program.errorLine);
out.shape = program.readProgram('{"nodes": [{"id": 1, "op": "relu"}]}').errors.map(program.errorLine);
""",
        p=EXAMPLES["digits_mlp"],
    )
    assert out["placed"] == {"relu": {"x": 5, "y": 6}} and out["keptPlaced"] == out["placed"]
    assert out["syntax"] == ["line 2, column 13: expected a value"]
    assert out["shape"] == ["nodes[0].id: must be a string"]


def test_the_program_kept_in_storage_and_storage_that_refuses() -> None:
    out = run_js(
        """
const kept = new Map();
const storage = { getItem: (k) => kept.get(k) ?? null, setItem: (k, v) => kept.set(k, v) };
const refuse = (name) => () => { throw new Error(name); };
const blocked = { getItem: refuse("SecurityError"), setItem: refuse("QuotaExceededError") };
out.none = program.savedProgram(storage);
out.saved = program.saveProgram(storage, "{}");
out.back = program.savedProgram(storage);
out.key = [...kept.keys()];
out.refused = [program.saveProgram(blocked, "{}"), program.savedProgram(blocked)];
"""
    )
    assert out == {
        "none": None,
        "saved": True,
        "back": "{}",
        "key": ["scellis.editor.program"],
        "refused": [False, None],
    }


# -- the side panel's fields ----------------------------------------------------------------------------


def test_every_catalog_parameter_gets_a_control_and_every_example_value_reads_back() -> None:
    catalog = palette()
    values = [
        [param, node.get("params", {})[param["name"]]]
        for program in EXAMPLES.values()
        for node in program["nodes"]
        for param in next(op for op in catalog["ops"] if op["name"] == node["op"])["params"]
        if param["name"] in node.get("params", {})
    ]
    out = run_js(
        """
out.kinds = {};
for (const op of input.catalog.ops) {
  for (const p of op.params) out.kinds[`${op.name}.${p.name}`] = [p.kind, params.fieldKind(p)];
}
const back = (p, text) => [text, params.parseField(p.kind, text)];
out.back = input.values.map(([p, v]) => back(p, params.valueText(v)));
""",
        catalog=catalog,
        values=values,
    )
    for name, (kind, control) in out["kinds"].items():
        assert control == ("checkbox" if kind == "bool" else "select" if name in CHOICES else "text"), name
    assert len(values) > 20
    for (param, value), (text, back) in zip(values, out["back"], strict=True):
        assert back == value, (param["name"], text)


CHOICES = {f"{op['name']}.{p['name']}" for op in palette()["ops"] for p in op["params"] if p.get("choices")}


def test_typed_text_becomes_a_value_and_what_is_not_one_is_kept_for_the_engine_to_name() -> None:
    cases = [
        ["int", "128", 128],
        ["int", " 0 ", 0],
        ["int", "abc", "abc"],
        ["int", "", None],
        ["float", "3e-3", 0.003],
        ["float", ".5", 0.5],
        ["ints", "[1, 8, 8]", [1, 8, 8]],
        ["ints", "1, 8, 8", [1, 8, 8]],
        ["ints", "64", 64],
        ["pair", "null", None],
        ["axes", "[-1]", [-1]],
        ["str", " tanh ", "tanh"],
        ["str", "[1]", "[1]"],
        ["json", "loss", "loss"],
        ["json", '["accuracy"]', ["accuracy"]],
        ["json", '{"kind": "sgd", "lr": 0.1}', {"kind": "sgd", "lr": 0.1}],
        ["json", "{broken", "{broken"],
    ]
    out = run_js(
        """
out.values = input.cases.map(([kind, text]) => params.parseField(kind, text) ?? (text.trim() ? null : "unset"));
out.texts = [[1, 8, 8], { kind: "adam", lr: 0.003 }, ["a", "b"], undefined, null].map(params.valueText);
const unset = [{ kind: "int" }, { kind: "pair", default: null }, { kind: "pair", default: 1 }, { kind: "json" }];
out.unset = unset.map(params.unsetText);
const marked = [{ kind: "int" }, { kind: "int", default: 1 }, { kind: "json" }, { kind: "str", optional: true }];
out.required = marked.map(params.isRequired);
out.range = [{ low: 1 }, { low: 0, high: 1 }, { high: 2 }, {}].map(params.rangeText);
""",
        cases=cases,
    )
    assert out["values"] == [
        expected if expected is not None or text.strip() == "null" else "unset" for _, text, expected in cases
    ]
    assert out["texts"] == ["[1, 8, 8]", '{"kind": "adam", "lr": 0.003}', '["a", "b"]', "", "null"]
    assert out["unset"] == ["required", "default: none", "default: 1", "not set"]
    assert out["required"] == [True, False, False, False]
    assert out["range"] == ["at least 1", "from 0 to 1", "at most 2", ""]
    program = copy.deepcopy(EXAMPLES["digits_mlp"])
    program["nodes"][2]["params"]["features"] = "abc"  # kept as typed: the engine says what is wrong
    assert [i["message"] for i in check(program)] == ["must be an integer, got 'abc'"]


# -- keyboard ---------------------------------------------------------------------------------------


def test_shortcuts_and_keys_that_stay_with_fields_and_buttons() -> None:
    out = run_js(
        """
const on = (tagName) => ({ tagName });
const up = { ctrlKey: false, metaKey: false, shiftKey: false, altKey: false };
const press = (key, mods = {}, target = on("DIV")) => keys.commandFor({ key, ...up, target, ...mods });
const ctrl = { ctrlKey: true };
out.commands = [
  press("z", { ctrlKey: true }), press("z", { metaKey: true }), press("Z", { ctrlKey: true, shiftKey: true }),
  press("y", { ctrlKey: true }), press("c", { ctrlKey: true }), press("v", { metaKey: true }),
  press("Delete"), press("Backspace"), press("f"), press("F"), press("F", { shiftKey: true }),
  press("x", { ctrlKey: true }), press("z", { ctrlKey: true, altKey: true }), press("a"),
];
const editable = { tagName: "DIV", isContentEditable: true };
out.fields = [press("z", ctrl, on("INPUT")), press("Backspace", {}, on("TEXTAREA")), press("c", ctrl, editable)];
out.buttons = [press("Delete", {}, on("BUTTON")), press("f", {}, on("BUTTON")), press("z", ctrl, on("BUTTON"))];
out.shown = Object.keys(keys.SHORTCUTS);
"""
    )
    assert out["commands"] == [
        "undo",
        "undo",
        "redo",
        "redo",
        "copy",
        "paste",
        "delete",
        "delete",
        "fit",
        "fit",
        None,
        None,
        None,
        None,
    ]
    assert out["fields"] == [None, None, None]
    assert out["buttons"] == [None, None, "undo"]
    assert out["shown"] == ["undo", "redo", "copy", "paste", "delete", "fit"]


# -- checks -------------------------------------------------------------------------------------------

CHECKER = """
const settle = () => new Promise((r) => setTimeout(r, 0));
const timers = {
  now: 0,
  queue: [],
  setTimeout(fn, ms) {
    this.queue.push({ at: this.now + ms, fn });
    return this.queue.length;
  },
  clearTimeout(id) {
    if (id) this.queue[id - 1].fn = null;
  },
  async advance(ms) {
    this.now += ms;
    for (const t of this.queue.filter((t) => t.fn && t.at <= this.now)) {
      const fn = t.fn;
      t.fn = null;
      fn();
    }
    await settle();
  },
};
const calls = [];
const waiting = new Map();
const check = (text) => new Promise((resolve, reject) => calls.push(text) && waiting.set(text, { resolve, reject }));
const answer = async (text, issues) => {
  waiting.get(text).resolve({ issues });
  await settle();
};
const got = [];
const c = new checker.Checker(check, { delay: 100, timers });
const ask = (text) => c.request(text, (issues) => got.push([text, issues]));
"""


def test_checks_wait_for_a_pause_and_deliver_only_the_latest_text() -> None:
    out = run_js(
        CHECKER
        + """
ask("a"); await timers.advance(50); ask("b"); await timers.advance(99);
out.beforePause = [...calls];
await timers.advance(1);
out.afterPause = [...calls];
ask("c"); await timers.advance(100);    // b's answer comes after c was asked for: dropped
await answer("b", ["b-issue"]);
await answer("c", []);
out.got = [...got];
ask("b");                                // b's answer was kept: delivered at once, no call
out.again = [got.at(-1), calls.length];
ask("d"); await timers.advance(100);
waiting.get("d").reject(new Error("the worker stopped"));
await new Promise((r) => setTimeout(r, 0));
out.failed = got.at(-1);
"""
    )
    assert out["beforePause"] == [] and out["afterPause"] == ["b"]
    assert out["got"] == [["c", []]]
    assert out["again"] == [["b", ["b-issue"]], 2]
    text, [issue] = out["failed"]
    assert text == "d" and issue == {
        "path": "",
        "node": None,
        "port": None,
        "message": "the engine could not check the program: the worker stopped",
    }


# -- the editor's commands ------------------------------------------------------------------------------


def test_commands_edit_through_history_and_never_write_to_their_input() -> None:
    out = run_js(
        """
const s0 = deepFreeze(state.startEditor(program.docOf(input.p)));
const tanh = ops.get("tanh");
const s1 = deepFreeze(state.addOp(s0, tanh, { x: 0, y: 0 }));
out.added = [s1.selected, s1.notice.text, state.docOf(s1).graph.nodes.at(-1).position];
const wire = (source, target, targetHandle) => ({ source, sourceHandle: "out", target, targetHandle });
const s2 = deepFreeze(state.connectPorts(s1, ops, wire("hidden", "tanh1", "x")));
const refused = state.connectPorts(s2, ops, wire("digit", "logits", "x"));
out.refused = [refused.notice, refused.history === s2.history];
const s3 = deepFreeze(state.setNodeParam(s2, "hidden", "features", 32));
out.same = state.setNodeParam(s3, "hidden", "features", 32) === s3;
const s4 = deepFreeze(state.pasteClipboard(state.copySelected(state.selectOnly(s3, ["tanh1"]))));
const [g3, g4] = [state.docOf(s3).graph, state.docOf(s4).graph];
out.pasted = [s4.selected.nodes, g4.nodes.at(-1).position, g4.edges.length === g3.edges.length];
const s5 = deepFreeze(state.deleteSelected(state.selectOnly(s4, ["tanh2"], ["hidden.out->relu.x"])));
const g5 = state.docOf(s5).graph;
const has = (list, id) => list.some((item) => item.id === id);
out.deleted = [s5.notice.text, has(g5.nodes, "tanh2"), has(g5.edges, "hidden.out->relu.x")];
const back = state.undoEdit(state.undoEdit(s5));
out.undone = [state.docOf(back) === state.docOf(s3), state.docOf(state.redoEdit(back)) === state.docOf(s4)];
const s6 = state.setProgramField(s3, "loop", { epochs: 1, batch_size: 64 });
out.field = [state.docOf(s6).rest.loop, state.setProgramField(s6, "memory", undefined) === s6];
out.edited = program.programOf(state.docOf(s3));
out.bad = state.openText(s3, "[1,", { source: "x.json" }).notice;
const same = program.textOf(state.docOf(s3));
out.reopened = state.openText(s3, same, { source: "the same", fit: true }).history === s3.history;
out.opened = state.openText(s3, JSON.stringify(input.p), { source: "the example", fit: true });
out.opened = [out.opened.fits, out.opened.notice.text, state.docOf(state.undoEdit(out.opened)) === state.docOf(s3)];
""",
        p=EXAMPLES["digits_mlp"],
        catalog=palette(),
    )
    assert out["added"][0] == {"nodes": ["tanh1"], "edges": []} and out["added"][1] == "Added tanh node tanh1."
    assert out["refused"] == [
        {"kind": "error", "text": "Not connected: input 'x' of 'logits' takes float, but 'digit' gives int."},
        True,
    ]
    assert out["same"]
    assert out["pasted"][0] == ["tanh2"] and out["pasted"][2]  # the wire into tanh1 stayed behind
    assert out["deleted"] == ["Deleted 1 node and 1 edge.", False, False]
    assert out["undone"] == [True, True]
    assert out["field"] == [{"epochs": 1, "batch_size": 64}, True]
    edited = out["edited"]
    validate(edited)  # the editor's program is one the engine takes
    nodes = {n["id"]: n for n in edited["nodes"]}
    assert nodes["hidden"]["params"]["features"] == 32 and nodes["tanh1"]["op"] == "tanh"
    assert out["bad"] == {"kind": "error", "text": "Could not open x.json: line 1, column 4: the text ends too early"}
    assert out["reopened"]
    assert out["opened"] == [1, "Opened the example.", True]


def test_a_new_node_covers_none_of_the_drawing() -> None:
    out = run_js(
        """
const graph = program.docOf(input.p).graph;
const { width, height } = { width: 200, height: 80 };
const at = graph.nodes.find((n) => n.id === "relu").position;
const spot = state.freeSpot(graph, at);
const apart = (n) => Math.abs(n.position.x - spot.x) >= width || Math.abs(n.position.y - spot.y) >= height;
out.free = graph.nodes.every(apart);
out.sameRow = spot.y === at.y && spot.x > at.x;
out.openSpace = state.freeSpot(graph, { x: 5000, y: 5000 });
""",
        p=EXAMPLES["digits_mlp"],
    )
    assert out == {"free": True, "sameRow": True, "openSpace": {"x": 5000, "y": 5000}}


def test_selection_follows_react_flows_changes_in_order() -> None:
    out = run_js(
        """
let s = state.startEditor(program.docOf(input.p));
const pick = (id, selected) => ({ id, type: "select", selected });
s = state.selectChanges(s, "nodes", [pick("relu", true), pick("hidden", true)]);
out.two = s.selected.nodes;
s = state.selectChanges(s, "nodes", [pick("relu", false), { id: "relu", type: "dimensions" }]);
out.one = s.selected.nodes;
out.unchanged = state.selectChanges(s, "nodes", [{ id: "relu", type: "dimensions" }]) === s;
s = state.selectOnly(s, ["gone"], ["gone-edge"]);
out.existing = state.selection(s);
out.nothing = state.deleteSelected(s).notice.text;
""",
        p=EXAMPLES["digits_mlp"],
    )
    assert out["two"] == ["relu", "hidden"] and out["one"] == ["hidden"] and out["unchanged"]
    assert out["existing"] == {"nodes": [], "edges": []} and out["nothing"] == "Nothing is selected to delete."


# -- what React Flow draws ------------------------------------------------------------------------------


def test_the_engines_issues_are_drawn_on_nodes_ports_params_and_edges() -> None:
    program = copy.deepcopy(EXAMPLES["digits_mlp"])
    program["nodes"][2]["params"]["features"] = 0
    program["nodes"].append({"id": "tanh1", "op": "tanh"})
    found = check(program)
    assert len(found) == 2
    out = run_js(
        """
const doc = program.docOf(input.p);
const marks = issues.issueMarks(input.issues, doc.graph);
const measured = new Map([["relu", { width: 200, height: 80 }]]);
const dragging = new Map([["loss", { x: 1, y: 2 }]]);
const drawn = view.viewNodes(doc.graph, ops, { selected: ["relu"], measured, dragging }, marks);
const byId = Object.fromEntries(drawn.map((n) => [n.id, n]));
out.hidden = byId.hidden.data.face;
out.tanh = byId.tanh1.data.face;
const { relu, hidden, loss } = byId;
out.relu = [relu.selected, relu.measured, hidden.measured ?? null, loss.position, hidden.ariaLabel];
out.edges = Object.fromEntries(view.viewEdges(doc.graph, ops, [], marks).map((e) => [e.id, e.className]));
out.problems = view.problems(input.issues, doc.graph);
out.why = [view.blockedWhy(input.issues), view.blockedWhy(input.issues.slice(1)), view.blockedWhy([])];
const conv = ops.get("conv2d");
const set = { out_channels: 16, kernel: 3, padding: 1, stride: 1 };
out.summary = [view.keyParams(conv, set), view.keyParams(conv, {}), view.keyParams(undefined, { a: 1 })];
""",
        p=program,
        issues=found,
        catalog=palette(),
    )
    assert (
        out["hidden"]["issues"] == ["features: must be at least 1, got 0"] and out["hidden"]["summary"] == "features 0"
    )
    assert out["hidden"]["inputs"] == [{"name": "x", "kind": "float", "multiple": False, "issues": []}]
    assert out["tanh"]["inputs"][0]["issues"] == ["input 'x' of tanh is not connected"]
    assert out["tanh"]["issues"] == ["input x: input 'x' of tanh is not connected"]
    assert out["relu"] == [
        True,
        {"width": 200, "height": 80},
        None,
        {"x": 1, "y": 2},
        "linear node hidden, 1 problem(s)",
    ]
    assert out["edges"]["digit.out->loss.labels"] == "kind-int" and out["edges"]["hidden.out->relu.x"] == "kind-float"
    assert [(p["owner"], p["text"], p["node"]) for p in out["problems"]] == [
        ("hidden", "features: must be at least 1, got 0", "hidden"),
        ("tanh1", "input x: input 'x' of tanh is not connected", "tanh1"),
    ]
    assert out["why"] == [
        "the program in the editor has 2 problems; the first: hidden features: must be at least 1, got 0",
        "the program in the editor has a problem: tanh1 input x: input 'x' of tanh is not connected",
        "",
    ]
    assert out["summary"] == ["out_channels 16 · kernel 3 · stride 1 …", "out_channels ? · kernel ?", "a 1"]


def test_an_edge_the_engine_refuses_is_marked() -> None:
    program = copy.deepcopy(EXAMPLES["digits_mlp"])
    program["edges"][0]["to"]["port"] = "y"  # linear has no input y
    found = check(program)
    out = run_js(
        """
const doc = program.docOf(input.p);
const marks = issues.issueMarks(input.issues, doc.graph);
out.edge = view.viewEdges(doc.graph, ops, [], marks)[0];
""",
        p=program,
        issues=found,
        catalog=palette(),
    )
    assert "edge-issue" in out["edge"]["className"] and out["edge"]["data"]["issues"]
    assert out["edge"]["ariaLabel"].startswith("Edge pixels.out to hidden.y: ")


def test_react_flows_changes_are_sorted_into_what_the_editor_keeps() -> None:
    out = run_js(
        """
out.sorted = plain(view.sortNodeChanges([
  { id: "a", type: "dimensions", dimensions: { width: 200, height: 80 } },
  { id: "a", type: "select", selected: true },
  { id: "b", type: "position", position: { x: 1, y: 2 }, dragging: true },
  { id: "c", type: "position", position: { x: 3, y: 4 }, dragging: false },
  { id: "d", type: "position", dragging: false },
  { id: "e", type: "remove" },
]));
"""
    )
    assert out["sorted"] == {
        "measured": [["a", {"width": 200, "height": 80}]],
        "select": [{"id": "a", "type": "select", "selected": True}],
        "dragging": [["b", {"x": 1, "y": 2}]],
        "moved": {"c": {"x": 3, "y": 4}},
    }
