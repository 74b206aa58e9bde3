// The editor's graph ⇄ program JSON (format scellis.program/1). The graph is what React Flow draws:
//   { nodes: [{ id, type: "op", position: {x, y}, data: { op, params, label?, placed, extra? } }],
//     edges: [{ id, source, sourceHandle, target, targetHandle }] }
// in the program's node and edge order, so issue paths like nodes[3] and edges[2] index it directly.
// Positions live in the program's own `position` field (the format has one for the editor): a node
// whose position came from the file, the caller or the user is `placed` and writes it back; the others
// are laid out automatically and write nothing, so an example opens and saves unchanged. No DOM.

import { autoLayout } from "./layout.js";

export const NODE_TYPE = "op";
// The program's fields in the order the Python builder writes them; toProgram writes them so.
const TOP_KEYS = ["format", "name", "nodes", "edges", "loss", "metrics", "optimizer", "loop", "memory"];
const NODE_KEYS = ["id", "op", "params", "label", "position"];

// The program's non-graph parts (format, name, loss, metrics, optimizer, loop, memory and any field
// the validator will name as unknown): they ride along unchanged through the editor.
export function restOf(program) {
  // fromEntries, not assignment: a field named __proto__ stays a field
  const kept = Object.entries(program).filter(([key]) => key !== "nodes" && key !== "edges");
  return Object.fromEntries(kept.map(([key, value]) => [key, structuredClone(value)]));
}

// The graph of a drawable program (see drawProblems). `positions` (node id -> {x, y}), when the caller
// knows them, come first, then the program's own; the remaining nodes are laid out by depth.
export function toGraph(program, positions = {}) {
  const listed = program.nodes ?? [];
  const placed = new Map();
  for (const node of listed) {
    const known = Object.hasOwn(positions, node.id) ? positions[node.id] : node.position;
    if (known) placed.set(node.id, { x: known.x, y: known.y });
  }
  const taken = new Set();
  const edges = (program.edges ?? []).map(({ from, to }) => {
    const edge = edgeWithId(taken, from.node, from.port, to.node, to.port);
    taken.add(edge.id);
    return edge;
  });
  const laid = autoLayout(
    listed.map((n) => n.id),
    edges,
    placed,
  );
  const nodes = listed.map((node) => graphNode(node, placed.get(node.id) ?? laid.get(node.id), placed.has(node.id)));
  return { nodes, edges };
}

function graphNode(node, position, placed) {
  const data = { op: node.op, params: structuredClone(node.params ?? {}) };
  if (Object.hasOwn(node, "label")) data.label = node.label;
  data.placed = placed;
  const extra = Object.entries(node).filter(([key]) => !NODE_KEYS.includes(key));
  if (extra.length) data.extra = structuredClone(Object.fromEntries(extra));
  return { id: node.id, type: NODE_TYPE, position: { ...position }, data };
}

// A new edge, its id unique among `edges`: readable (`a.out->b.x`), with #2, #3... for a repeat (a port
// taking several edges may take the same source twice, as concat([x, x]) does).
export function graphEdge(edges, source, sourceHandle, target, targetHandle) {
  return edgeWithId(new Set(edges.map((e) => e.id)), source, sourceHandle, target, targetHandle);
}

function edgeWithId(taken, source, sourceHandle, target, targetHandle) {
  const base = `${source}.${sourceHandle}->${target}.${targetHandle}`;
  let id = base;
  for (let n = 2; taken.has(id); n++) id = `${base}#${n}`;
  return { id, source, sourceHandle, target, targetHandle };
}

// The program JSON of a graph and the non-graph parts. Fields come in the builder's order, so an
// unedited program comes back as the same JSON text; an empty params object is left out (it means
// what no params means).
export function toProgram(graph, rest) {
  const parts = {
    nodes: graph.nodes.map(programNode),
    edges: graph.edges.map((e) => ({
      from: { node: e.source, port: e.sourceHandle },
      to: { node: e.target, port: e.targetHandle },
    })),
  };
  const keys = [
    ...TOP_KEYS.filter((key) => Object.hasOwn(parts, key) || Object.hasOwn(rest, key)),
    ...Object.keys(rest).filter((key) => !TOP_KEYS.includes(key)),
  ];
  const value = (key) => (Object.hasOwn(parts, key) ? parts[key] : structuredClone(rest[key]));
  return Object.fromEntries(keys.map((key) => [key, value(key)]));
}

function programNode(node) {
  const { op, params, label, placed, extra } = node.data;
  const out = { id: node.id, op };
  if (Object.keys(params).length) out.params = structuredClone(params);
  if (label !== undefined) out.label = label;
  if (placed) out.position = { x: node.position.x, y: node.position.y };
  return extra ? { ...out, ...structuredClone(extra) } : out;
}

// Why a program cannot be drawn, as {path, message} in the validator's path form: the shapes a drawing
// needs (node ids unique strings, edges between drawn nodes, params objects, numeric positions). Every
// other problem (unknown ops, ports, parameter values, cycles) is drawn, and the validator marks it.
export function drawProblems(program) {
  if (program === null || typeof program !== "object" || Array.isArray(program)) {
    return [{ path: "", message: "a program is a JSON object" }];
  }
  const nodes = program.nodes ?? [];
  const edges = program.edges ?? [];
  if (!Array.isArray(nodes)) return [{ path: "nodes", message: "must be a list of nodes" }];
  const problems = [];
  const ids = new Set();
  nodes.forEach((node, i) => problems.push(...nodeProblems(node, `nodes[${i}]`, ids)));
  if (!Array.isArray(edges)) return [...problems, { path: "edges", message: "must be a list of edges" }];
  edges.forEach((edge, i) => problems.push(...edgeProblems(edge, `edges[${i}]`, ids)));
  return problems;
}

const isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);

function nodeProblems(node, path, ids) {
  if (!isObject(node)) return [{ path, message: "a node is an object" }];
  const problems = [];
  const problem = (field, message) => problems.push({ path: `${path}.${field}`, message });
  if (typeof node.id !== "string") problem("id", "must be a string");
  else if (ids.has(node.id)) problem("id", `${JSON.stringify(node.id)} is used by another node`);
  else ids.add(node.id);
  if (typeof node.op !== "string") problem("op", "must be an op name");
  if (Object.hasOwn(node, "params") && !isObject(node.params)) problem("params", "must be an object");
  const at = node.position;
  if (at !== undefined && !(isObject(at) && Number.isFinite(at.x) && Number.isFinite(at.y))) {
    problem("position", 'must be {"x": number, "y": number}');
  }
  return problems;
}

function edgeProblems(edge, path, ids) {
  if (!isObject(edge) || Object.keys(edge).sort().join() !== "from,to") {
    return [{ path, message: 'an edge is {"from": {"node": ..., "port": ...}, "to": {...}} and nothing else' }];
  }
  const problems = [];
  for (const end of ["from", "to"]) {
    const point = edge[end];
    if (!isObject(point) || typeof point.node !== "string" || typeof point.port !== "string") {
      problems.push({ path: `${path}.${end}`, message: 'must be {"node": <node id>, "port": <port name>}' });
    } else if (!ids.has(point.node)) {
      const message = `dangling edge: there is no node ${JSON.stringify(point.node)}`;
      problems.push({ path: `${path}.${end}.node`, message });
    }
  }
  return problems;
}
