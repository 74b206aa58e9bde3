// The graph editor's pure modules (app/src/editor/*.js) under Node: the document and program text (same
// program whatever the spacing, the copy kept in storage), the side panel's fields (a control for every
// catalog parameter, typed text to values and back), the keyboard shortcuts, the debounced checker, the
// editor's commands over one state value, and what React Flow is given to draw, with the engine's own
// issues put on nodes, ports, params and edges. Python writes the inputs (the examples as the worker gives
// them, the catalog, the engine's check of a program: tests/js_inputs.py), and checks the program the
// commands write with the engine (tests/test_js.py).
import assert from "node:assert/strict";
import { test } from "node:test";
import * as checker from "../../app/src/editor/checker.js";
import * as keys from "../../app/src/editor/keys.js";
import * as params from "../../app/src/editor/params.js";
import * as program from "../../app/src/editor/program.js";
import * as state from "../../app/src/editor/state.js";
import * as view from "../../app/src/editor/view.js";
import * as issues from "../../app/src/graph/issues.js";
import * as palette from "../../app/src/graph/palette.js";
import { forPython, plain, pythonInputs, splitlines } from "./lib.js";

const input = pythonInputs("editor");
const { examples, catalog } = input;
const ops = palette.opIndex(catalog);

// Commands must never write to their input: a frozen state throws on any write (modules are strict).
const deepFreeze = (v) => {
  if (v && typeof v === "object" && !(v instanceof Map)) {
    Object.values(v).forEach(deepFreeze);
    Object.freeze(v);
  }
  return v;
};
const withMaps = (v) => JSON.parse(JSON.stringify(v, (k, x) => (x instanceof Map ? Object.fromEntries(x) : x)));

// -- the document and program text --------------------------------------------------------------------

test("every example opens and is written back as the same program", () => {
  for (const [name, p] of Object.entries(examples)) {
    const text = program.textOf(program.docOf(deepFreeze(structuredClone(p))));
    assert.deepEqual(JSON.parse(text), p, name);
    assert.ok(program.sameProgram(text, JSON.stringify(p)), name);
    // a node is on a line of its own: the lines, each cut after its node id
    const cut = splitlines(text)
      .map((line) => line.split(' "op"')[0])
      .join("\n");
    for (const n of p.nodes) assert.ok(cut.includes(`    {"id": ${JSON.stringify(n.id)},`), `${name}: ${n.id}`);
  }
});

test("same program ignores spacing and key order only", () => {
  const p = examples.digits_mlp;
  const a = JSON.stringify(p);
  const reordered = JSON.stringify(Object.fromEntries(Object.entries(p).reverse()), null, 2);
  const changed = structuredClone(p);
  changed.loop.batch_size = 32;
  const swapped = structuredClone(p);
  swapped.nodes.reverse(); // the order of nodes is the program's (issue paths index it)
  const result = [
    program.sameProgram(a, reordered),
    program.sameProgram(a, JSON.stringify(changed)),
    program.sameProgram(a, JSON.stringify(swapped)),
    program.sameProgram("{not json", "{not json"),
    program.sameProgram("{not json", a),
  ];
  assert.deepEqual(result, [true, false, false, true, false]);
});

test("placed positions and text that cannot be opened", () => {
  const doc = program.docOf(examples.digits_mlp, { relu: { x: 5, y: 6 } });
  const placed = program.placedPositions(doc.graph);
  assert.deepEqual(placed, { relu: { x: 5, y: 6 } });
  const kept = program.readProgram(program.textOf(doc));
  assert.deepEqual(program.placedPositions(kept.doc.graph), placed);
  assert.deepEqual(program.readProgram('{\n  "nodes": [,]\n}').errors.map(program.errorLine), [
    "line 2, column 13: expected a value",
  ]);
  assert.deepEqual(program.readProgram('{"nodes": [{"id": 1, "op": "relu"}]}').errors.map(program.errorLine), [
    "nodes[0].id: must be a string",
  ]);
});

