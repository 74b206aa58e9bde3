// The editor's state as one value: the document's history (graph/history.js: undo and redo), the
// selection, the clipboard, a notice for the status line and a counter of requests to fit the view.
// Every command is a pure function state -> state over the graph edits (graph/edits.js, wiring.js);
// the React components only call them. No DOM.

import {
  addNode,
  copySelection,
  disconnect,
  moveNodes,
  paste,
  removeNodes,
  setLabel,
  setParam,
} from "../graph/edits.js";
import { record, redo, startHistory, undo } from "../graph/history.js";
import { GAP, NODE_SIZE } from "../graph/layout.js";
import { connect } from "../graph/wiring.js";
import { sameValue } from "./params.js";
import { errorLine, placedPositions, readProgram, textOf } from "./program.js";

const NOTHING = { nodes: [], edges: [] };

export function startEditor(doc) {
  return { history: startHistory(doc), selected: NOTHING, clipboard: null, pastes: 0, notice: null, fits: 0 };
}

export const docOf = (state) => state.history.present;

const info = (text) => ({ kind: "info", text });
const refusal = (text) => ({ kind: "error", text });

// A new document as an edit (undo returns to the one before), the selection as given.
function edited(state, doc, selected = state.selected, notice = null) {
  return { ...state, history: record(state.history, doc), selected, notice };
}

function withGraph(state, graph, selected, notice) {
  if (graph === docOf(state).graph) return { ...state, notice: notice ?? state.notice };
  return edited(state, { ...docOf(state), graph }, selected, notice);
}

// The first place from `at` rightwards, a node's width plus a gap at a time, where a new node covers
// none of the drawing's (boxes of layout.NODE_SIZE).
export function freeSpot(graph, at) {
  const covers = (p) => (n) =>
    Math.abs(n.position.x - p.x) < NODE_SIZE.width && Math.abs(n.position.y - p.y) < NODE_SIZE.height;
  let spot = { x: at.x, y: at.y };
  for (let tries = 0; tries <= 2 * graph.nodes.length && graph.nodes.some(covers(spot)); tries++) {
    spot = { x: spot.x + NODE_SIZE.width + GAP.x, y: spot.y };
  }
  return spot;
}

// A node of catalog op `op` at `position` (the drawing's right when not given), moved right until it
// covers no other node, selected.
export function addOp(state, op, position) {
  const { graph: before } = docOf(state);
  const graph = addNode(before, op, position && freeSpot(before, position)); // undefined: beside the drawing
  const id = graph.nodes.at(-1).id;
  return withGraph(state, graph, { nodes: [id], edges: [] }, info(`Added ${op.name} node ${id}.`));
}

// A wire (React Flow's connection), or the state with a notice saying why it may not be drawn.
export function connectPorts(state, ops, connection) {
  const { graph, error } = connect(docOf(state).graph, ops, connection);
  if (error) return { ...state, notice: refusal(`Not connected: ${error}.`) };
  const { source, target, targetHandle } = connection;
  return withGraph(state, graph, state.selected, info(`Connected ${source} to ${target}.${targetHandle}.`));
}

export function disconnectEdges(state, ids) {
  return withGraph(state, disconnect(docOf(state).graph, ids), state.selected);
}

// One parameter of node `id` (undefined: unset); setting what it holds records nothing.
export function setNodeParam(state, id, name, value) {
  const node = docOf(state).graph.nodes.find((n) => n.id === id);
  if (!node || sameValue(node.data.params[name], value)) return state;
  return withGraph(state, setParam(docOf(state).graph, id, name, value), state.selected);
}

export function setNodeLabel(state, id, label) {
  const node = docOf(state).graph.nodes.find((n) => n.id === id);
  if (!node || node.data.label === label) return state;
  return withGraph(state, setLabel(docOf(state).graph, id, label), state.selected);
}

// One of the program's own fields (loss, metrics, optimizer, loop...): undefined removes it.
export function setProgramField(state, key, value) {
  const { graph, rest } = docOf(state);
  if (sameValue(rest[key], value)) return state;
  const kept = Object.entries(rest).filter(([k]) => k !== key);
  const next = value === undefined ? Object.fromEntries(kept) : { ...rest, [key]: value };
  return edited(state, { graph, rest: next });
}

