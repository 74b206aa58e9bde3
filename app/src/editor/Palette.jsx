// The node palette: the engine's catalog grouped by category (graph/palette.js). A button adds its op
// in the middle of the view; dragging it onto the canvas drops it where it lands.

export const OP_DRAG_TYPE = "application/x-scellis-op"; // what a palette drag carries: the op's name

function PaletteOp({ op, onAdd }) {
  const ports = op.inputs.map((p) => `${p.name}: ${p.kind}`).join(", ") || "no inputs";
  const onDragStart = (event) => {
    event.dataTransfer.setData(OP_DRAG_TYPE, op.name);
    event.dataTransfer.effectAllowed = "copy";
  };
  return (
    <li>
      <button
        type="button"
        className={`palette-op kind-${op.output.kind}`}
        draggable="true"
        onDragStart={onDragStart}
        onClick={() => onAdd(op.name)}
        title={`${op.doc} (${ports}; gives ${op.output.kind})`}
        aria-label={`Add ${op.name}: ${op.doc}`}
      >
        {op.name}
      </button>
    </li>
  );
}

export function Palette({ groups, onAdd }) {
  return (
    <nav className="editor-palette" aria-label="Node palette: click to add, or drag onto the canvas">
      {groups.map((group) => (
        <details key={group.category} open>
          <summary>{group.category}</summary>
          <ul>
            {group.ops.map((op) => (
              <PaletteOp key={op.name} op={op} onAdd={onAdd} />
            ))}
          </ul>
        </details>
      ))}
    </nav>
  );
}