test("the program kept in storage and storage that refuses", () => {
  const kept = new Map();
  const storage = { getItem: (k) => kept.get(k) ?? null, setItem: (k, v) => kept.set(k, v) };
  const refuse = (name) => () => {
    throw new Error(name);
  };
  const blocked = { getItem: refuse("SecurityError"), setItem: refuse("QuotaExceededError") };
  assert.equal(program.savedProgram(storage), null);
  assert.equal(program.saveProgram(storage, "{}"), true);
  assert.equal(program.savedProgram(storage), "{}");
  assert.deepEqual([...kept.keys()], ["scellis.editor.program"]);
  assert.deepEqual(plain([program.saveProgram(blocked, "{}"), program.savedProgram(blocked)]), [false, null]);
});

// -- the side panel's fields ----------------------------------------------------------------------------

test("every catalog parameter gets a control and every example value reads back", () => {
  const choices = new Set(
    catalog.ops.flatMap((op) => op.params.filter((p) => p.choices).map((p) => `${op.name}.${p.name}`)),
  );
  for (const op of catalog.ops) {
    for (const p of op.params) {
      const name = `${op.name}.${p.name}`;
      const control = p.kind === "bool" ? "checkbox" : choices.has(name) ? "select" : "text";
      assert.equal(params.fieldKind(p), control, name);
    }
  }
  const values = Object.values(examples).flatMap((p) =>
    p.nodes.flatMap((node) => {
      const given = node.params ?? {};
      const op = catalog.ops.find((o) => o.name === node.op);
      return op.params.filter((param) => param.name in given).map((param) => [param, given[param.name]]);
    }),
  );
  assert.ok(values.length > 20, `${values.length} values`);
  for (const [param, value] of values) {
    const text = params.valueText(value);
    assert.deepEqual(params.parseField(param.kind, text), value, `${param.name}: ${text}`);
  }
});

test("typed text becomes a value and what is not one is kept for the engine to name", () => {
  // (the engine names what is kept: tests/test_js.py checks it says "must be an integer, got 'abc'")
  const cases = [
    ["int", "128", 128],
    ["int", " 0 ", 0],
    ["int", "abc", "abc"],
    ["int", "", null],
    ["float", "3e-3", 0.003],
    ["float", ".5", 0.5],
    ["ints", "[1, 8, 8]", [1, 8, 8]],
    ["ints", "1, 8, 8", [1, 8, 8]],
    ["ints", "64", 64],
    ["pair", "null", null],
    ["axes", "[-1]", [-1]],
    ["str", " tanh ", "tanh"],
    ["str", "[1]", "[1]"],
    ["key", "encoder.layer.0.attention.self.query.weight", "encoder.layer.0.attention.self.query.weight"],
    ["key", " 12 ", "12"],
    ["json", "loss", "loss"],
    ["json", '["accuracy"]', ["accuracy"]],
    ["json", '{"kind": "sgd", "lr": 0.1}', { kind: "sgd", lr: 0.1 }],
    ["json", "{broken", "{broken"],
  ];
  const values = cases.map(([kind, text]) => params.parseField(kind, text) ?? (text.trim() ? null : "unset"));
  const expected = cases.map(([, text, value]) => (value !== null || text.trim() === "null" ? value : "unset"));
  assert.deepEqual(values, expected);
  assert.deepEqual([[1, 8, 8], { kind: "adam", lr: 0.003 }, ["a", "b"], undefined, null].map(params.valueText), [
    "[1, 8, 8]",
    '{"kind": "adam", "lr": 0.003}',
    '["a", "b"]',
    "",
    "null",
  ]);
  const unset = [{ kind: "int" }, { kind: "pair", default: null }, { kind: "pair", default: 1 }, { kind: "json" }];
  assert.deepEqual(unset.map(params.unsetText), ["required", "default: none", "default: 1", "not set"]);
  const marked = [{ kind: "int" }, { kind: "int", default: 1 }, { kind: "json" }, { kind: "str", optional: true }];
  assert.deepEqual(marked.map(params.isRequired), [true, false, false, false]);
  assert.deepEqual([{ low: 1 }, { low: 0, high: 1 }, { high: 2 }, {}].map(params.rangeText), [
    "at least 1",
    "from 0 to 1",
    "at most 2",
    "",
  ]);
});

// -- keyboard ---------------------------------------------------------------------------------------

