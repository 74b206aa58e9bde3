// The graph editor's pure model (app/src/graph/*.js) under Node: the palette from the engine's catalog,
// graph <-> program JSON (exact for every example), the automatic layout, the edits and connection rules,
// copy/paste, undo/redo, validation issues put onto the drawing, and program text in and out. Python
// writes the inputs (examples, catalog, the validator's issues: tests/js_inputs.py), and checks the
// programs written here with the engine (tests/test_js.py).
import assert from "node:assert/strict";
import { test } from "node:test";
import * as edits from "../../app/src/graph/edits.js";
import * as history from "../../app/src/graph/history.js";
import * as io from "../../app/src/graph/io.js";
import * as issues from "../../app/src/graph/issues.js";
import * as layout from "../../app/src/graph/layout.js";
import * as model from "../../app/src/graph/model.js";
import * as palette from "../../app/src/graph/palette.js";
import * as wiring from "../../app/src/graph/wiring.js";
import { forPython, pythonInputs, splitlines } from "./lib.js";

const input = pythonInputs("graph_model");
const { examples, catalog } = input;
const ops = palette.opIndex(catalog);

// Edits must never write to their input: a frozen graph throws on any write (modules are strict).
const deepFreeze = (v) => {
  if (v && typeof v === "object") {
    Object.values(v).forEach(deepFreeze);
    Object.freeze(v);
  }
  return v;
};
const plain = (v) => JSON.parse(JSON.stringify(v, (k, x) => (x instanceof Map ? Object.fromEntries(x) : x)));
const byId = (graph, id) => graph.nodes.find((n) => n.id === id);

// -- graph <-> program -------------------------------------------------------------------------------

test("every example round trips exactly", () => {
  const written = {};
  for (const [name, program] of Object.entries(examples)) {
    const graph = model.toGraph(deepFreeze(structuredClone(program)));
    const back = model.toProgram(graph, model.restOf(program));
    assert.equal(JSON.stringify(back), JSON.stringify(program), name); // same text: same order of everything
    assert.deepEqual(
      graph.nodes.map((n) => n.id),
      program.nodes.map((n) => n.id),
      name,
    );
    program.nodes.forEach((source, i) => {
      const node = graph.nodes[i];
      assert.deepEqual(Object.keys(node).sort(), ["data", "id", "position", "type"], name);
      assert.equal(node.type, "op", name);
      assert.deepEqual(node.data, { op: source.op, params: source.params ?? {}, placed: false }, name);
    });
    assert.equal(graph.edges.length, program.edges.length, name);
    program.edges.forEach((source, i) => {
      const edge = graph.edges[i];
      assert.deepEqual([edge.source, edge.sourceHandle], [source.from.node, source.from.port], name);
      assert.deepEqual([edge.target, edge.targetHandle], [source.to.node, source.to.port], name);
    });
    assert.equal(new Set(graph.edges.map((e) => e.id)).size, graph.edges.length, name);
    written[name] = back;
  }
  forPython("graph_model", "round_trips", written); // the engine validates each
});

test("positions live in the program's own field and only where known", () => {
  const program = input.positioned; // digits-mlp with a position for pixels, which the engine validates
  const same = model.toProgram(model.toGraph(program), model.restOf(program));
  assert.equal(JSON.stringify(same), JSON.stringify(program));
  const graph = model.toGraph(program, { relu: { x: 1, y: 2 } });
  assert.deepEqual(
    graph.nodes.filter((n) => n.data.placed).map((n) => [n.id, n.position]),
    [
      ["pixels", { x: 10, y: -20.5 }],
      ["relu", { x: 1, y: 2 }],
    ],
  );
  const given = model.toProgram(graph, model.restOf(program));
  const positions = Object.fromEntries(given.nodes.map((n) => [n.id, n.position ?? null]));
  assert.deepEqual(positions.relu, { x: 1, y: 2 });
  assert.equal(positions.hidden, null);
  forPython("graph_model", "positioned", given); // the engine validates it
});

