// One node on the canvas (React Flow's custom node "op"): typed input ports on top, named and coloured by
// kind, the op, id and key parameters, the first of its issues, and the output port below (data flows
// down, as the automatic layout draws it). Its face comes from view.nodeFace.

import { Handle, Position } from "@xyflow/react";

// Where the i-th of n ports sits along the node's top edge.
const along = (i, n) => `${((i + 1) / (n + 1)) * 100}%`;

function InputPort({ port, i, n }) {
  const wrong = port.issues.length > 0;
  const kind = `${port.kind}${port.multiple ? ", takes several edges" : ""}`;
  const title = `input ${port.name} (${kind})${wrong ? `: ${port.issues.join("; ")}` : ""}`;
  return (
    <Handle
      type="target"
      position={Position.Top}
      id={port.name}
      className={`op-port kind-${port.kind}${wrong ? " port-issue" : ""}`}
      style={{ left: along(i, n) }}
      title={title}
      aria-label={title}
    />
  );
}

export function OpNode({ data }) {
  const face = data.face;
  const n = face.inputs.length;
  const problems = face.issues.length;
  return (
    <>
      {face.inputs.map((port, i) => (
        <InputPort key={port.name} port={port} i={i} n={n} />
      ))}
      <div
        className={`op-node${problems ? " has-issues" : ""}${face.known ? "" : " unknown-op"}`}
        data-issues={problems}
      >
        <div className="op-port-names" aria-hidden="true">
          {face.inputs.map((port, i) => (
            <span key={port.name} className={`kind-${port.kind}`} style={{ left: along(i, n) }}>
              {port.name}
            </span>
          ))}
        </div>
        <div className="op-title">
          <span className="op-name">{face.op}</span>
          <span className="op-id" title={face.label ?? undefined}>
            {face.id}
          </span>
        </div>
        <div className="op-summary">{face.summary}</div>
        {problems > 0 && (
          <div className="op-issue" title={face.issues.join("\n")}>
            {face.issues[0]}
            {problems > 1 ? ` (+${problems - 1} more)` : ""}
          </div>
        )}
      </div>
      <Handle
        type="source"
        position={Position.Bottom}
        id="out"
        className={`op-port kind-${face.output.kind}`}
        title={`output out (${face.output.kind})`}
        aria-label={`output out (${face.output.kind})`}
      />
    </>
  );
}

// A folded group (graph/groups.js): its name, how many nodes, their ops; one port in, one out; its
// button unfolds it (`data.onUnfold`).
export function GroupNode({ data }) {
  const face = data.face;
  return (
    <>
      <Handle type="target" position={Position.Top} id="in" className="op-port kind-any" />
      <div className={`op-node group-node${face.issues ? " has-issues" : ""}`} data-group={face.name}>
        <div className="op-title">
          <span className="op-name">{face.name}</span>
          <span className="op-id">{face.count} nodes</span>
        </div>
        <div className="op-summary" title={face.ops}>
          {face.ops}
        </div>
        <button type="button" className="group-unfold nodrag" onClick={() => data.onUnfold(face.name)}>
          Unfold
        </button>
      </div>
      <Handle type="source" position={Position.Bottom} id="out" className="op-port kind-any" />
    </>
  );
}

export const NODE_TYPES = { op: OpNode, group: GroupNode };
