// Undo and redo for the editor: a bounded list of past states, the present, and the states undone.
// States are whole values (a graph and the program's other parts), never diffs: the edits never mutate
// one, so keeping a state is keeping a reference. No DOM.

export const HISTORY_DEPTH = 100; // states kept for undo; the oldest goes first

export function startHistory(present, depth = HISTORY_DEPTH) {
  return { past: [], present, future: [], depth };
}

// After an edit: the new state becomes the present and the redo list is gone. An edit that changed
// nothing (the same state back, as a refused connection gives) leaves no step to undo.
export function record(history, next) {
  if (next === history.present) return history;
  const kept = [...history.past, history.present];
  const past = kept.slice(Math.max(0, kept.length - history.depth)); // not slice(-depth): -0 keeps all
  return { ...history, past, present: next, future: [] };
}

export function undo(history) {
  if (!history.past.length) return history;
  return {
    ...history,
    past: history.past.slice(0, -1),
    present: history.past.at(-1),
    future: [history.present, ...history.future],
  };
}

export function redo(history) {
  if (!history.future.length) return history;
  return {
    ...history,
    past: [...history.past, history.present],
    present: history.future[0],
    future: history.future.slice(1),
  };
}

export const canUndo = (history) => history.past.length > 0;
export const canRedo = (history) => history.future.length > 0;
