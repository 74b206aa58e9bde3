// The side panel: what is selected, edited in a form. One node: its op's doc, every parameter (from the
// catalog, with its doc and the check's issues), its label, and its inputs (connect from another node, or
// disconnect: wiring without a mouse). One edge: its ends and issues. Nothing: the program's own fields
// (name, loss, metrics, optimizer, loop, memory) and the issues that belong to no node.

import { issueText } from "./view.js";
import { ParamField } from "./Fields.jsx";

const PROGRAM_FIELDS = [
  { name: "name", kind: "str", doc: "the program's name: it names downloads and runs" },
  { name: "loss", kind: "json", doc: "the id of the node whose output is minimised" },
  { name: "metrics", kind: "json", doc: 'ids of nodes evaluated on the held-out split, e.g. ["accuracy"]' },
  { name: "optimizer", kind: "json", doc: 'e.g. {"kind": "adam", "lr": 0.003}' },
  { name: "loop", kind: "json", doc: 'the loop program, e.g. {"epochs": 20, "batch_size": 64}' },
  { name: "memory", kind: "json", doc: "memory settings (optional)" },
];
const LABEL = { name: "label", kind: "str", optional: true, doc: "a note kept with the node; the engine ignores it" };

const messagesFor = (issues, test) => issues.filter(test).map((at) => at.message);

function IssueList({ issues }) {
  if (!issues.length) return null;
  return (
    <ul className="panel-issues">
      {issues.map((text, i) => (
        <li key={i}>{text}</li>
      ))}
    </ul>
  );
}

function PortRow({ node, port, graph, act }) {
  const into = graph.edges.filter((e) => e.target === node.id && e.targetHandle === port.name);
  const others = graph.nodes.filter((n) => n.id !== node.id);
  const connect = (event) => {
    const source = event.target.value;
    event.target.value = "";
    if (source) act.connect({ source, sourceHandle: "out", target: node.id, targetHandle: port.name });
  };
  return (
    <li className="panel-port">
      <span className={`port-name kind-${port.kind}`}>
        {port.name} <small>({port.kind})</small>
      </span>
      {into.map((edge) => (
        <span key={edge.id} className="port-source">
          from <code>{edge.source}</code>{" "}
          <button
            type="button"
            onClick={() => act.disconnect([edge.id])}
            aria-label={`Disconnect ${edge.source} from ${node.id}.${port.name}`}
          >
            ×
          </button>
        </span>
      ))}
      {(port.multiple || !into.length) && (
        <select defaultValue="" onChange={connect} aria-label={`Connect an output to ${node.id}.${port.name}`}>
          <option value="">connect from…</option>
          {others.map((n) => (
            <option key={n.id} value={n.id}>
              {n.id} ({n.data.op})
            </option>
          ))}
        </select>
      )}
    </li>
  );
}

function NodePanel({ node, spec, graph, issues, act }) {
  const params = node.data.params;
  const known = spec ? spec.params : [];
  const extra = Object.keys(params).filter((name) => !known.some((p) => p.name === name));
  const unknown = (name) => ({ name, kind: "json", doc: `not a parameter of ${node.data.op}` });
  const fields = [...known, ...extra.map(unknown)];
  const elsewhere = issues.filter((at) => at.param === null).map(issueText);
  return (
    <>
      <h3>
        {node.data.op} <code>{node.id}</code>
      </h3>
      <p className="field-help">{spec ? spec.doc : `${node.data.op} is not an op of the catalog`}</p>
      <IssueList issues={elsewhere} />
      {fields.map((param) => (
        <ParamField
          key={`${node.id}.${param.name}`}
          param={param}
          value={params[param.name]}
          issues={messagesFor(issues, (at) => at.param === param.name)}
          onCommit={(value) => act.param(node.id, param.name, value)}
        />
      ))}
      <ParamField
        key={`${node.id}.label`}
        param={LABEL}
        value={node.data.label}
        issues={[]}
        onCommit={(value) => act.label(node.id, value)}
      />
      {spec && spec.inputs.length > 0 && (
        <>
          <h4>Inputs</h4>
          <ul className="panel-ports">
            {spec.inputs.map((port) => (
              <PortRow key={port.name} node={node} port={port} graph={graph} act={act} />
            ))}
          </ul>
        </>
      )}
    </>
  );
}

function EdgePanel({ edge, issues, act }) {
  return (
    <>
      <h3>Edge</h3>
      <p>
        <code>
          {edge.source}.{edge.sourceHandle}
        </code>{" "}
        to{" "}
        <code>
          {edge.target}.{edge.targetHandle}
        </code>
      </p>
      <IssueList issues={issues.map(issueText)} />
      <button type="button" onClick={() => act.disconnect([edge.id])}>
        Delete edge
      </button>
    </>
  );
}

function ProgramPanel({ rest, issues, act }) {
  const shown = new Set(PROGRAM_FIELDS.map((f) => f.name));
  const others = issues.filter((at) => !shown.has(at.field)).map(issueText);
  return (
    <>
      <h3>Program</h3>
      <p className="field-help">Select a node or an edge to edit it; these are the program's own fields.</p>
      <IssueList issues={others} />
      {PROGRAM_FIELDS.map((field) => (
        <ParamField
          key={field.name}
          param={field}
          value={rest[field.name]}
          issues={messagesFor(issues, (at) => at.field === field.name)}
          onCommit={(value) => act.field(field.name, value)}
        />
      ))}
    </>
  );
}

function ManyPanel({ selected, act }) {
  const { nodes, edges } = selected;
  return (
    <>
      <h3>
        {nodes.length} nodes and {edges.length} edges selected
      </h3>
      <p className="panel-actions">
        <button type="button" onClick={act.copy} disabled={!nodes.length}>
          Copy
        </button>
        <button type="button" onClick={act.remove}>
          Delete
        </button>
      </p>
    </>
  );
}

// `selected`: state.selection's ids; `marks`: graph/issues.issueMarks of the latest check.
export function SidePanel({ doc, ops, selected, marks, act }) {
  const { graph, rest } = doc;
  let body;
  if (selected.nodes.length + selected.edges.length > 1) body = <ManyPanel selected={selected} act={act} />;
  else if (selected.nodes.length === 1) {
    const node = graph.nodes.find((n) => n.id === selected.nodes[0]);
    const issues = marks.nodes.get(node.id) ?? [];
    body = <NodePanel node={node} spec={ops.get(node.data.op)} graph={graph} issues={issues} act={act} />;
  } else if (selected.edges.length === 1) {
    const edge = graph.edges.find((e) => e.id === selected.edges[0]);
    body = <EdgePanel edge={edge} issues={marks.edges.get(edge.id) ?? []} act={act} />;
  } else body = <ProgramPanel rest={rest} issues={marks.program} act={act} />;
  return (
    <aside className="editor-panel" aria-label="Properties of the selection">
      {body}
    </aside>
  );
}
