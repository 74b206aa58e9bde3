// The graph editor: palette, canvas (React Flow), side panel, commands and the problems list, over one
// state value (state.js). After each change the program is checked by the engine (debounced, checker.js),
// its issues drawn where they belong, the result handed to the page (`onProgram`) and the program kept
// in the browser's storage.

import { ReactFlowProvider, useReactFlow } from "@xyflow/react";
import { useCallback, useEffect, useMemo, useRef, useState } from "react";
import { AUTO_FOLD, groupsOf } from "../graph/groups.js";
import { canRedo, canUndo } from "../graph/history.js";
import { issueMarks } from "../graph/issues.js";
import { NODE_SIZE } from "../graph/layout.js";
import { paletteGroups } from "../graph/palette.js";
import { download } from "../runpanel.js";
import { Canvas, FIT } from "./Canvas.jsx";
import { Checker } from "./checker.js";
import { commandFor } from "./keys.js";
import { Palette } from "./Palette.jsx";
import { saveProgram, textOf } from "./program.js";
import { SidePanel } from "./SidePanel.jsx";
import * as edit from "./state.js";
import { Notice, Problems, Toolbar } from "./Toolbar.jsx";
import { problems } from "./view.js";

const NO_MARKS = { nodes: new Map(), edges: new Map(), program: [] };
// keys.js's commands that edit (fit moves the view only)
const COMMANDS = {
  undo: edit.undoEdit,
  redo: edit.redoEdit,
  copy: edit.copySelected,
  paste: edit.pasteClipboard,
  delete: edit.deleteSelected,
};

// The latest check of the document: {doc, issues} once its answer is in. `onChecked(text, issues)`.
function useChecks(check, doc, text, onChecked) {
  const checker = useMemo(() => new Checker(check), [check]);
  const [checked, setChecked] = useState({ doc: null, issues: [] });
  const report = useRef(onChecked);
  report.current = onChecked;
  useEffect(() => {
    checker.request(text, (issues) => {
      setChecked({ doc, issues });
      report.current(text, issues);
    });
  }, [checker, doc, text]);
  return checked;
}

// The program is kept in the storage once it differs from the one the editor opened with (so an
// unedited example is never pinned there), and from then on after every change.
function useSaving(storage, text) {
  const first = useRef(text);
  const saving = useRef(false);
  useEffect(() => {
    if (!saving.current && text === first.current) return;
    saving.current = true;
    saveProgram(storage, text);
  }, [storage, text]);
}

// Programs the page sends (a remedy's, a share link's, the example on reset) before and after mounting.
function useBridge(bridge, setState) {
  useEffect(() => {
    bridge.open = (text, how) => setState((s) => edit.openText(s, text, how));
    for (const [text, how] of bridge.waiting.splice(0)) bridge.open(text, how);
    return () => {
      bridge.open = null;
    };
  }, [bridge, setState]);
}

const fileName = (name) => `${String(name ?? "program").replace(/[^A-Za-z0-9._-]+/g, "-") || "program"}.json`;

// The commands, as functions of the current state; `root` is the editor's element.
function useActions(setState, ops, root, examples, example, onExample) {
  const flow = useReactFlow();
  const update = (fn, ...args) => setState((s) => fn(s, ...args));
  const middle = () => {
    const box = root.current.querySelector(".editor-canvas").getBoundingClientRect();
    const at = flow.screenToFlowPosition({ x: box.left + box.width / 2, y: box.top + box.height / 2 });
    return { x: at.x - NODE_SIZE.width / 2, y: at.y - NODE_SIZE.height / 2 };
  };
  const open = (text, how) => update(edit.openText, text, how);
  const run = (command) => (command === "fit" ? flow.fitView(FIT) : update(COMMANDS[command]));
  return {
    run,
    add: (name, at = middle()) => update(edit.addOp, ops.get(name), at),
    connect: (connection) => update(edit.connectPorts, ops, connection),
    disconnect: (ids) => update(edit.disconnectEdges, ids),
    param: (id, name, value) => update(edit.setNodeParam, id, name, value),
    label: (id, value) => update(edit.setNodeLabel, id, value),
    field: (key, value) => update(edit.setProgramField, key, value),
    move: (moves) => update(edit.moveTo, moves),
    select: (which, changes) => update(edit.selectChanges, which, changes),
    copy: () => run("copy"),
    remove: () => run("delete"),
    example: (i) => {
      open(JSON.stringify(examples[i].program), { source: `the example ${examples[i].name}`, fit: true });
      onExample(examples[i]);
    },
    reset: () => open(example, { source: "the page's example", fit: true }),
    importFile: async (file) => open(await file.text(), { source: file.name, fit: true }),
    show: (problem) => {
      update(edit.selectOnly, problem.node ? [problem.node] : [], problem.edge && !problem.node ? [problem.edge] : []);
      if (problem.node) flow.fitView({ nodes: [{ id: problem.node }], ...FIT, duration: 200 });
    },
  };
}