test("a broken program round trips too", () => {
  const { program, expected } = input.broken_round_trip;
  const back = model.toProgram(model.toGraph(program), model.restOf(program));
  // an empty params object means no params: it is left out (`expected` is the program without it)
  assert.deepEqual(back, expected);
  assert.deepEqual(Object.keys(back), Object.keys(expected));
  assert.ok([back.nodes[2], back].every((o) => Object.getPrototypeOf(o) === Object.prototype));
  assert.deepEqual(Object.keys(back.nodes[2]), ["id", "op", "params", "label", "color", "__proto__"]);
});

// -- layout ------------------------------------------------------------------------------------------

const { width, height } = layout.NODE_SIZE;
const overlaps = (nodes) => {
  const found = [];
  for (let i = 0; i < nodes.length; i++) {
    for (let j = i + 1; j < nodes.length; j++) {
      const [a, b] = [nodes[i].position, nodes[j].position];
      if (Math.abs(a.x - b.x) < width && Math.abs(a.y - b.y) < height) found.push([nodes[i].id, nodes[j].id]);
    }
  }
  return found;
};

test("layout by depth is deterministic and without overlaps", () => {
  const rows = {};
  for (const [name, program] of Object.entries(examples)) {
    const graph = model.toGraph(program);
    const at = new Map(graph.nodes.map((n) => [n.id, n.position]));
    assert.deepEqual(overlaps(graph.nodes), [], name);
    const upward = graph.edges.filter((e) => at.get(e.source).y >= at.get(e.target).y).map((e) => e.id);
    assert.deepEqual(upward, [], name);
    assert.equal(JSON.stringify(model.toGraph(program)), JSON.stringify(graph), name);
    rows[name] = new Set(graph.nodes.map((n) => n.position.y)).size;
  }
  assert.equal(rows.digits_mlp, 5); // inputs; hidden; relu; logits; loss and accuracy
  assert.equal(rows.deep_chain, 2 + 2 * 10 + 1);
});

test("layout keeps placed nodes and puts the rest beside them", () => {
  const program = input.placed_cnn; // digits-cnn, its first five nodes placed (overlapping: the user's choice)
  const graph = model.toGraph(program);
  const placed = graph.nodes.filter((n) => n.data.placed);
  const free = graph.nodes.filter((n) => !n.data.placed);
  assert.deepEqual(
    placed.map((n) => n.position),
    program.nodes.slice(0, 5).map((n) => n.position),
  );
  const onPlaced = free.flatMap((f) => overlaps([f, ...placed]).filter((pair) => pair[0] === f.id));
  assert.deepEqual([...onPlaced, ...overlaps(free)], []);
  const wire = ([s, t]) => ({ from: { node: s, port: "out" }, to: { node: t, port: "x" } });
  const cycle = model.toGraph({
    nodes: [
      { id: "a", op: "relu" },
      { id: "b", op: "relu" },
      { id: "c", op: "exp" },
    ],
    edges: [
      ["a", "b"],
      ["b", "a"],
      ["a", "c"],
    ].map(wire),
  });
  assert.deepEqual(overlaps(cycle.nodes), []);
});

// -- palette -----------------------------------------------------------------------------------------

