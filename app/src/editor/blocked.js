// The page's side of a program with problems: the train button stays disabled and says why, until the
// editor's program checks clean (and a level is chosen).

import { byId } from "../dom.js";

// `why`: blockedWhy's sentence, "" when nothing blocks; `level`: the level chosen, "" when none is.
export function showBlocked(why, level) {
  byId("train-button").disabled = Boolean(why) || !level;
  const note = byId("train-blocked");
  note.textContent = why ? `Training waits: ${why}.` : "";
  note.hidden = !why;
}