// Which groups of the program (graph/groups.js) are drawn folded: every one when a program of more than
// AUTO_FOLD nodes opens (a pretrained encoder's layers), none for a smaller one; the toolbar and each box
// change it, and the view is fitted again when it does. The view's own state: no edit, nothing kept.
function useFolding(graph, flow) {
  const groups = useMemo(() => groupsOf(graph), [graph]);
  const names = [...groups.keys()].join(" ");
  const big = graph.nodes.length > AUTO_FOLD;
  const [folded, setFolded] = useState(() => new Set(big ? groups.keys() : []));
  const opened = useRef(names);
  useEffect(() => {
    if (opened.current === names) return; // the same groups: an edit, not another program
    opened.current = names;
    setFolded(new Set(big ? names.split(" ").filter(Boolean) : []));
  }, [names, big]);
  const shown = useMemo(() => new Set([...folded].filter((name) => groups.has(name))), [folded, groups]);
  const shownNames = [...shown].join(" ");
  const fitted = useRef(shownNames);
  useEffect(() => {
    if (fitted.current === shownNames) return;
    fitted.current = shownNames;
    flow.fitView(FIT); // queued by React Flow until the boxes are measured
  }, [shownNames, flow]);
  const unfold = useCallback((name) => setFolded((old) => new Set([...old].filter((n) => n !== name))), []);
  return {
    set: shown,
    all: groups,
    groups: groups.size,
    folded: shown.size,
    onFold: () => setFolded(new Set(groups.keys())),
    onUnfold: () => setFolded(new Set()),
    unfold,
  };
}

function EditorBody({ catalog, ops, examples, example, onExample, initial, notice, storage, check, onProgram, bridge }) {
  const root = useRef(null);
  const [state, setState] = useState(() => ({ ...edit.startEditor(initial), notice }));
  const doc = edit.docOf(state);
  const text = useMemo(() => textOf(doc), [doc]);
  const checked = useChecks(check, doc, text, onProgram);
  const marks = useMemo(() => (checked.doc ? issueMarks(checked.issues, checked.doc.graph) : NO_MARKS), [checked]);
  const list = useMemo(() => (checked.doc ? problems(checked.issues, checked.doc.graph) : []), [checked]);
  const groups = useMemo(() => paletteGroups(catalog), [catalog]);
  const act = useActions(setState, ops, root, examples, example, onExample);
  const flow = useReactFlow();
  useSaving(storage, text);
  useBridge(bridge, setState);
  useEffect(() => {
    if (state.fits) flow.fitView(FIT);
  }, [state.fits, flow]);
  const selected = useMemo(() => edit.selection(state), [state.selected, doc]);
  const fold = useFolding(doc.graph, flow);
  const can = {
    undo: canUndo(state.history),
    redo: canRedo(state.history),
    copy: selected.nodes.length > 0,
    paste: state.clipboard !== null,
    remove: selected.nodes.length + selected.edges.length > 0,
  };
  const onKeyDown = (event) => {
    const command = commandFor(event);
    if (!command) return;
    event.preventDefault();
    act.run(command);
  };
  // a click on the canvas puts the keyboard in the editor, so its shortcuts work
  const onPointerDown = () => {
    if (!root.current.contains(document.activeElement)) root.current.focus({ preventScroll: true });
  };
  const onExport = () => download(fileName(doc.rest.name), text);
  return (
    <div
      className="editor"
      ref={root}
      tabIndex={-1}
      onKeyDown={onKeyDown}
      onPointerDownCapture={onPointerDown}
      data-checked={checked.doc === doc ? "yes" : "no"}
    >
      <Toolbar
        run={act.run}
        can={can}
        examples={examples}
        onExample={act.example}
        onReset={act.reset}
        onExport={onExport}
        onFile={act.importFile}
        fold={fold}
      />
      <Notice notice={state.notice} />
      <div className="editor-main">
        <Palette groups={groups} onAdd={(name) => act.add(name)} />
        <Canvas doc={doc} ops={ops} selected={selected} marks={marks} act={act} fold={fold} />
        <SidePanel doc={doc} ops={ops} selected={selected} marks={marks} act={act} />
      </div>
      <Problems list={list} checking={checked.doc !== doc} onShow={act.show} />
    </div>
  );
}

export function Editor(props) {
  return (
    <ReactFlowProvider>
      <EditorBody {...props} />
    </ReactFlowProvider>
  );
}