test("the palette groups every catalog op by category", () => {
  const groups = palette.paletteGroups(catalog);
  assert.deepEqual(
    groups.map((g) => g.category),
    catalog.categories,
  );
  const listed = groups.flatMap((g) => g.ops.map((op) => op.name));
  assert.deepEqual([...listed].sort(), catalog.ops.map((op) => op.name).sort());
  assert.equal(new Set(listed).size, listed.length);
  for (const group of groups) {
    for (const op of group.ops) {
      const source = catalog.ops.find((o) => o.name === op.name);
      assert.equal(source.category, group.category);
      assert.equal(op.doc, source.doc);
      assert.deepEqual(op.inputs, source.inputs);
      assert.equal(op.output.name, "out");
      assert.equal(op.params.length, source.params.length, op.name);
      op.params.forEach((param, i) => {
        const given = source.params[i];
        assert.deepEqual(param, { ...given, required: !("default" in given) });
      });
    }
  }
  assert.deepEqual(palette.initialParams(ops.get("linear")), {
    params: { bias: true, trainable: true },
    required: ["features"],
  });
  const conv = palette.initialParams(ops.get("conv2d"));
  assert.deepEqual(conv.required, ["out_channels", "kernel"]);
  assert.equal(conv.params.stride, 1);
  assert.deepEqual(palette.initialParams(ops.get("input")), {
    params: { dtype: "float32", role: "features" },
    required: ["shape"],
  });
  assert.deepEqual(palette.missingParams(ops.get("slice"), { starts: [0] }), ["stops"]);
  const kinds = [
    palette.outputKind(ops.get("input"), {}),
    palette.outputKind(ops.get("input"), { dtype: "int32" }),
    palette.outputKind(ops.get("input"), { dtype: "float64" }),
    palette.outputKind(ops.get("less"), {}),
    palette.outputKind(ops.get("linear"), {}),
  ];
  assert.deepEqual(kinds, ["float", "int", "any", "bool", "float"]);
  const crops = [1, 2].map(() => palette.initialParams(ops.get("random_crop")).params);
  assert.notEqual(crops[0], crops[1]); // not one shared object
});

// -- edits -------------------------------------------------------------------------------------------

test("add, remove, set and move are pure", () => {
  const program = examples.digits_mlp;
  const g0 = deepFreeze(model.toGraph(program));
  const g1 = edits.addNode(g0, ops.get("linear"), { x: 5, y: 6 });
  const g2 = edits.addNode(g1, ops.get("linear"));
  const ids = [g1.nodes.at(-1).id, g2.nodes.at(-1).id, edits.newId(edits.removeNodes(g2, ["linear1"]), "linear")];
  assert.deepEqual(ids, ["linear1", "linear2", "linear3"]);
  assert.deepEqual(g1.nodes.at(-1), {
    id: "linear1",
    type: "op",
    position: { x: 5, y: 6 },
    data: { op: "linear", params: { bias: true, trainable: true }, placed: true },
  });
  assert.ok(g2.nodes.at(-1).position.x > 5);
  assert.ok(g1.nodes.every((n) => n.data.placed));
  const g3 = edits.removeNodes(g0, ["relu"]);
  assert.deepEqual(
    g3.nodes.map((n) => n.id),
    ["pixels", "digit", "hidden", "logits", "loss", "accuracy"],
  );
  assert.ok(g3.edges.every((e) => !e.id.includes("relu")));
  assert.equal(g3.edges.length, 5);
  const g4 = edits.setParam(edits.setParam(g0, "hidden", "bias", false), "hidden", "features", 32);
  const params = byId(g4, "hidden").data.params;
  assert.deepEqual(params, { features: 32, bias: false });
  assert.deepEqual(Object.keys(params), ["features", "bias"]); // a changed parameter keeps its place in the file
  assert.deepEqual(byId(edits.setParam(g4, "hidden", "features", undefined), "hidden").data.params, { bias: false });
  assert.equal(byId(edits.setLabel(g0, "relu", "activation"), "relu").data.label, "activation");
  const g5 = edits.moveNodes(g0, new Map([["relu", { x: 7, y: 8 }]]));
  const moved = model.toProgram(g5, model.restOf(program)).nodes.map((n) => n.position ?? null);
  assert.equal(moved.length, 7);
  assert.deepEqual(moved[3], { x: 7, y: 8 });
  assert.ok(!moved.includes(null));
  assert.equal(g4.nodes.filter((n, i) => n === g0.nodes[i]).length, 6); // only the edited node is new
  assert.equal(JSON.stringify(model.toProgram(g0, model.restOf(program))), JSON.stringify(program));
});

// wiring.connect's refusal, or null, of a wire from `source` into `target`'s `targetHandle`.
const connect = (graph, source, target, targetHandle, sourceHandle = "out") =>
  wiring.connect(graph, ops, { source, sourceHandle, target, targetHandle });
const withoutInputsOf = (graph, node) =>
  edits.disconnect(
    graph,
    graph.edges.filter((e) => e.target === node).map((e) => e.id),
  );

