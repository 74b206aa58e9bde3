// The editor's commands as buttons (each with its shortcut), the examples, saving and loading program
// JSON, the status line and the problems list of the latest check.

import { useId } from "react";
import { SHORTCUTS } from "./keys.js";

function Command({ name, label, onClick, disabled = false }) {
  const shortcut = SHORTCUTS[name];
  return (
    <button
      type="button"
      onClick={onClick}
      disabled={disabled}
      title={`${label} (${shortcut.words})`}
      aria-keyshortcuts={shortcut.keys}
    >
      {label}
    </button>
  );
}

function Examples({ examples, onOpen }) {
  const id = useId();
  const open = (event) => {
    event.preventDefault();
    onOpen(Number(new FormData(event.target).get("example")));
  };
  return (
    <form className="editor-examples" onSubmit={open}>
      <label htmlFor={id}>Example</label>
      <select id={id} name="example" defaultValue="0">
        {examples.map((example, i) => (
          <option key={example.name} value={i} title={example.summary}>
            {example.name}
          </option>
        ))}
      </select>
      <button type="submit">Open</button>
    </form>
  );
}

function ImportButton({ onFile }) {
  const id = useId();
  const chosen = (event) => {
    const [file] = event.target.files;
    event.target.value = ""; // choosing the same file again is a new import
    if (file) onFile(file);
  };
  return (
    <>
      <input id={id} type="file" accept=".json,application/json" className="visually-hidden" onChange={chosen} />
      <label htmlFor={id} className="editor-file-button">
        Import JSON…
      </label>
    </>
  );
}

// `run(command)` runs one of keys.js's commands; `can` says which are possible now. `fold` ({groups,
// folded, onFold, onUnfold}): the program's groups (graph/groups.js), how many are folded, and folding or
// unfolding them all.
export function Toolbar({ run, can, examples, onExample, onReset, onExport, onFile, fold }) {
  return (
    <div className="editor-toolbar" role="group" aria-label="Editor commands">
      <span className="editor-tools">
        <Command name="undo" label="Undo" onClick={() => run("undo")} disabled={!can.undo} />
        <Command name="redo" label="Redo" onClick={() => run("redo")} disabled={!can.redo} />
        <Command name="copy" label="Copy" onClick={() => run("copy")} disabled={!can.copy} />
        <Command name="paste" label="Paste" onClick={() => run("paste")} disabled={!can.paste} />
        <Command name="delete" label="Delete" onClick={() => run("delete")} disabled={!can.remove} />
        <Command name="fit" label="Fit" onClick={() => run("fit")} />
        <button
          type="button"
          className="editor-fold"
          disabled={!fold.groups}
          onClick={fold.folded ? fold.onUnfold : fold.onFold}
          title="Draw each group of nodes whose ids share a prefix (a layer: layer0-…) as one box, or every node again"
          data-folded={fold.folded}
        >
          {fold.folded ? "Unfold layers" : `Fold layers${fold.groups ? ` (${fold.groups})` : ""}`}
        </button>
      </span>
      <Examples examples={examples} onOpen={onExample} />
      <span className="editor-tools">
        <button type="button" onClick={onReset} title="Open the page's example program again (undo takes it back)">
          Reset to example
        </button>
        <button type="button" onClick={onExport}>
          Export JSON
        </button>
        <ImportButton onFile={onFile} />
      </span>
    </div>
  );
}

export function Notice({ notice }) {
  return (
    <p className={`editor-notice${notice?.kind === "error" ? " error-text" : ""}`} role="status" aria-live="polite">
      {notice?.text ?? ""}
    </p>
  );
}

// The latest check's issues, each that belongs to a node or an edge a button that selects it.
export function Problems({ list, checking, onShow }) {
  const id = useId();
  const count = list.length;
  const waiting = count > 1 ? `${count} problems: the memory plan and training wait until they are fixed.` : "";
  const one = "1 problem: the memory plan and training wait until it is fixed.";
  const status = checking
    ? "Checking the program…"
    : waiting || (count ? one : "No problems: the memory plan and training use this program.");
  return (
    <section className="editor-problems" aria-labelledby={id} data-count={count}>
      <h3 id={id}>Problems</h3>
      <p aria-live="polite">{status}</p>
      {count > 0 && (
        <ul>
          {list.map((problem) => (
            <li key={problem.key}>
              {problem.node || problem.edge ? (
                <button type="button" className="problem-owner" onClick={() => onShow(problem)}>
                  {problem.owner}
                </button>
              ) : (
                <span className="problem-owner">{problem.owner}</span>
              )}{" "}
              {problem.text}
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
