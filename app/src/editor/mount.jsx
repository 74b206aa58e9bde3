// The editor's entry for the page: `mountEditor` reads the op catalog and the examples from the engine,
// opens the program kept in this browser (or the page's example), renders the editor into `container`,
// and gives the page its side: the program to start with, and `setProgram` for programs the page
// changes (remedies, share links, reset). Its styles (React Flow's, then the editor's) are bundled
// into main.css.

import "@xyflow/react/dist/style.css";
import "./editor.css";
import { createRoot } from "react-dom/client";
import { parsed } from "../engine.js";
import { opIndex } from "../graph/palette.js";
import { Editor } from "./Editor.jsx";
import { errorLine, readProgram, savedProgram, textOf } from "./program.js";
import { blockedWhy } from "./view.js";

// The program to open: the one kept in `storage` when it can be read, else `example` (with a notice
// saying why the kept one was not opened).
function startingProgram(storage, example) {
  const saved = savedProgram(storage);
  if (saved !== null) {
    const kept = readProgram(saved);
    if (kept.doc) return { doc: kept.doc, notice: { kind: "info", text: "Opened the program kept in this browser." } };
    const why = kept.errors.map(errorLine).join("; ");
    const text = `The program kept in this browser could not be read (${why}): the example is open instead.`;
    return { doc: readProgram(example).doc, notice: { kind: "error", text } };
  }
  return { doc: readProgram(example).doc, notice: null };
}

// `example`: the page's example program (JSON text); `onProgram(text, ok, why)` after each check of the
// editor's program: its text, whether it has no issues, and if not why it waits; `onExample(example)`
// when an example is opened ({name, summary, program, source}: the built-in data it reads, or null).
export async function mountEditor(container, { engine, example, onProgram, onExample = () => {}, storage = localStorage }) {
  const [catalog, examples] = await Promise.all([parsed(engine.call("palette")), parsed(engine.call("examples"))]);
  const { doc, notice } = startingProgram(storage, example);
  const bridge = { open: null, waiting: [] };
  const props = {
    catalog,
    ops: opIndex(catalog),
    examples,
    example,
    onExample,
    initial: doc,
    notice,
    storage,
    bridge,
    check: (text) => parsed(engine.call("check", { program: text })),
    onProgram: (text, issues) => onProgram(text, issues.length === 0, blockedWhy(issues)),
  };
  createRoot(container).render(<Editor {...props} />);
  return {
    program: textOf(doc),
    // Another program (JSON text) in the editor, as an edit undo takes back; `source` names it.
    setProgram(text, source) {
      const how = { source, keep: true };
      if (bridge.open) bridge.open(text, how);
      else bridge.waiting.push([text, how]);
    },
  };
}