test("connections the catalog forbids are refused with the reason", () => {
  const program = examples.digits_mlp;
  const g = deepFreeze(model.toGraph(program));
  const free = withoutInputsOf(g, "hidden");
  const refused = {
    kind: connect(free, "digit", "hidden", "x").error,
    labels: connect(g, "logits", "loss", "labels").error,
    taken: connect(g, "pixels", "hidden", "x").error,
    port: connect(g, "pixels", "hidden", "y").error,
    source: connect(free, "pixels", "hidden", "x", "value").error,
    node: connect(free, "nobody", "hidden", "x").error,
  };
  assert.deepEqual(refused, {
    kind: "input 'x' of 'hidden' takes float, but 'digit' gives int",
    labels: "input 'labels' of 'loss' takes int, but 'logits' gives float",
    taken: "input 'x' of 'hidden' takes one edge and has one from 'pixels': disconnect it first",
    port: "linear has no input port 'y' (it has: x)",
    source: "input has one output port, 'out'",
    node: "there is no node 'nobody'",
  });
  assert.equal(connect(g, "digit", "hidden", "x").graph, g);
  const ok = connect(free, "pixels", "hidden", "x");
  assert.deepEqual(
    { error: ok.error, edge: ok.graph.edges.at(-1) },
    {
      error: null,
      edge: { id: "pixels.out->hidden.x", source: "pixels", sourceHandle: "out", target: "hidden", targetHandle: "x" },
    },
  );
  forPython("graph_model", "reconnected", model.toProgram(ok.graph, model.restOf(program))); // the engine validates it
  let c = edits.addNode(g, ops.get("concat"), { x: 0, y: 0 });
  for (const s of ["relu", "relu", "logits"]) c = connect(c, s, "concat1", "xs").graph;
  assert.deepEqual(
    c.edges.filter((e) => e.target === "concat1").map((e) => e.id),
    ["relu.out->concat1.xs", "relu.out->concat1.xs#2", "logits.out->concat1.xs"],
  );
  let w = edits.addNode(g, ops.get("where"), { x: 0, y: 0 });
  w = edits.addNode(w, ops.get("less"), { x: 0, y: 0 });
  assert.deepEqual(
    [connect(w, "less1", "where1", "cond").error, connect(w, "relu", "where1", "cond").error],
    [null, "input 'cond' of 'where1' takes bool, but 'relu' gives float"],
  );
  const tokens = edits.setParam(edits.addNode(g, ops.get("input"), { x: 0, y: 0 }), "input1", "dtype", "int32");
  assert.deepEqual(
    [
      connect(tokens, "input1", "hidden", "x").error,
      connect(edits.addNode(tokens, ops.get("embedding")), "input1", "embedding1", "indices").error,
    ],
    ["input 'x' of 'hidden' takes float, but 'input1' gives int", null],
  );
});

test("a connection closing a cycle is refused naming the cycle", () => {
  const g = model.toGraph(examples.digits_mlp);
  const free = withoutInputsOf(g, "hidden");
  const acyclic = ": a program must be acyclic";
  assert.equal(
    connect(free, "logits", "hidden", "x").error,
    `it would close a cycle 'logits' -> 'hidden' -> 'relu' -> 'logits'${acyclic}`,
  );
  assert.equal(connect(free, "hidden", "hidden", "x").error, `'hidden' would be its own input (a cycle)${acyclic}`);
  let c = withoutInputsOf(edits.addNode(g, ops.get("concat"), { x: 0, y: 0 }), "hidden");
  c = connect(c, "pixels", "concat1", "xs").graph;
  c = connect(c, "concat1", "hidden", "x").graph;
  assert.deepEqual(
    c.edges.map((e) => e.id).filter((id) => id.includes("concat1")),
    ["pixels.out->concat1.xs", "concat1.out->hidden.x"],
  );
  assert.equal(
    connect(c, "logits", "concat1", "xs").error,
    `it would close a cycle 'logits' -> 'concat1' -> 'hidden' -> 'relu' -> 'logits'${acyclic}`,
  );
  assert.equal(connect(c, "pixels", "concat1", "xs").error, null);
});

