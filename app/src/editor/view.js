// What React Flow draws, from the editor's state: each node's face (op, id, key parameters, typed ports,
// the issues the engine's check put on it), each edge's kind and issues, and the problems list; and
// React Flow's change events sorted into what the editor keeps. No DOM.

import { locateIssue } from "../graph/issues.js";
import { outputKind } from "../graph/palette.js";
import { valueText } from "./params.js";

const SUMMARY_PARAMS = 3; // parameters shown on a node's face; the side panel has them all
const NO_MARKS = { nodes: new Map(), edges: new Map(), program: [] };

// Where on its node (or edge) a located issue (graph/issues.js) is, in words: "features", "input x".
export function issuePlace(at) {
  if (at.param !== null) return at.param;
  if (at.port !== null) return `input ${at.port}`;
  if (at.end !== null) return at.end === "source" ? "its source" : "its target";
  return at.field ?? "";
}

export function issueText(at) {
  const place = issuePlace(at);
  return place ? `${place}: ${at.message}` : at.message;
}

// The parameters on a node's face: those set, in catalog order (required ones unset say so), at most a
// few; for an op the catalog lacks, whatever params the node has.
export function keyParams(spec, params) {
  const names = spec ? spec.params.map((p) => p.name) : Object.keys(params);
  const shown = [];
  for (const name of names) {
    const required = spec && !("default" in spec.params.find((p) => p.name === name));
    if (Object.hasOwn(params, name)) shown.push(`${name} ${valueText(params[name])}`);
    else if (required) shown.push(`${name} ?`);
  }
  const more = shown.length > SUMMARY_PARAMS ? " …" : "";
  return shown.slice(0, SUMMARY_PARAMS).join(" · ") + more;
}

// The face of one node: op, id, label, key parameters, input ports (name, kind, their issues), the
// output's kind and every issue on the node.
export function nodeFace(node, spec, issues = []) {
  const { op, params, label } = node.data;
  const onPort = (name) => issues.filter((at) => at.port === name).map((at) => at.message);
  return {
    op,
    id: node.id,
    label: label ?? null,
    known: Boolean(spec),
    summary: keyParams(spec, params),
    inputs: (spec?.inputs ?? []).map((port) => ({ ...port, issues: onPort(port.name) })),
    output: { name: "out", kind: spec ? outputKind(spec, params) : "any" },
    issues: issues.map(issueText),
  };
}

// The face of a folded group's box (graph/groups.js): its name, how many nodes it holds, their ops, and
// how many of them have issues.
export function groupFace(node, marks = NO_MARKS) {
  const { name, ids, ops } = node.data;
  const issues = ids.filter((id) => (marks.nodes.get(id) ?? []).length > 0).length;
  return { group: true, id: node.id, name, count: ids.length, ops: ops.join(", "), issues };
}

// React Flow's nodes: the graph's (a folded group's box among them: graph/groups.js), with the selection,
// the sizes React Flow measured (kept, so a node redrawn with new data is not measured again), and the
// places of a drag under way.
export function viewNodes(graph, ops, drawing = {}, marks = NO_MARKS) {
  const { selected = [], measured = new Map(), dragging = new Map() } = drawing;
  const chosen = new Set(selected);
  return graph.nodes.map((node) => {
    if (node.type === "group") {
      const face = groupFace(node, marks);
      const ariaLabel = `folded group ${face.name} of ${face.count} nodes${face.issues ? `, ${face.issues} with problems` : ""}`;
      return { id: node.id, type: "group", position: node.position, data: { face }, ariaLabel };
    }
    const face = nodeFace(node, ops.get(node.data.op), marks.nodes.get(node.id));
    const view = {
      id: node.id,
      type: node.type,
      position: dragging.get(node.id) ?? node.position,
      data: { face },
      selected: chosen.has(node.id),
      ariaLabel: `${face.op} node ${node.id}${face.issues.length ? `, ${face.issues.length} problem(s)` : ""}`,
    };
    if (measured.has(node.id)) view.measured = measured.get(node.id);
    return view;
  });
}

// React Flow's edges, coloured by the kind their source gives and marked where the check found issues.
export function viewEdges(graph, ops, selected = [], marks = NO_MARKS) {
  const chosen = new Set(selected);
  const byId = new Map(graph.nodes.map((n) => [n.id, n]));
  return graph.edges.map((edge) => {
    const source = byId.get(edge.source);
    const spec = source && source.type !== "group" && ops.get(source.data.op);
    const kind = spec ? outputKind(spec, source.data.params) : "any";
    const issues = (marks.edges.get(edge.id) ?? []).map(issueText);
    const where = `${edge.source}.${edge.sourceHandle} to ${edge.target}.${edge.targetHandle}`;
    return {
      ...edge,
      selected: chosen.has(edge.id),
      className: `kind-${kind}${issues.length ? " edge-issue" : ""}`,
      ariaLabel: issues.length ? `Edge ${where}: ${issues.join("; ")}` : `Edge ${where}`,
      data: { kind, issues },
    };
  });
}

// Every issue of a check, located, in the engine's order: {key, text, node, edge} for the list under
// the drawing (a node's or edge's issue can select it there).
export function problems(issues, graph) {
  return issues.map((issue, i) => {
    const at = locateIssue(issue, graph);
    const owner = at.node ?? (at.edge !== null ? `edge ${at.edge}` : "program");
    return { key: `${i}`, owner, text: issueText(at), node: at.node, edge: at.edge };
  });
}

// Why a program with these issues may not be planned or trained, in a sentence ("" when it may).
export function blockedWhy(issues) {
  if (!issues.length) return "";
  const at = locateIssue(issues[0], { nodes: [], edges: [] }); // the node is named by the issue itself
  const where = [at.node, issuePlace(at)].filter(Boolean).join(" ");
  const many = issues.length > 1 ? `${issues.length} problems; the first: ` : "a problem: ";
  return `the program in the editor has ${many}${where ? `${where}: ` : ""}${at.message}`;
}

// React Flow's node changes sorted: sizes measured, selection, a drag under way (dragging) and places
// to keep (a drag's end, the arrow keys). Removals never come: the editor deletes through its history.
export function sortNodeChanges(changes) {
  const out = { measured: [], select: [], dragging: [], moved: new Map() };
  for (const change of changes) {
    if (change.type === "dimensions" && change.dimensions) out.measured.push([change.id, change.dimensions]);
    else if (change.type === "select") out.select.push(change);
    else if (change.type === "position" && change.position) {
      if (change.dragging) out.dragging.push([change.id, change.position]);
      else out.moved.set(change.id, { x: change.position.x, y: change.position.y });
    }
  }
  return out;
}
