// The editor's document: the graph React Flow draws (graph/model.js) and the program's other parts, to
// and from program JSON text; whether two texts are the same program; the copy kept in the browser's
// storage. No DOM.

import { exportProgram, importProgram } from "../graph/io.js";
import { restOf, toGraph, toProgram } from "../graph/model.js";

export const SAVED_KEY = "scellis.editor.program"; // localStorage: the program as the editor last had it

// A document of a program (already drawable: see io.importProgram); `positions` (node id -> {x, y}) as
// model.toGraph takes them.
export function docOf(program, positions = {}) {
  return { graph: toGraph(program, positions), rest: restOf(program) };
}

export const programOf = (doc) => toProgram(doc.graph, doc.rest);

// The text the editor hands on, saves and exports (io.exportProgram's: one node and one edge a line).
export const textOf = (doc) => exportProgram(programOf(doc));

// Where the drawing's placed nodes are, for another version of the program (a remedy's) to keep; the
// nodes laid out automatically stay so, and their program keeps writing no position.
export function placedPositions(graph) {
  const placed = graph.nodes.filter((n) => n.data.placed);
  return Object.fromEntries(placed.map((n) => [n.id, { ...n.position }]));
}

// The document of program text: {doc, errors: []}, or {doc: null, errors} (io.importProgram's).
export function readProgram(text, positions = {}) {
  const { program, errors } = importProgram(text);
  return program ? { doc: docOf(program, positions), errors: [] } : { doc: null, errors };
}

// One of readProgram's errors in words: where (line and column, or the path) and what.
export function errorLine(error) {
  if (error.line !== undefined) return `line ${error.line}, column ${error.column}: ${error.message}`;
  return error.path ? `${error.path}: ${error.message}` : error.message;
}

// Whether two program texts hold the same program: the same JSON values, whatever the spacing and the
// order of keys (the engine writes its own text of a program the editor sent it).
export function sameProgram(a, b) {
  if (a === b) return true;
  try {
    return JSON.stringify(canonical(JSON.parse(a))) === JSON.stringify(canonical(JSON.parse(b)));
  } catch {
    return false;
  }
}

function canonical(value) {
  if (Array.isArray(value)) return value.map(canonical);
  if (value === null || typeof value !== "object") return value;
  const keys = Object.keys(value).sort();
  return keys.map((key) => [key, canonical(value[key])]);
}

// The program text the storage keeps, or null (none kept, or storage blocked for this site).
export function savedProgram(storage) {
  try {
    return storage.getItem(SAVED_KEY);
  } catch {
    return null;
  }
}

// Keeps `text` in the storage; false when the storage refuses (blocked, or full).
export function saveProgram(storage, text) {
  try {
    storage.setItem(SAVED_KEY, text);
    return true;
  } catch {
    return false;
  }
}
