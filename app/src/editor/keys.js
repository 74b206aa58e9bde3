// The editor's keyboard shortcuts: a key event (its key and modifiers, and the element it came from) to
// the command it gives, or null. Keys typed into a field stay the field's (its own undo, Backspace);
// Delete and F on a button stay the button's. No DOM beyond reading the event's target.

const TEXT_FIELDS = new Set(["INPUT", "TEXTAREA", "SELECT"]);

// The shortcuts as the toolbar shows them (aria-keyshortcuts and titles).
export const SHORTCUTS = {
  undo: { keys: "Control+Z Meta+Z", words: "Ctrl+Z" },
  redo: { keys: "Shift+Control+Z Shift+Meta+Z Control+Y", words: "Shift+Ctrl+Z or Ctrl+Y" },
  copy: { keys: "Control+C Meta+C", words: "Ctrl+C" },
  paste: { keys: "Control+V Meta+V", words: "Ctrl+V" },
  delete: { keys: "Delete Backspace", words: "Delete" },
  fit: { keys: "F", words: "F" },
};

function inField(target) {
  return Boolean(target && (TEXT_FIELDS.has(target.tagName) || target.isContentEditable));
}

// `event`: {key, ctrlKey, metaKey, shiftKey, altKey, target}. Ctrl and Cmd (Meta) are the same here.
export function commandFor(event) {
  if (event.altKey || inField(event.target)) return null;
  const key = event.key.length === 1 ? event.key.toLowerCase() : event.key;
  if (event.ctrlKey || event.metaKey) {
    if (key === "z") return event.shiftKey ? "redo" : "undo";
    if (event.shiftKey) return null;
    return { y: "redo", c: "copy", v: "paste" }[key] ?? null;
  }
  if (event.shiftKey || event.target?.tagName === "BUTTON") return null;
  if (key === "Delete" || key === "Backspace") return "delete";
  return key === "f" ? "fit" : null;
}