test("paste renames, keeps internal edges and drops external ones", () => {
  const g = deepFreeze(model.toGraph(examples.digits_mlp));
  const moved = edits.moveNodes(g, new Map([["hidden", { x: 10, y: 20 }]]));
  const clip = deepFreeze(edits.copySelection(moved, ["hidden", "relu"]));
  assert.deepEqual(
    clip.edges.map((e) => e.id),
    ["hidden.out->relu.x"],
  ); // pixels -> hidden and relu -> logits stay behind
  const once = edits.paste(g, clip);
  const twice = edits.paste(once.graph, clip, { x: 0, y: 100 });
  assert.deepEqual(
    [once.ids, twice.ids],
    [
      ["hidden2", "relu2"],
      ["hidden3", "relu3"],
    ],
  );
  assert.deepEqual(
    twice.graph.edges.slice(g.edges.length).map((e) => e.id),
    ["hidden2.out->relu2.x", "hidden3.out->relu3.x"],
  );
  assert.deepEqual(byId(twice.graph, "hidden3").position, { x: 10, y: 120 });
  assert.deepEqual(byId(once.graph, "hidden2").data, { op: "linear", params: { features: 128 }, placed: true });
  assert.deepEqual(edits.paste({ nodes: [], edges: [] }, clip).ids, ["hidden", "relu"]); // free ids are kept
  const cnn = model.toGraph(examples.digits_cnn);
  assert.deepEqual(edits.paste(cnn, edits.copySelection(cnn, ["conv1"])).ids, ["conv3"]); // conv2 exists: numbered past it
});

test("undo and redo within a bounded depth", () => {
  let h = history.startHistory("s0", 3);
  for (const s of ["s1", "s2", "s3", "s4", "s5"]) h = history.record(h, s);
  assert.deepEqual(h.past, ["s2", "s3", "s4"]);
  assert.equal(history.record(h, "s5"), h);
  const undone = [];
  for (let i = 0; i < 4; i++) {
    h = history.undo(h);
    undone.push(h.present);
  }
  assert.deepEqual(undone, ["s4", "s3", "s2", "s2"]); // the fourth undo has nothing left
  assert.deepEqual([history.canUndo(h), history.canRedo(h)], [false, true]);
  h = history.redo(history.redo(h));
  assert.equal(h.present, "s4");
  h = history.record(h, "t");
  assert.deepEqual(
    { present: h.present, future: h.future, canRedo: history.canRedo(h), past: h.past },
    { present: "t", future: [], canRedo: false, past: ["s2", "s3", "s4"] },
  );
  assert.equal(history.redo(h), h);
  const zero = history.record(history.startHistory("a", 0), "b");
  assert.deepEqual([zero.past, history.undo(zero).present], [[], "b"]);
});

// -- validation issues onto the drawing --------------------------------------------------------------

test("issues are put on their nodes, ports, params and edges", () => {
  const { broken, given } = input; // programs broken one way each, and the engine's issues of each
  const out = {};
  for (const [name, program] of Object.entries(broken)) {
    const graph = model.toGraph(program);
    assert.deepEqual(model.toProgram(graph, model.restOf(program)), program); // the issues index this graph
    out[name] = {
      located: given[name].map((i) => issues.locateIssue(i, graph)),
      marks: plain(issues.issueMarks(given[name], graph)),
    };
  }
  const where = (name) => out[name].located.map((a) => [a.node, a.port, a.param, a.field, a.edge, a.end]);
  assert.deepEqual(where("params"), [
    ["hidden", null, "features", null, null, null],
    ["relu", null, null, "color", null, null],
    ["relu", null, null, "op", null, null],
    ["logits", null, "features", null, null, null],
  ]);
  const hiddenY = broken.ports.edges.findIndex((e) => e.to.node === "hidden" && e.to.port === "y");
  assert.equal(out.ports.located[0].path, `edges[${hiddenY}].to.port`);
  assert.deepEqual(where("ports"), [
    ["hidden", "y", null, null, "pixels.out->hidden.y", "target"], // the edge to a port linear lacks
    ["hidden", "x", null, null, null, null], // so its own x is not connected
  ]);
  assert.deepEqual(where("types"), [["hidden", "x", null, null, null, null]]);
  assert.deepEqual(where("cycle"), [
    ["hidden", null, null, null, null, null],
    ["relu", null, null, null, null, null],
  ]);
  const byText = (rows) => [...rows].sort((a, b) => (String(a) < String(b) ? -1 : 1));
  assert.deepEqual(
    byText(where("settings")),
    byText([
      ["logits", null, null, "loss", null, null],
      [null, null, null, "optimizer", null, null],
    ]),
  );
  assert.deepEqual(where("ids")[0], ["9relu", null, null, "id", null, null]);
  const { marks } = out.ports;
  assert.deepEqual(Object.keys(marks.nodes), ["hidden"]);
  assert.equal(marks.nodes.hidden.length, 2);
  assert.deepEqual(Object.keys(marks.edges), ["pixels.out->hidden.y"]);
  assert.deepEqual(marks.program, []);
  assert.deepEqual(
    out.settings.marks.program.map((m) => m.field),
    ["optimizer"],
  );
  assert.deepEqual(
    out.types.located.map((m) => m.message),
    given.types.map((i) => i.message),
  );
});

