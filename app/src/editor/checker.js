// The editor's checks, debounced: the program opened goes to the engine's `check` at once; after each
// change the program text goes there once the edits pause, and only the answer for the latest text is
// delivered (an answer that comes back after a later edit is dropped). Answers are kept for recent texts, so undo and redo are checked at once.
// No DOM: the engine call and the timer are passed in.

export const CHECK_DELAY_MS = 250;
const KEPT = 32; // recent texts whose issues are kept

export class Checker {
  // `check(text)` resolves to the engine's {issues}; `timers` has setTimeout and clearTimeout.
  constructor(check, { delay = CHECK_DELAY_MS, timers = globalThis } = {}) {
    Object.assign(this, { check, delay, timers });
    this.known = new Map(); // text -> issues, oldest first
    this.wanted = null;
    this.timer = null;
  }

  // Checks `text` (after the delay, unless known) and calls `deliver(issues)` if it is still the latest
  // text asked for. A failed check is delivered as one issue that says so (the program is not run).
  // The first text asked for (the program the editor opened) is checked at once: there is no edit to wait
  // out, and the page trains nothing before its answer.
  request(text, deliver) {
    const first = this.wanted === null;
    this.wanted = text;
    this.timers.clearTimeout(this.timer);
    if (this.known.has(text)) {
      deliver(this.known.get(text));
      return;
    }
    if (first) this.run(text, deliver);
    else this.timer = this.timers.setTimeout(() => this.run(text, deliver), this.delay);
  }

  async run(text, deliver) {
    let issues;
    try {
      issues = (await this.check(text)).issues;
      this.keep(text, issues);
    } catch (error) {
      const message = `the engine could not check the program: ${error?.message ?? error}`;
      issues = [{ path: "", node: null, port: null, message }];
    }
    if (text === this.wanted) deliver(issues);
  }

  keep(text, issues) {
    this.known.delete(text);
    this.known.set(text, issues);
    if (this.known.size > KEPT) this.known.delete(this.known.keys().next().value);
  }
}
