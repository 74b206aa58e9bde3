// The editor's edits, as pure functions: each takes a graph (see model.js) and returns a new one,
// sharing what it did not change and never mutating its input, so the editor keeps one serializable
// state and undo is keeping old graphs. Connections are wiring.js. No DOM.

import { GAP, NODE_SIZE } from "./layout.js";
import { graphEdge, NODE_TYPE } from "./model.js";
import { initialParams } from "./palette.js";

const MAX_ID = 64; // the format's longest node id

// The smallest `${stem}${n}` above every one taken (so a deleted node's id is not handed out again
// while a later one exists), cut to fit the format's id length.
function numbered(stem, taken, least = 1) {
  let n = least;
  for (const id of taken) {
    const tail = id.startsWith(stem) ? id.slice(stem.length) : "";
    if (/^[0-9]+$/.test(tail)) n = Math.max(n, Number(tail) + 1);
  }
  return `${stem.slice(0, MAX_ID - String(n).length)}${n}`;
}

// A new node's id from its op, as the Python builder makes them: linear1, linear2, ...
export function newId(graph, op) {
  return numbered(op, new Set(graph.nodes.map((n) => n.id)));
}

// Once the user places a node by hand, the drawing on screen is the one to keep: every node's position
// is then written to the program (placing only some would let the automatic layout of the others cover
// them when the program is opened again).
function placeAll(nodes) {
  return nodes.map((n) => (n.data.placed ? n : { ...n, data: { ...n.data, placed: true } }));
}

// Right of the drawing, level with its top: where a node added without a drop point goes.
function besideDrawing(nodes) {
  if (!nodes.length) return { x: 0, y: 0 };
  const right = nodes.reduce((most, n) => Math.max(most, n.position.x), -Infinity) + NODE_SIZE.width + GAP.x;
  return { x: right, y: nodes.reduce((least, n) => Math.min(least, n.position.y), Infinity) };
}

// A node of palette op `op` (its catalog entry) at `position`, its params the op's defaults; required
// params stay unset for the user (the validator names them until then).
export function addNode(graph, op, position = besideDrawing(graph.nodes), id = newId(graph, op.name)) {
  const data = { op: op.name, params: initialParams(op).params, placed: true };
  const node = { id, type: NODE_TYPE, position: { x: position.x, y: position.y }, data };
  return { ...graph, nodes: [...placeAll(graph.nodes), node] };
}

// The graph without these nodes and every edge that touches them.
export function removeNodes(graph, ids) {
  const gone = new Set(ids);
  return {
    ...graph,
    nodes: graph.nodes.filter((n) => !gone.has(n.id)),
    edges: graph.edges.filter((e) => !gone.has(e.source) && !gone.has(e.target)),
  };
}

export function disconnect(graph, edgeIds) {
  const gone = new Set(edgeIds);
  return { ...graph, edges: graph.edges.filter((e) => !gone.has(e.id)) };
}

function replaceData(graph, id, change) {
  return { ...graph, nodes: graph.nodes.map((n) => (n.id === id ? { ...n, data: change(n.data) } : n)) };
}

// Set one parameter (in its place, when it was set before: the saved text changes only there);
// `undefined` removes it, and the op's default applies again.
export function setParam(graph, id, name, value) {
  return replaceData(graph, id, (data) => {
    if (value !== undefined) return { ...data, params: { ...data.params, [name]: structuredClone(value) } };
    return { ...data, params: Object.fromEntries(Object.entries(data.params).filter(([key]) => key !== name)) };
  });
}

// Set the text shown on a node; `undefined` removes it.
export function setLabel(graph, id, label) {
  return replaceData(graph, id, ({ label: _, ...data }) => (label === undefined ? data : { ...data, label }));
}

// Move nodes (`moves`: a Map of node id -> {x, y}), e.g. at the end of a drag.
export function moveNodes(graph, moves) {
  const moved = (n) => (moves.has(n.id) ? { ...n, position: { ...moves.get(n.id) } } : n);
  return { ...graph, nodes: placeAll(graph.nodes).map(moved) };
}

// A selection to paste later: copies of the selected nodes (only the fields the model owns, not React
// Flow's selection or measurements) and of the edges between them; edges to the rest are dropped.
export function copySelection(graph, ids) {
  const chosen = new Set(ids);
  return {
    nodes: graph.nodes
      .filter((n) => chosen.has(n.id))
      .map((n) => ({ id: n.id, type: n.type, position: { ...n.position }, data: structuredClone(n.data) })),
    edges: graph.edges.filter((e) => chosen.has(e.source) && chosen.has(e.target)).map((e) => ({ ...e })),
  };
}

// An id for a pasted node: its own when free, else its stem numbered past those taken
// (hidden -> hidden2, conv1 -> conv3 when conv2 exists).
function pastedId(id, taken) {
  if (!taken.has(id)) return id;
  const stem = id.replace(/[0-9]+$/, "");
  return numbered(stem, taken, taken.has(stem) ? 2 : 1);
}

// The graph with a copied selection added, `offset` from where it was copied (so a copy does not sit
// exactly on its original), and the pasted nodes' ids in the clipboard's order (for the editor to select them).
export function paste(graph, clipboard, offset = { x: GAP.x, y: GAP.y }) {
  const taken = new Set(graph.nodes.map((n) => n.id));
  const renamed = new Map();
  for (const node of clipboard.nodes) {
    renamed.set(node.id, pastedId(node.id, taken));
    taken.add(renamed.get(node.id));
  }
  const nodes = clipboard.nodes.map((n) => ({
    id: renamed.get(n.id),
    type: n.type,
    position: { x: n.position.x + offset.x, y: n.position.y + offset.y },
    data: { ...structuredClone(n.data), placed: true },
  }));
  const edges = [...graph.edges];
  for (const e of clipboard.edges) {
    edges.push(graphEdge(edges, renamed.get(e.source), e.sourceHandle, renamed.get(e.target), e.targetHandle));
  }
  return { graph: { ...graph, nodes: [...placeAll(graph.nodes), ...nodes], edges }, ids: [...renamed.values()] };
}
