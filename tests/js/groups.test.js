// Folding a program's layers (app/src/graph/groups.js): which nodes form a group, what a folded drawing
// holds (one box per folded group at a free place, every crossing edge redrawn to the box once, the
// edges inside a group gone), and that the document itself is never changed.
import assert from "node:assert/strict";
import { test } from "node:test";
import { foldedGraph, groupsOf, isBox } from "../../app/src/graph/groups.js";

const node = (id, op, x, y) => ({ id, type: "op", position: { x, y }, data: { op, params: {} } });
const edge = (source, target, targetHandle = "x") => ({
  id: `${source}>${target}.${targetHandle}`,
  source,
  sourceHandle: "out",
  target,
  targetHandle,
});

// input -> layer0 (4 nodes, two of them read the input) -> layer1 (4 nodes) -> loss; "head-a" and
// "head-b" share a prefix but are too few to fold.
function encoder() {
  const nodes = [node("input", "input", 0, 0)];
  const edges = [];
  for (const [layer, from, y] of [
    ["layer0", "input", 100],
    ["layer1", "layer0-out", 600],
  ]) {
    nodes.push(node(`${layer}-query`, "linear", 0, y + 100), node(`${layer}-key`, "linear", 240, y));
    nodes.push(node(`${layer}-mix`, "matmul", 0, y + 200), node(`${layer}-out`, "add", 0, y + 300));
    edges.push(edge(from, `${layer}-query`), edge(from, `${layer}-key`));
    edges.push(edge(`${layer}-query`, `${layer}-mix`, "a"), edge(`${layer}-key`, `${layer}-mix`, "b"));
    edges.push(edge(`${layer}-mix`, `${layer}-out`, "a"), edge(from, `${layer}-out`, "b"));
  }
  nodes.push(node("head-a", "linear", 0, 1100), node("head-b", "softmax", 0, 1200), node("loss", "mean", 0, 1300));
  edges.push(edge("layer1-out", "head-a"), edge("head-a", "head-b"), edge("head-b", "loss"));
  return Object.freeze({ nodes: Object.freeze(nodes), edges: Object.freeze(edges) });
}

test("nodes whose ids share the part before the first dash form a group when at least four do", () => {
  const groups = groupsOf(encoder());
  assert.deepEqual([...groups.keys()], ["layer0", "layer1"]);
  assert.deepEqual(groups.get("layer0"), ["layer0-query", "layer0-key", "layer0-mix", "layer0-out"]);
  assert.equal(groupsOf({ nodes: [node("-a", "x", 0, 0)], edges: [] }).size, 0);
});

test("a group that a path leaves and enters again is no group: folded, it would draw a cycle", () => {
  const graph = encoder();
  // head-a -> side -> head-c and head-b -> head-d: head-a..d leave through "side" and come back
  const nodes = [...graph.nodes, node("side", "relu", 0, 0), node("head-c", "add", 0, 0), node("head-d", "add", 0, 0)];
  const edges = [...graph.edges, edge("head-a", "side"), edge("side", "head-c"), edge("head-b", "head-d")];
  assert.deepEqual([...groupsOf({ nodes, edges }).keys()], ["layer0", "layer1"]);
  const straight = [...graph.edges, edge("head-b", "head-c"), edge("head-c", "head-d")];
  assert.deepEqual([...groupsOf({ nodes, edges: straight }).keys()], ["layer0", "layer1", "head"]);
});

test("nothing folded draws the graph itself", () => {
  const graph = encoder();
  assert.equal(foldedGraph(graph, new Set()), graph);
  assert.equal(foldedGraph(graph, new Set(["head"])), graph); // not a group: nothing to fold
});

test("a folded group is one box, its crossing edges drawn to the box once, the drawing laid out afresh", () => {
  const graph = encoder();
  const drawn = foldedGraph(graph, new Set(["layer0"]));
  const ids = drawn.nodes.map((n) => n.id);
  assert.ok(!ids.some((id) => id.startsWith("layer0-")));
  const box = drawn.nodes.find((n) => n.id === "group:layer0");
  assert.equal(box.type, "group");
  // input, the box, layer1's linears, its matmul, its add, head-a, head-b, loss: one row each but the linears
  const rows = new Map(drawn.nodes.map((n) => [n.id, n.position.y]));
  assert.ok(rows.get("input") < rows.get("group:layer0") && rows.get("group:layer0") < rows.get("layer1-query"));
  assert.equal(rows.get("layer1-query"), rows.get("layer1-key"));
  assert.notEqual(
    drawn.nodes.find((n) => n.id === "layer1-query").position.x,
    drawn.nodes.find((n) => n.id === "layer1-key").position.x,
  );
  assert.ok(rows.get("head-b") < rows.get("loss"));
  assert.deepEqual(box.data, {
    name: "layer0",
    ids: ["layer0-query", "layer0-key", "layer0-mix", "layer0-out"],
    ops: ["linear", "matmul", "add"],
  });
  assert.ok(isBox(box.id) && !ids.filter((id) => id !== box.id).some(isBox));
  const boxed = drawn.edges.filter((e) => e.box);
  // input feeds the group three times (query, key, the residual into out): one edge; layer0-out feeds
  // three ends of layer1: three edges
  assert.deepEqual(
    boxed.map((e) => `${e.source}.${e.sourceHandle}>${e.target}.${e.targetHandle}`),
    [
      "input.out>group:layer0.in",
      "group:layer0.out>layer1-query.x",
      "group:layer0.out>layer1-key.x",
      "group:layer0.out>layer1-out.b",
    ],
  );
  const inside = drawn.edges.filter((e) => e.source.startsWith("layer0-") || e.target.startsWith("layer0-"));
  assert.deepEqual(inside, []);
  const kept = drawn.edges.filter((e) => !e.box);
  assert.equal(kept.length, graph.edges.length - 9); // layer0's 6 edges and the 3 from layer0-out
  assert.equal(graph.nodes.length, 12); // the document keeps every node, in its places
  assert.deepEqual(graph.nodes[1].position, { x: 0, y: 200 });
});

test("two neighbouring folded groups are joined by one edge between their boxes", () => {
  const drawn = foldedGraph(encoder(), new Set(["layer0", "layer1"]));
  assert.equal(drawn.nodes.length, 6); // input, two boxes, head-a, head-b, loss
  const between = drawn.edges.filter((e) => e.source === "group:layer0" && e.target === "group:layer1");
  assert.equal(between.length, 1);
  assert.ok(drawn.edges.some((e) => e.source === "group:layer1" && e.target === "head-a"));
});