// -- program text in and out -------------------------------------------------------------------------

test("import names where the text is wrong", () => {
  const shape = {
    nodes: [
      { id: "a", op: "relu" },
      { id: "a", op: 3 },
      { id: "b", op: "relu", position: [1, 2] },
    ],
    edges: [{ from: { node: "a", port: "out" }, to: { node: "zz", port: "x" } }, { from: 1 }],
  };
  const texts = {
    syntax: '{\n  "format": "scellis.program/1",\n  "nodes": [\n    {"id": "x", "op": "input",}\n  ]\n}',
    ended: '{"nodes": [',
    after: "{} {}",
    string: '{"name": "a\nb"}',
    shape: JSON.stringify(shape),
    list: "[1, 2]",
    good: JSON.stringify(examples.digits_mlp),
  };
  const out = Object.fromEntries(Object.entries(texts).map(([name, text]) => [name, io.importProgram(text)]));
  assert.deepEqual(out.syntax.errors, [{ line: 4, column: 31, message: "expected a key in double quotes" }]);
  assert.deepEqual(out.ended.errors, [{ line: 1, column: 12, message: "the text ends too early" }]);
  assert.equal(out.after.errors[0].column, 4);
  assert.deepEqual(out.string.errors[0], {
    line: 1,
    column: 10,
    message: "a string that is not closed, or holds a bad escape or a raw control character",
  });
  assert.deepEqual(
    out.shape.errors.map((e) => e.path),
    ["nodes[1].id", "nodes[1].op", "nodes[2].position", "edges[0].to.node", "edges[1]"],
  );
  assert.equal(out.shape.program, null);
  assert.ok(out.shape.errors[3].message.includes('there is no node "zz"'), out.shape.errors[3].message);
  assert.deepEqual(out.list.errors, [{ path: "", message: "a program is a JSON object" }]);
  assert.deepEqual(out.good, { program: examples.digits_mlp, errors: [] });
});

test("export is stable, one node and one edge a line", () => {
  const texts = {};
  for (const [name, program] of Object.entries(examples)) {
    const text = io.exportProgram(model.toProgram(model.toGraph(program), model.restOf(program)));
    assert.deepEqual(JSON.parse(text), program, name);
    assert.equal(io.exportProgram(io.importProgram(text).program), text, name);
    // braces, a line per field, a closing line for the node and edge lists, a line per node and per edge
    const lines = splitlines(text);
    assert.equal(lines.length, Object.keys(program).length + 2 + 2 + program.nodes.length + program.edges.length, name);
    texts[name] = text;
  }
  const first = splitlines(texts.digits_mlp);
  assert.deepEqual(first.slice(0, 4), [
    "{",
    '  "format": "scellis.program/1",',
    '  "name": "digits-mlp",',
    '  "nodes": [',
  ]);
  const params = '"params": {"shape": [64], "dtype": "float32", "role": "features"}';
  assert.equal(first[4], `    {"id": "pixels", "op": "input", ${params}},`);
});