// Nodes moved (a Map id -> {x, y}: a drag's end, or the arrow keys).
export function moveTo(state, moves) {
  return moves.size ? withGraph(state, moveNodes(docOf(state).graph, moves), state.selected) : state;
}

// The selection, without what an undo or a delete took away.
export function selection(state) {
  const { nodes, edges } = docOf(state).graph;
  const has = (list, id) => list.some((item) => item.id === id);
  return {
    nodes: state.selected.nodes.filter((id) => has(nodes, id)),
    edges: state.selected.edges.filter((id) => has(edges, id)),
  };
}

const count = (n, word) => `${n} ${word}${n === 1 ? "" : "s"}`;

// The selected nodes (with their edges) and the selected edges go.
export function deleteSelected(state) {
  const { nodes, edges } = selection(state);
  if (!nodes.length && !edges.length) return { ...state, notice: info("Nothing is selected to delete.") };
  const graph = disconnect(removeNodes(docOf(state).graph, nodes), edges);
  const what = [nodes.length && count(nodes.length, "node"), edges.length && count(edges.length, "edge")];
  return withGraph(state, graph, NOTHING, info(`Deleted ${what.filter(Boolean).join(" and ")}.`));
}

export function copySelected(state) {
  const ids = selection(state).nodes;
  if (!ids.length) return { ...state, notice: info("Select nodes to copy.") };
  const clipboard = copySelection(docOf(state).graph, ids);
  return { ...state, clipboard, pastes: 0, notice: info(`Copied ${count(ids.length, "node")}.`) };
}

// The clipboard's nodes, each paste a step further from the copied ones, selected.
export function pasteClipboard(state) {
  if (!state.clipboard) return { ...state, notice: info("Nothing copied yet.") };
  const step = state.pastes + 1;
  const { graph, ids } = paste(docOf(state).graph, state.clipboard, { x: GAP.x * step, y: GAP.y * step });
  const next = withGraph(state, graph, { nodes: ids, edges: [] }, info(`Pasted ${ids.join(", ")}.`));
  return { ...next, pastes: step };
}

export function undoEdit(state) {
  return { ...state, history: undo(state.history), notice: null };
}

export function redoEdit(state) {
  return { ...state, history: redo(state.history), notice: null };
}

// The selection after React Flow's select changes ({id, type: "select", selected}) for `which`
// ("nodes" or "edges"), in the order things were selected.
export function selectChanges(state, which, changes) {
  let ids = state.selected[which];
  for (const change of changes) {
    if (change.type !== "select") continue;
    ids = ids.filter((id) => id !== change.id);
    if (change.selected) ids = [...ids, change.id];
  }
  return ids === state.selected[which] ? state : { ...state, selected: { ...state.selected, [which]: ids } };
}

export function selectOnly(state, nodeIds, edgeIds = []) {
  return { ...state, selected: { nodes: nodeIds, edges: edgeIds } };
}

// Another document in place of this one (an example, an import, a remedy's program): an edit undo can
// take back, unless it is the same program. `fit`: the view is fitted to it.
export function openDoc(state, doc, { notice = null, fit = false } = {}) {
  if (textOf(doc) === textOf(docOf(state))) return { ...state, notice: notice ?? state.notice };
  const next = edited(state, doc, NOTHING, notice);
  return fit ? { ...next, fits: state.fits + 1 } : next;
}

export const notify = (state, text, kind = "info") => ({ ...state, notice: { kind, text } });

// Program text opened in place of the document (see openDoc), or the state with a notice naming what is
// wrong with the text (line and column, or the path). `keep`: the drawing's placed nodes keep their places.
export function openText(state, text, { source, fit = false, keep = false }) {
  const positions = keep ? placedPositions(docOf(state).graph) : {};
  const { doc, errors } = readProgram(text, positions);
  if (!doc) return notify(state, `Could not open ${source}: ${errors.map(errorLine).join("; ")}`, "error");
  return openDoc(state, doc, { notice: info(`Opened ${source}.`), fit });
}
