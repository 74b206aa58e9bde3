// Folding a large program's layers: the nodes whose ids share the part before their first "-" (a
// pretrained encoder's "layer3-query-linear", "layer3-attention", ...) form a group when at least
// GROUP_MIN do and no path leaves the group and comes back; a folded group is drawn as one box, with the
// edges that cross into or out of it drawn to the box (one per pair of ends). Only the drawing folds: the
// document keeps every node. No DOM.

import { autoLayout } from "./layout.js";

export const GROUP_MIN = 4;
export const FOLD_PREFIX = "group:"; // a folded group's box id: never a node id (ids have no ":")
export const AUTO_FOLD = 80; // programs of more nodes open with every group folded

// Group name -> the ids of its nodes, in document order. Only a group no path leaves and enters again
// counts (folded, it would be a box feeding what feeds it: a cycle the drawing does not have), so no
// folding of groups draws a cycle.
export function groupsOf(graph) {
  const members = new Map();
  for (const node of graph.nodes) {
    const cut = node.id.indexOf("-");
    if (cut <= 0) continue;
    const name = node.id.slice(0, cut);
    if (!members.has(name)) members.set(name, []);
    members.get(name).push(node.id);
  }
  const users = new Map(graph.nodes.map((n) => [n.id, []]));
  for (const { source, target } of graph.edges) users.get(source)?.push(target);
  return new Map([...members].filter(([, ids]) => ids.length >= GROUP_MIN && !reenters(new Set(ids), users)));
}

// Whether a path from a node in `inside` through nodes outside it reaches `inside` again.
function reenters(inside, users) {
  const seen = new Set();
  const todo = [];
  for (const id of inside) for (const user of users.get(id)) if (!inside.has(user)) todo.push(user);
  while (todo.length) {
    const id = todo.pop();
    if (seen.has(id)) continue;
    seen.add(id);
    for (const user of users.get(id) ?? []) {
      if (inside.has(user)) return true;
      todo.push(user);
    }
  }
  return false;
}

// The graph as drawn with the groups named in `folded` folded (`groups`: groupsOf(graph), when the caller
// has it already): their nodes replaced by one node each
// ({id: "group:<name>", type: "group", data: {name, ids, ops}}), each edge that crosses a folded group's
// border redrawn to its box (`box: true`, once per pair of ends), and every node drawn laid out afresh
// (graph/layout.js: the document's places are for the unfolded drawing, far too tall once folded).
export function foldedGraph(graph, folded, groups = groupsOf(graph)) {
  const owner = new Map();
  for (const name of folded) for (const id of groups.get(name) ?? []) owner.set(id, name);
  if (!owner.size) return graph;
  const byId = new Map(graph.nodes.map((n) => [n.id, n]));
  const nodes = graph.nodes.filter((n) => !owner.has(n.id));
  for (const name of folded) {
    const ids = groups.get(name);
    if (!ids) continue;
    const ops = [...new Set(ids.map((id) => byId.get(id).data.op))];
    nodes.push({ id: FOLD_PREFIX + name, type: "group", data: { name, ids, ops } }); // placed below
  }
  const edges = [];
  const seen = new Set();
  for (const edge of graph.edges) {
    const from = owner.get(edge.source);
    const to = owner.get(edge.target);
    if (from === undefined && to === undefined) {
      edges.push(edge);
      continue;
    }
    if (from !== undefined && from === to) continue; // inside one folded group
    const source = from === undefined ? edge.source : FOLD_PREFIX + from;
    const target = to === undefined ? edge.target : FOLD_PREFIX + to;
    const sourceHandle = from === undefined ? edge.sourceHandle : "out";
    const targetHandle = to === undefined ? edge.targetHandle : "in";
    const key = `${source}.${sourceHandle}>${target}.${targetHandle}`;
    if (seen.has(key)) continue;
    seen.add(key);
    edges.push({ id: `fold:${key}`, source, sourceHandle, target, targetHandle, box: true });
  }
  const places = autoLayout(
    nodes.map((n) => n.id),
    edges,
  );
  return { ...graph, nodes: nodes.map((n) => ({ ...n, position: places.get(n.id) })), edges };
}

// Whether `id` is a folded group's box, not a node of the document.
export const isBox = (id) => id.startsWith(FOLD_PREFIX);
