// The run panel's logic without the DOM: driving a run a chunk of steps at a time (so the page can pause,
// take a single step and go on), the figures it shows, the last run kept across visits, the data files a
// re-run asks for, and the manifest's file name. Node runs it in tests/js/app.test.js.

export const CHUNK_TARGET_MS = 150; // a chunk of steps this long keeps the page answering between chunks
export const MAX_CHUNK = 2000;
export const DATA_FILES = ["digits-train-x.f32", "digits-train-y.i32", "digits-test-x.f32", "digits-test-y.i32"];
export const LAST_RUN = "scellis.lastRun";
const KEY = /^sha256:[0-9a-f]{64}$/;

// The next chunk's steps: about CHUNK_TARGET_MS of running at the rate the last chunk (`steps` in `ms`)
// ran, changing at most fourfold at a time.
export function nextChunk(previous, steps, ms) {
  if (!(steps > 0) || !(ms > 0)) return Math.min(previous * 2, MAX_CHUNK);
  const wanted = Math.round((steps / ms) * CHUNK_TARGET_MS);
  const bounded = Math.min(Math.max(wanted, Math.ceil(previous / 4), 1), previous * 4);
  return Math.min(bounded, MAX_CHUNK);
}

// A rate in steps per second at any speed, never in exponent notation: whole steps with thousands
// separators from 100 up, three significant digits below.
export function formatRate(perSecond) {
  if (perSecond >= 100) return Math.round(perSecond).toLocaleString("en-US");
  if (perSecond >= 0.01) return perSecond.toPrecision(3);
  return perSecond > 0 ? "under 0.01" : "0";
}

