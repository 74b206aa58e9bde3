// The canvas: React Flow drawing the editor's graph (controlled: every node and edge comes from the
// editor's state, view.js). React Flow's changes go back as the editor's commands: selection, moves at a
// drag's end (one undo step per drag), wires. It deletes nothing itself: Delete is the editor's command,
// through its history. A palette op or a program file dropped on it is added or imported.

import { Background, Controls, ReactFlow, useReactFlow } from "@xyflow/react";
import { useMemo, useState } from "react";
import { foldedGraph, isBox } from "../graph/groups.js";
import { NODE_TYPES } from "./OpNode.jsx";
import { OP_DRAG_TYPE } from "./Palette.jsx";
import { sortNodeChanges, viewEdges, viewNodes } from "./view.js";

export const FIT = { padding: 0.15, maxZoom: 1.25 };

function withEntries(map, entries) {
  if (!entries.length) return map;
  const next = new Map(map);
  for (const [key, value] of entries) next.set(key, value);
  return next;
}

// The sizes React Flow measured and the places of a drag under way: the drawing's own, not the document's.
function useDrawingState(act) {
  const [measured, setMeasured] = useState(() => new Map());
  const [dragging, setDragging] = useState(() => new Map());
  const onNodesChange = (changes) => {
    const sorted = sortNodeChanges(changes.filter((change) => !isBox(change.id))); // a box is no document node
    setMeasured((old) => withEntries(old, sorted.measured));
    setDragging((old) => {
      const next = withEntries(old, sorted.dragging);
      if (!sorted.moved.size) return next;
      const left = new Map(next);
      for (const id of sorted.moved.keys()) left.delete(id);
      return left;
    });
    if (sorted.select.length) act.select("nodes", sorted.select);
    if (sorted.moved.size) act.move(sorted.moved);
  };
  return { measured, dragging, onNodesChange };
}

function useDrop(act) {
  const flow = useReactFlow();
  const onDragOver = (event) => {
    const types = event.dataTransfer.types;
    if (!types.includes(OP_DRAG_TYPE) && !types.includes("Files")) return;
    event.preventDefault();
    event.dataTransfer.dropEffect = "copy";
  };
  const onDrop = (event) => {
    const op = event.dataTransfer.getData(OP_DRAG_TYPE);
    const [file] = event.dataTransfer.files;
    if (!op && !file) return;
    event.preventDefault();
    if (op) act.add(op, flow.screenToFlowPosition({ x: event.clientX, y: event.clientY }));
    else act.importFile(file);
  };
  return { onDragOver, onDrop };
}

// `fold`: the program's groups (`all`, graph/groups.js), those drawn folded (`set`), and `unfold(name)`.
export function Canvas({ doc, ops, selected, marks, act, fold }) {
  const { set: folded, all, unfold: onUnfold } = fold;
  const { measured, dragging, onNodesChange } = useDrawingState(act);
  const drop = useDrop(act);
  const drawn = useMemo(() => foldedGraph(doc.graph, folded, all), [doc.graph, folded, all]);
  const nodes = useMemo(
    () =>
      viewNodes(drawn, ops, { selected: selected.nodes, measured, dragging }, marks).map((node) =>
        node.type === "group" ? { ...node, data: { ...node.data, onUnfold } } : node,
      ),
    [drawn, ops, selected.nodes, measured, dragging, marks, onUnfold],
  );
  const edges = useMemo(() => viewEdges(drawn, ops, selected.edges, marks), [drawn, ops, selected.edges, marks]);
  return (
    <div className="editor-canvas" onDragOver={drop.onDragOver} onDrop={drop.onDrop}>
      <ReactFlow
        nodes={nodes}
        edges={edges}
        nodeTypes={NODE_TYPES}
        onNodesChange={onNodesChange}
        onEdgesChange={(changes) => act.select("edges", changes)}
        onConnect={act.connect}
        deleteKeyCode={null}
        nodesDraggable={!folded.size} // a folded drawing is laid out afresh: places are moved unfolded
        fitView
        fitViewOptions={FIT}
        minZoom={0.2}
        maxZoom={2}
        aria-label="Program graph: Tab moves through the nodes, Enter selects one, the arrow keys move it"
      >
        <Background gap={20} size={1} />
        <Controls showInteractive={false} fitViewOptions={FIT} />
      </ReactFlow>
    </div>
  );
}
