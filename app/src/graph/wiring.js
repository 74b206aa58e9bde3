// Connections the editor may draw: the catalog's port kinds (float, int, bool, any), ports taking one
// edge or several, and acyclicity, each refusal naming why (the words the validator would use later).
// Pure: connect returns a new graph, or the same graph and the reason. No DOM.

import { graphEdge } from "./model.js";
import { kindsFit, outputKind } from "./palette.js";

// Why the connection (React Flow's {source, sourceHandle, target, targetHandle}) may not be drawn, or
// null when it may. `ops` is palette.js's opIndex(catalog).
export function checkConnection(graph, ops, connection) {
  const { source, sourceHandle, target, targetHandle } = connection;
  const from = graph.nodes.find((n) => n.id === source);
  const to = graph.nodes.find((n) => n.id === target);
  if (!from || !to) return `there is no node '${from ? target : source}'`;
  if (sourceHandle !== "out") return `${from.data.op} has one output port, 'out'`;
  const spec = ops.get(to.data.op);
  if (!spec) return `'${to.data.op}' is not an op of the catalog, so its ports are unknown`;
  const port = spec.inputs.find((p) => p.name === targetHandle);
  if (!port) {
    const names = spec.inputs.map((p) => p.name).join(", ") || "none";
    return `${spec.name} has no input port '${targetHandle}' (it has: ${names})`;
  }
  const given = ops.has(from.data.op) ? outputKind(ops.get(from.data.op), from.data.params) : "any";
  if (!kindsFit(given, port.kind)) {
    return `input '${port.name}' of '${target}' takes ${port.kind}, but '${source}' gives ${given}`;
  }
  const held = graph.edges.find((e) => e.target === target && e.targetHandle === targetHandle);
  if (held && !port.multiple) {
    return `input '${port.name}' of '${target}' takes one edge and has one from '${held.source}': disconnect it first`;
  }
  return cycleReason(graph.edges, source, target);
}

// The words for the cycle an edge source -> target would close, or null: the path the edges already
// take from target back to source, found breadth-first (the shortest, in edge order: deterministic).
function cycleReason(edges, source, target) {
  if (source === target) return `'${source}' would be its own input (a cycle): a program must be acyclic`;
  const users = new Map();
  for (const e of edges) {
    if (!users.has(e.source)) users.set(e.source, []);
    users.get(e.source).push(e.target);
  }
  const came = new Map([[target, null]]);
  const queue = [target];
  for (let i = 0; i < queue.length && !came.has(source); i++) {
    for (const user of users.get(queue[i]) ?? []) {
      if (!came.has(user)) {
        came.set(user, queue[i]);
        queue.push(user);
      }
    }
  }
  if (!came.has(source)) return null;
  const path = [source];
  while (path.at(-1) !== target) path.push(came.get(path.at(-1)));
  const loop = [source, ...path.reverse()].map((id) => `'${id}'`).join(" -> ");
  return `it would close a cycle ${loop}: a program must be acyclic`;
}

// The graph with the connection added (last in edge order: a port taking several edges takes them in
// that order), or the same graph and why not.
export function connect(graph, ops, connection) {
  const error = checkConnection(graph, ops, connection);
  if (error) return { graph, error };
  const { source, sourceHandle, target, targetHandle } = connection;
  const edge = graphEdge(graph.edges, source, sourceHandle, target, targetHandle);
  return { graph: { ...graph, edges: [...graph.edges, edge] }, error: null };
}