export function formatDuration(seconds) {
  if (seconds < 1) return "under a second";
  const s = Math.round(seconds);
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${String(s % 60).padStart(2, "0")} s`;
  return `${Math.floor(m / 60)} h ${String(m % 60).padStart(2, "0")} min`;
}

// One line of where the run stands: steps of the total, epoch, rate, what recording a step costs the host a
// kernel (a GPU's executor measures it) and time left (once measured).
export function figures(state) {
  const parts = [`step ${state.step} of ${state.total}`, `epoch ${state.epoch} of ${state.epochs}`];
  if (state.steps_per_s !== null) parts.push(`${formatRate(state.steps_per_s)} steps/s`);
  const us = state.host_us_per_dispatch;
  if (us !== null && us !== undefined) parts.push(`host ${us < 10 ? us.toFixed(1) : Math.round(us)} µs a dispatch`);
  if (state.done) parts.push(state.stopped ? "stopped by a rule" : "done");
  else if (state.eta_s !== null)
    parts.push(state.eta_s < 1 ? "under a second left" : `about ${formatDuration(state.eta_s)} left`);
  return parts.join(" · ");
}

// What the run panel's buttons allow in each phase of a run.
export function controls(phase) {
  const running = phase === "running";
  const paused = phase === "paused";
  const idle = phase === "done" || phase === "failed" || phase === "idle";
  return {
    pause: running,
    step: paused,
    continue: paused,
    save: paused || phase === "done",
    pinned: paused || phase === "done",
    resume: paused || idle,
  };
}

// Drives a run (anything with `advance(steps)` resolving to the state as JSON text) a chunk at a time.
// `onState(state)` after each chunk; `wait()` between chunks gives the page its turn.
export class Driver {
  constructor(
    run,
    { onState, wait = () => new Promise((resolve) => setTimeout(resolve, 0)), now = () => performance.now() },
  ) {
    this.run = run;
    this.onState = onState;
    this.wait = wait;
    this.now = now;
    this.chunk = 1; // the first step alone, so its loss shows as soon as it is back; then nextChunk's
    this.paused = true;
    this.loop = null;
    this.last = null;
  }

  async advance(steps) {
    const began = this.now();
    const before = this.last ? this.last.step : null;
    const state = JSON.parse(await this.run.advance(steps));
    if (before !== null) this.chunk = nextChunk(this.chunk, state.step - before, this.now() - began);
    this.last = state;
    this.onState(state);
    return state;
  }

  // Runs until paused or done; resolves with the last state.
  go() {
    if (this.loop) return this.loop;
    this.paused = false;
    this.loop = (async () => {
      try {
        let state = this.last;
        while (!this.paused && !state?.done) {
          state = await this.advance(this.chunk);
          if (!state.done) await this.wait();
        }
        return state;
      } finally {
        this.paused = true;
        this.loop = null;
      }
    })();
    return this.loop;
  }

  // Stops after the chunk under way; resolves once it has.
  async pause() {
    this.paused = true;
    if (this.loop) await this.loop;
    return this.last;
  }

  // One step, while paused.
  async step() {
    if (this.loop) throw new Error("pause the run before taking a single step");
    if (this.last?.done) return this.last;
    return this.advance(1);
  }
}

// The last run's record (program, level, seed, epochs, device kind, the latest key and its step), kept so a
// reloaded page can resume it: `value` as stored (the Runs history's IndexedDB keeps it), checked; null
// when it is not such a record.
export function checkLastRun(value) {
  const ok =
    value !== null &&
    typeof value === "object" &&
    typeof value.program === "string" &&
    ["debug", "prod", "fast"].includes(value.level) &&
    /^\d{1,20}$/.test(value.seed) &&
    Number.isInteger(value.epochs) &&
    Number.isInteger(value.step) &&
    typeof value.key === "string" &&
    KEY.test(value.key);
  return ok ? value : null;
}

// The last run's record as earlier pages kept it in `storage` (localStorage, under LAST_RUN), or null when
// there is none, it is unreadable (then it is dropped) or the storage cannot be read. Never throws.
export function lastRun(storage) {
  try {
    const text = storage.getItem(LAST_RUN);
    if (text === null) return null;
    let record = null;
    try {
      record = checkLastRun(JSON.parse(text));
    } catch {
      // not JSON: dropped below
    }
    if (record) return record;
    storage.removeItem(LAST_RUN);
  } catch {
    // storage blocked for this site: nothing kept there
  }
  return null;
}

// Drops the record earlier pages kept in `storage` (it moves to IndexedDB); never throws.
export function forgetLastRun(storage) {
  try {
    storage.removeItem(LAST_RUN);
  } catch {
    // storage blocked: nothing to drop
  }
}

export function rememberRun(storage, record) {
  if (!KEY.test(record.key)) throw new Error(`not a checkpoint key: ${record.key}`);
  storage.setItem(LAST_RUN, JSON.stringify(record));
}

// A checkpoint key as typed or pasted: trimmed, checked; {key} or {error}.
export function keyFromText(text) {
  const key = String(text).trim().toLowerCase();
  if (KEY.test(key)) return { key };
  return {
    error: `a checkpoint key is "sha256:" and 64 hexadecimal digits; got "${String(text).trim().slice(0, 80)}"`,
  };
}

// The files picked for a re-run, by name: the four data files and nothing else; {error} names the problem.
export function checkDataFiles(names) {
  const unknown = names.filter((name) => !DATA_FILES.includes(name));
  const missing = DATA_FILES.filter((name) => !names.includes(name));
  if (unknown.length) return { error: `${unknown.join(", ")}: not one of the data files (${DATA_FILES.join(", ")})` };
  if (missing.length)
    return { error: `missing ${missing.join(", ")}: choose all four data files (${DATA_FILES.join(", ")})` };
  return {};
}

// The manifest's download name: the program's name and the start of the final key.
const fileStem = (program) =>
  String(program ?? "")
    .replace(/[^A-Za-z0-9_-]+/g, "-")
    .replace(/^-+|-+$/g, "") || "run";

export function manifestName(program, final) {
  return `${fileStem(program)}-${final.slice("sha256:".length, "sha256:".length + 12)}.manifest.json`;
}

// The exported weights' file name: the program's and the step's.
export function weightsName(program, step) {
  return `${fileStem(program)}-step${step}.safetensors`;
}

// A fine-tuning export's file name: the program's, what it holds and the step's.
export function exportName(program, what, step) {
  const kind = { adapter: "peft-adapter", torch: "pytorch" }[what] ?? "model";
  return `${fileStem(program)}-${kind}-step${step}.zip`;
}

// [whether the program (JSON text) starts from a pretrained model's weights, whether it has LoRA adapters].
export function finetuned(programText) {
  try {
    const program = JSON.parse(programText);
    const pretrained = Boolean(program.weights);
    return [pretrained, pretrained && program.nodes.some((node) => node.id.endsWith("-lora-a"))];
  } catch {
    return [false, false];
  }
}

// Whether a program (JSON text) trains: one without a loss is a simulation or an analysis, whose steps
// carry its states and whose metrics are its results.
export function trains(programText) {
  try {
    return JSON.parse(programText).loss != null;
  } catch {
    return true;
  }
}

// A number as the results show it: 5 significant digits, or what the engine sent for one that is not
// finite ("nan", "inf").
export function resultNumber(value) {
  return typeof value === "number" ? Number(value.toPrecision(5)).toString() : String(value);
}

const SE = "_se";
const LOW = "_ci_low";
const HIGH = "_ci_high";

// The results of a program without a loss (its `metric/<node>` values) as rows to show: `<name>_se` goes
// with `<name>` as "value ± standard error", `<name>_ci_low` and `<name>_ci_high` as an interval, in the
// program's order of first mention; [{ name, text }].
export function resultRows(metrics) {
  const values = new Map(Object.entries(metrics).map(([key, value]) => [key.replace(/^metric\//, ""), value]));
  const base = (name) =>
    [SE, LOW, HIGH].reduce((n, suffix) => (n.endsWith(suffix) ? n.slice(0, -suffix.length) : n), name);
  const rows = [];
  for (const name of new Set([...values.keys()].map(base))) {
    const parts = [];
    if (values.has(name)) parts.push(resultNumber(values.get(name)));
    if (values.has(name + SE)) parts.push(`± ${resultNumber(values.get(name + SE))} (standard error)`);
    if (values.has(name + LOW) && values.has(name + HIGH)) {
      parts.push(`interval [${resultNumber(values.get(name + LOW))}, ${resultNumber(values.get(name + HIGH))}]`);
    } else {
      for (const suffix of [LOW, HIGH])
        if (values.has(name + suffix)) parts.push(`${suffix.slice(1)} ${resultNumber(values.get(name + suffix))}`);
    }
    rows.push({ name, text: parts.join(" ") });
  }
  return rows;
}