test("shortcuts, and keys that stay with fields and buttons", () => {
  const on = (tagName) => ({ tagName });
  const up = { ctrlKey: false, metaKey: false, shiftKey: false, altKey: false };
  const press = (key, mods = {}, target = on("DIV")) => keys.commandFor({ key, ...up, target, ...mods });
  const ctrl = { ctrlKey: true };
  const commands = [
    press("z", { ctrlKey: true }),
    press("z", { metaKey: true }),
    press("Z", { ctrlKey: true, shiftKey: true }),
    press("y", { ctrlKey: true }),
    press("c", { ctrlKey: true }),
    press("v", { metaKey: true }),
    press("Delete"),
    press("Backspace"),
    press("f"),
    press("F"),
    press("F", { shiftKey: true }),
    press("x", { ctrlKey: true }),
    press("z", { ctrlKey: true, altKey: true }),
    press("a"),
  ];
  assert.deepEqual(plain(commands), [
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
    null,
    null,
    null,
    null,
  ]);
  const editable = { tagName: "DIV", isContentEditable: true };
  const fields = [press("z", ctrl, on("INPUT")), press("Backspace", {}, on("TEXTAREA")), press("c", ctrl, editable)];
  assert.deepEqual(plain(fields), [null, null, null]);
  const buttons = [press("Delete", {}, on("BUTTON")), press("f", {}, on("BUTTON")), press("z", ctrl, on("BUTTON"))];
  assert.deepEqual(plain(buttons), [null, null, "undo"]);
  assert.deepEqual(Object.keys(keys.SHORTCUTS), ["undo", "redo", "copy", "paste", "delete", "fit"]);
});

// -- checks -------------------------------------------------------------------------------------------

test("checks wait for a pause and deliver only the latest text", async () => {
  const settle = () => new Promise((r) => setImmediate(r)); // what the resolved promises run, run
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
  const answer = async (text, found) => {
    waiting.get(text).resolve({ issues: found });
    await settle();
  };
  const got = [];
  const c = new checker.Checker(check, { delay: 100, timers });
  const ask = (text) => c.request(text, (found) => got.push([text, found]));
  ask("o"); // the program opened: checked at once
  assert.deepEqual(calls, ["o"]);
  await answer("o", []);
  ask("a");
  await timers.advance(50);
  ask("b");
  await timers.advance(99);
  assert.deepEqual(calls, ["o"]);
  await timers.advance(1);
  assert.deepEqual(calls, ["o", "b"]);
  ask("c");
  await timers.advance(100); // b's answer comes after c was asked for: dropped
  await answer("b", ["b-issue"]);
  await answer("c", []);
  assert.deepEqual(got, [
    ["o", []],
    ["c", []],
  ]);
  ask("b"); // b's answer was kept: delivered at once, no call
  assert.deepEqual([got.at(-1), calls.length], [["b", ["b-issue"]], 3]);
  ask("d");
  await timers.advance(100);
  waiting.get("d").reject(new Error("the worker stopped"));
  await settle();
  const [text, failed] = got.at(-1);
  assert.equal(text, "d");
  assert.deepEqual(plain(failed), [
    { path: "", node: null, port: null, message: "the engine could not check the program: the worker stopped" },
  ]);
});

// -- the editor's commands ------------------------------------------------------------------------------

