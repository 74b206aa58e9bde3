// The engine's validation issues ({path, node, port, message}: scellis.graph.errors.Issue.to_json) put
// onto the drawing: the node each concerns, and its port, parameter or field, or the edge; what names
// neither belongs to the program's settings. The issues must come from validating toProgram(graph) of
// this very graph: their paths index its nodes and edges (nodes[3], edges[2]). No DOM.

const NODE_PATH = /^nodes\[([0-9]+)\](?:\.(.*))?$/s;
const EDGE_PATH = /^edges\[([0-9]+)\](?:\.(from|to))?/;

// One issue, located: {message, path, node, port, param, field, edge, end} with null where it does not
// apply. `end` is "source" or "target": the end of the edge that is wrong. `field` is a node's field
// (op, id, label, position, an unknown one) or, for the program's settings, the top-level key.
export function locateIssue(issue, graph) {
  const at = {
    message: issue.message,
    path: issue.path,
    node: issue.node ?? null,
    port: issue.port ?? null,
    param: null,
    field: null,
    edge: null,
    end: null,
  };
  const onNode = NODE_PATH.exec(issue.path);
  const onEdge = EDGE_PATH.exec(issue.path);
  if (onNode) {
    at.node ??= graph.nodes[Number(onNode[1])]?.id ?? null; // a bad id's issue names no node: its index does
    const rest = onNode[2];
    if (rest?.startsWith("params.")) at.param = rest.slice("params.".length);
    else if (rest !== undefined) at.field = rest;
  } else if (onEdge) {
    at.edge = graph.edges[Number(onEdge[1])]?.id ?? null;
    if (onEdge[2]) at.end = onEdge[2] === "from" ? "source" : "target";
  } else if (!(at.node && (issue.path === "nodes" || issue.path === "edges"))) {
    at.field = issue.path.split(/[.[]/)[0] || null; // loss, metrics[1], optimizer.lr, loop, memory...
  }
  return at;
}

// The located issues by what they mark: node id -> issues, edge id -> issues (an issue naming both an
// edge and a node is under each), and the program's own (those that name neither).
export function issueMarks(issues, graph) {
  const marks = { nodes: new Map(), edges: new Map(), program: [] };
  const add = (map, key, at) => map.set(key, [...(map.get(key) ?? []), at]);
  for (const issue of issues) {
    const at = locateIssue(issue, graph);
    if (at.node !== null) add(marks.nodes, at.node, at);
    if (at.edge !== null) add(marks.edges, at.edge, at);
    if (at.node === null && at.edge === null) marks.program.push(at);
  }
  return marks;
}
