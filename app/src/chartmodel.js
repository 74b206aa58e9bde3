// The run panel's charts without the DOM: the train loss by step (a point per run state) and the held-out
// metrics by step (a point per finished epoch), each kept to a bounded number of points whatever the run's
// length, with the words that summarise them. Node runs it in tests/js/chartmodel.test.js.

export const CAP = 2000; // points kept per table; a draw then costs the same at step 100 and step 10^7
export const LOSS = "train loss"; // the loss table's one column

// A finite number, or null (a gap in the line): the engine sends "nan", "inf" or "-inf" as strings.
export function finite(value) {
  return typeof value === "number" && Number.isFinite(value) ? value : null;
}

// "loss" is the test loss; "metric/<node>" the program's metric nodes (a program without a loss: its
// results, named as they are).
export function metricLabel(name, trains = true) {
  const node = name.startsWith("metric/") ? name.slice("metric/".length) : name;
  return trains ? `test ${node}` : node;
}

// Rows of x and named columns, at most `cap` of them. Row i of those added is kept when i is a multiple of
// `stride`; the newest row is always kept too (the last one, "provisional" while it is off that grid, and
// replaced by the next). When the rows pass `cap`, every other kept row goes and the stride doubles: the
// rows kept depend only on the rows added, the first and newest are always there, and an add costs O(1)
// amortized (a halving's O(cap) comes once per cap/2 rows kept).
export class Table {
  constructor(cap = CAP) {
    this.cap = Math.max(cap, 4);
    this.x = [];
    this.columns = new Map(); // name -> (number | null)[], insertion-ordered, aligned with x
    this.stride = 1;
    this.count = 0; // rows added
    this.provisional = false;
  }

  // `values`: {name: number | null}; a new name gets a column (null in the rows before it).
  add(x, values) {
    if (this.provisional) this.pop();
    for (const name of Object.keys(values)) {
      if (!this.columns.has(name)) this.columns.set(name, new Array(this.x.length).fill(null));
    }
    this.x.push(x);
    for (const [name, column] of this.columns) column.push(values[name] ?? null);
    this.provisional = this.count % this.stride !== 0;
    this.count += 1;
    if (this.x.length > this.cap) this.halve();
  }

  pop() {
    this.x.pop();
    for (const column of this.columns.values()) column.pop();
  }

  halve() {
    const grid = this.x.length - (this.provisional ? 1 : 0);
    const newest = this.x.length - 1;
    const keep = [];
    for (let i = 0; i < grid; i += 2) keep.push(i);
    this.stride *= 2;
    this.provisional = (this.count - 1) % this.stride !== 0;
    if (this.provisional) keep.push(newest);
    for (const array of [this.x, ...this.columns.values()]) {
      keep.forEach((from, to) => {
        array[to] = array[from];
      });
      array.length = keep.length;
    }
  }

  get length() {
    return this.x.length;
  }

  // uPlot's aligned data: copies, so later adds never change what a chart holds.
  data(names = [...this.columns.keys()]) {
    return [this.x.slice(), ...names.map((name) => this.columns.get(name).slice())];
  }

  // The newest finite value of `name`, with its x; null when there is none.
  latest(name) {
    const column = this.columns.get(name) ?? [];
    for (let i = column.length - 1; i >= 0; i -= 1) {
      if (column[i] !== null) return { x: this.x[i], value: column[i] };
    }
    return null;
  }
}

// A run's chart series: feed it every run state (`update`), in order. The first state after `reset` only
// sets the origin (the step the run opened at: 0, or the step it resumed from), since its loss is not of a
// step taken; a state that took no step (a checkpoint saved while paused) adds no point.
export class RunSeries {
  constructor(cap = CAP) {
    this.cap = cap;
    this.reset();
  }

  reset() {
    this.loss = new Table(this.cap);
    this.metrics = new Table(this.cap);
    this.origin = null;
    this.step = null; // the newest step fed
    this.nonFinite = 0; // train losses fed that were not finite (gaps in the line)
    this.units = new Map(); // metric name -> "%" (every value so far in [0, 1]) or "value"
    this.layout = 0; // bumped when a metric appears or changes unit: the chart's axes change
    this.trains = true; // false: a simulation or an analysis (no loss; its metrics are its results)
  }

  update(state) {
    if (state.trains === false && this.trains) {
      this.trains = false;
      this.layout += 1;
    }
    if (this.origin === null) {
      this.origin = state.step;
    } else if (state.step > this.step && this.trains) {
      const loss = finite(state.loss);
      if (loss === null) this.nonFinite += 1;
      this.loss.add(state.step, { [LOSS]: loss });
    }
    this.step = Math.max(this.step ?? state.step, state.step);
    for (const row of state.epochs_done ?? []) this.addEpoch(row);
  }

  addEpoch(row) {
    const values = {};
    for (const [name, raw] of Object.entries(row.test)) {
      const value = finite(raw);
      values[name] = value;
      this.classify(name, value);
    }
    this.metrics.add(row.steps, values);
  }

  // A metric is drawn on the percent axis while all its values lie in [0, 1]; the loss never is.
  classify(name, value) {
    const bounded = value === null || (value >= 0 && value <= 1);
    // results have units of their own (a price, a standard error): never percent
    const unit = this.trains && name !== "loss" && bounded && this.units.get(name) !== "value" ? "%" : "value";
    if (unit !== this.units.get(name)) {
      this.units.set(name, unit);
      this.layout += 1;
    }
  }

  // The metrics in column order, each with its label and unit.
  metricColumns() {
    return [...this.metrics.columns.keys()].map((name) => ({
      name,
      label: metricLabel(name, this.trains),
      unit: this.units.get(name),
    }));
  }

  lossSummary() {
    if (!this.trains) return "No train loss: the program has no loss, so nothing is trained.";
    const last = this.loss.latest(LOSS);
    const bad = this.nonFinite ? `; ${nonFiniteText(this.nonFinite)}` : "";
    if (!last) return `Train loss by step: no step taken yet${bad}.`;
    return `Train loss by step: ${formatValue(last.value, "value")} at step ${last.x}${bad}.`;
  }

  metricsSummary() {
    const parts = [];
    for (const { name, label, unit } of this.metricColumns()) {
      const last = this.metrics.latest(name);
      if (last) parts.push(`${label} ${formatValue(last.value, unit)} at step ${last.x}`);
    }
    const heading = this.trains ? "Held-out metrics by step" : "Results by step";
    if (!parts.length) return `${heading}: none until the first epoch ends.`;
    return `${heading}: ${parts.join(", ")}.`;
  }
}

export function nonFiniteText(count) {
  return `${count} non-finite ${count === 1 ? "loss" : "losses"} (not drawn)`;
}

export function formatValue(value, unit) {
  if (value === null || value === undefined) return "—";
  return unit === "%" ? `${(value * 100).toFixed(1)} %` : Number(value.toPrecision(4)).toString();
}