test("commands edit through history and never write to their input", () => {
  const p = examples.digits_mlp;
  const s0 = deepFreeze(state.startEditor(program.docOf(p)));
  const s1 = deepFreeze(state.addOp(s0, ops.get("tanh"), { x: 0, y: 0 }));
  assert.deepEqual(s1.selected, { nodes: ["tanh1"], edges: [] });
  assert.equal(s1.notice.text, "Added tanh node tanh1.");
  const wire = (source, target, targetHandle) => ({ source, sourceHandle: "out", target, targetHandle });
  const s2 = deepFreeze(state.connectPorts(s1, ops, wire("hidden", "tanh1", "x")));
  const refused = state.connectPorts(s2, ops, wire("digit", "logits", "x"));
  assert.deepEqual(plain(refused.notice), {
    kind: "error",
    text: "Not connected: input 'x' of 'logits' takes float, but 'digit' gives int.",
  });
  assert.equal(refused.history, s2.history);
  const s3 = deepFreeze(state.setNodeParam(s2, "hidden", "features", 32));
  assert.equal(state.setNodeParam(s3, "hidden", "features", 32), s3);
  const s4 = deepFreeze(state.pasteClipboard(state.copySelected(state.selectOnly(s3, ["tanh1"]))));
  const [g3, g4] = [state.docOf(s3).graph, state.docOf(s4).graph];
  assert.deepEqual(s4.selected.nodes, ["tanh2"]);
  assert.equal(g4.edges.length, g3.edges.length); // the wire into tanh1 stayed behind
  const s5 = deepFreeze(state.deleteSelected(state.selectOnly(s4, ["tanh2"], ["hidden.out->relu.x"])));
  const g5 = state.docOf(s5).graph;
  const has = (list, id) => list.some((item) => item.id === id);
  assert.deepEqual(
    [s5.notice.text, has(g5.nodes, "tanh2"), has(g5.edges, "hidden.out->relu.x")],
    ["Deleted 1 node and 1 edge.", false, false],
  );
  const back = state.undoEdit(state.undoEdit(s5));
  assert.equal(state.docOf(back), state.docOf(s3));
  assert.equal(state.docOf(state.redoEdit(back)), state.docOf(s4));
  const s6 = state.setProgramField(s3, "loop", { epochs: 1, batch_size: 64 });
  assert.deepEqual(state.docOf(s6).rest.loop, { epochs: 1, batch_size: 64 });
  assert.equal(state.setProgramField(s6, "memory", undefined), s6);
  const edited = program.programOf(state.docOf(s3));
  forPython("editor", "edited", edited); // the engine validates it: the editor's program is one the engine takes
  const nodes = Object.fromEntries(edited.nodes.map((n) => [n.id, n]));
  assert.equal(nodes.hidden.params.features, 32);
  assert.equal(nodes.tanh1.op, "tanh");
  assert.deepEqual(plain(state.openText(s3, "[1,", { source: "x.json" }).notice), {
    kind: "error",
    text: "Could not open x.json: line 1, column 4: the text ends too early",
  });
  const same = program.textOf(state.docOf(s3));
  assert.equal(state.openText(s3, same, { source: "the same", fit: true }).history, s3.history);
  const opened = state.openText(s3, JSON.stringify(p), { source: "the example", fit: true });
  assert.deepEqual(
    [opened.fits, opened.notice.text, state.docOf(state.undoEdit(opened)) === state.docOf(s3)],
    [1, "Opened the example.", true],
  );
});

test("a new node covers none of the drawing", () => {
  const graph = program.docOf(examples.digits_mlp).graph;
  const { width, height } = { width: 200, height: 80 };
  const at = graph.nodes.find((n) => n.id === "relu").position;
  const spot = state.freeSpot(graph, at);
  const apart = (n) => Math.abs(n.position.x - spot.x) >= width || Math.abs(n.position.y - spot.y) >= height;
  assert.ok(graph.nodes.every(apart));
  assert.ok(spot.y === at.y && spot.x > at.x); // on the same row
  assert.deepEqual(state.freeSpot(graph, { x: 5000, y: 5000 }), { x: 5000, y: 5000 }); // open space
});

test("selection follows React Flow's changes in order", () => {
  let s = state.startEditor(program.docOf(examples.digits_mlp));
  const pick = (id, selected) => ({ id, type: "select", selected });
  s = state.selectChanges(s, "nodes", [pick("relu", true), pick("hidden", true)]);
  assert.deepEqual(s.selected.nodes, ["relu", "hidden"]);
  s = state.selectChanges(s, "nodes", [pick("relu", false), { id: "relu", type: "dimensions" }]);
  assert.deepEqual(s.selected.nodes, ["hidden"]);
  assert.equal(state.selectChanges(s, "nodes", [{ id: "relu", type: "dimensions" }]), s);
  s = state.selectOnly(s, ["gone"], ["gone-edge"]);
  assert.deepEqual(state.selection(s), { nodes: [], edges: [] });
  assert.equal(state.deleteSelected(s).notice.text, "Nothing is selected to delete.");
});

// -- what React Flow draws ------------------------------------------------------------------------------

test("the engine's issues are drawn on nodes, ports, params and edges", () => {
  // digits-mlp with hidden's features 0 and a tanh node not connected, and the engine's two issues of it
  const { program: p, issues: found } = input.drawn;
  assert.equal(found.length, 2);
  const doc = program.docOf(p);
  const marks = issues.issueMarks(found, doc.graph);
  const measured = new Map([["relu", { width: 200, height: 80 }]]);
  const dragging = new Map([["loss", { x: 1, y: 2 }]]);
  const drawn = view.viewNodes(doc.graph, ops, { selected: ["relu"], measured, dragging }, marks);
  const byId = Object.fromEntries(drawn.map((n) => [n.id, n]));
  const hidden = plain(byId.hidden.data.face);
  const tanh = plain(byId.tanh1.data.face);
  assert.deepEqual(hidden.issues, ["features: must be at least 1, got 0"]);
  assert.equal(hidden.summary, "features 0");
  assert.deepEqual(hidden.inputs, [{ name: "x", kind: "float", multiple: false, issues: [] }]);
  assert.deepEqual(tanh.inputs[0].issues, ["input 'x' of tanh is not connected"]);
  assert.deepEqual(tanh.issues, ["input x: input 'x' of tanh is not connected"]);
  const { relu, loss } = byId;
  assert.deepEqual(
    plain([relu.selected, relu.measured, byId.hidden.measured ?? null, loss.position, byId.hidden.ariaLabel]),
    [true, { width: 200, height: 80 }, null, { x: 1, y: 2 }, "linear node hidden, 1 problem(s)"],
  );
  const edges = Object.fromEntries(view.viewEdges(doc.graph, ops, [], marks).map((e) => [e.id, e.className]));
  assert.equal(edges["digit.out->loss.labels"], "kind-int");
  assert.equal(edges["hidden.out->relu.x"], "kind-float");
  assert.deepEqual(
    view.problems(found, doc.graph).map((q) => [q.owner, q.text, q.node]),
    [
      ["hidden", "features: must be at least 1, got 0", "hidden"],
      ["tanh1", "input x: input 'x' of tanh is not connected", "tanh1"],
    ],
  );
  assert.deepEqual(
    [view.blockedWhy(found), view.blockedWhy(found.slice(1)), view.blockedWhy([])],
    [
      "the program in the editor has 2 problems; the first: hidden features: must be at least 1, got 0",
      "the program in the editor has a problem: tanh1 input x: input 'x' of tanh is not connected",
      "",
    ],
  );
  const conv = ops.get("conv2d");
  const set = { out_channels: 16, kernel: 3, padding: 1, stride: 1 };
  assert.deepEqual(
    [view.keyParams(conv, set), view.keyParams(conv, {}), view.keyParams(undefined, { a: 1 })],
    ["out_channels 16 · kernel 3 · stride 1 …", "out_channels ? · kernel ?", "a 1"],
  );
});

test("an edge the engine refuses is marked", () => {
  // digits-mlp with its first edge into hidden's port y, which linear lacks, and the engine's issues of it
  const { program: p, issues: found } = input.refused_edge;
  const doc = program.docOf(p);
  const marks = issues.issueMarks(found, doc.graph);
  const edge = plain(view.viewEdges(doc.graph, ops, [], marks)[0]);
  assert.ok(edge.className.includes("edge-issue"), edge.className);
  assert.ok(edge.data.issues.length > 0, JSON.stringify(edge.data));
  assert.ok(edge.ariaLabel.startsWith("Edge pixels.out to hidden.y: "), edge.ariaLabel);
});

test("React Flow's changes are sorted into what the editor keeps", () => {
  const sorted = withMaps(
    view.sortNodeChanges([
      { id: "a", type: "dimensions", dimensions: { width: 200, height: 80 } },
      { id: "a", type: "select", selected: true },
      { id: "b", type: "position", position: { x: 1, y: 2 }, dragging: true },
      { id: "c", type: "position", position: { x: 3, y: 4 }, dragging: false },
      { id: "d", type: "position", dragging: false },
      { id: "e", type: "remove" },
    ]),
  );
  assert.deepEqual(sorted, {
    measured: [["a", { width: 200, height: 80 }]],
    select: [{ id: "a", type: "select", selected: true }],
    dragging: [["b", { x: 1, y: 2 }]],
    moved: { c: { x: 3, y: 4 } },
  });
});
