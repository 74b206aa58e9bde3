// The run panel's chart series under Node (app/src/chartmodel.js): bounded tables that keep their first
// and newest rows and drop the same rows whatever the run's length, non-finite losses as counted gaps,
// held-out metrics by name on a loss or percent axis, a reset, and a resumed run's origin.
import assert from "node:assert/strict";
import { test } from "node:test";
import * as charts from "../../app/src/chartmodel.js";
import { plain } from "./lib.js";

// `state(step, loss, rows)`: a run state as PageRun.state() sends it (only the keys the charts read).
const state = (step, loss, rows = []) => ({ step, loss, epochs_done: rows });
const row = (steps, test) => ({ epoch: 1, steps, train_loss: 0.5, test });
const range = (start, stop, step = 1) =>
  Array.from({ length: Math.ceil((stop - start) / step) }, (_, i) => start + i * step);

test("a table stays bounded and keeps its first and newest rows", () => {
  const table = new charts.Table(100);
  const lengths = [];
  const newest = [];
  for (let i = 0; i < 100000; i += 1) {
    table.add(i, { y: i * 2 });
    lengths.push(table.length);
    if (table.x.at(-1) !== i || table.columns.get("y").at(-1) !== i * 2) newest.push(i);
  }
  assert.ok(Math.max(...lengths) <= 100);
  assert.deepEqual(lengths.slice(0, 100), range(1, 101));
  assert.deepEqual(newest, []); // the row just added is always the last one
  const xs = Array.from(table.x);
  assert.equal(xs[0], 0);
  assert.equal(xs.at(-1), 99999);
  const grid = xs.slice(0, -1).filter((x) => x % table.stride === 0);
  assert.deepEqual(grid, xs.slice(0, -1));
  assert.deepEqual(xs.slice(0, -1), range(0, xs.at(-2) + 1, table.stride)); // evenly spaced
  assert.ok(xs.length >= 40); // halving leaves about half the cap, never a handful
});

test("decimation is deterministic and the same however it is fed", () => {
  const fill = (cap, n) => {
    const t = new charts.Table(cap);
    for (let i = 0; i < n; i += 1) t.add(i * 10, { loss: Math.sin(i) });
    return plain(t.data());
  };
  const a = fill(64, 5000);
  assert.deepEqual(a, fill(64, 5000));
  assert.equal(a[0].at(-1), 49990);
  assert.equal(a[0].length, a[1].length);
  assert.ok(a[0].length <= 64);
  const c = new charts.Table(64);
  for (let i = 0; i < 4999; i += 1) c.add(i * 10, { loss: Math.sin(i) });
  const before = new Set(c.data()[0].slice(0, -1));
  c.add(49990, { loss: Math.sin(4999) });
  const after = c.data()[0].slice(0, -1);
  for (const x of after) assert.ok(before.has(x) || x === 49980, `${x}`); // the grid only ever thins
});

test("non-finite losses are gaps and counted", () => {
  const series = new charts.RunSeries();
  series.update(state(0, "nan")); // the opened run: its loss is of no step
  for (const [step, loss] of [
    [4, 2.3],
    [8, "nan"],
    [12, "inf"],
    [16, 1.9],
    [16, 1.9],
    [20, "-inf"],
  ]) {
    series.update(state(step, loss));
  }
  // step 16 twice: one point
  assert.deepEqual(plain(series.loss.data()), [
    [4, 8, 12, 16, 20],
    [2.3, null, null, 1.9, null],
  ]);
  assert.equal(series.nonFinite, 3);
  assert.equal(series.lossSummary(), "Train loss by step: 1.9 at step 16; 3 non-finite losses (not drawn).");
  assert.equal(new charts.RunSeries().lossSummary(), "Train loss by step: no step taken yet.");
});

test("metrics appear by name on a loss or percent axis", () => {
  const series = new charts.RunSeries();
  series.update(state(0, 2.3));
  const layouts = [series.layout];
  series.update(state(22, 1.1, [row(22, { loss: 0.9, "metric/accuracy": 0.71 })]));
  layouts.push(series.layout);
  series.update(state(44, 0.8, [row(44, { loss: 0.5, "metric/accuracy": 0.88, "metric/mae": 0.4 })]));
  layouts.push(series.layout);
  series.update(state(66, 0.6, [row(66, { loss: "nan", "metric/accuracy": 0.93, "metric/mae": 3.5 })]));
  layouts.push(series.layout);
  assert.deepEqual(layouts, [0, 2, 3, 4]); // loss and accuracy, then mae, then mae leaves the percent axis
  assert.deepEqual(series.metricColumns(), [
    { name: "loss", label: "test loss", unit: "value" },
    { name: "metric/accuracy", label: "test accuracy", unit: "%" },
    { name: "metric/mae", label: "test mae", unit: "value" },
  ]);
  assert.deepEqual(plain(series.metrics.data()), [
    [22, 44, 66],
    [0.9, 0.5, null],
    [0.71, 0.88, 0.93],
    [null, 0.4, 3.5],
  ]);
  assert.equal(
    series.metricsSummary(),
    "Held-out metrics by step: test loss 0.5 at step 44, test accuracy 93.0 % at step 66, test mae 3.5 at step 66.",
  );
  assert.equal(new charts.RunSeries().metricsSummary(), "Held-out metrics by step: none until the first epoch ends.");
  const regression = new charts.RunSeries();
  regression.update(state(0, 1));
  regression.update(state(10, 1, [row(10, { loss: 0.3 })]));
  assert.deepEqual(regression.metricColumns(), [{ name: "loss", label: "test loss", unit: "value" }]); // no accuracy
});

test("reset forgets the run and a resumed run starts at its step", () => {
  const series = new charts.RunSeries(50);
  series.update(state(0, "nan"));
  for (let step = 1; step <= 500; step += 1) {
    series.update(state(step, step % 7 ? 1 / step : "nan", step % 100 ? [] : [row(step, { loss: 1 / step })]));
  }
  const facts = (s) => ({ points: s.loss.length, metrics: s.metrics.length, bad: s.nonFinite, origin: s.origin });
  const before = facts(series);
  assert.ok(before.points >= 20 && before.points <= 50, `${before.points}`);
  assert.deepEqual([before.metrics, before.bad, before.origin], [5, Math.floor(500 / 7), 0]);
  series.reset();
  assert.deepEqual(
    { ...facts(series), layout: series.layout, columns: series.metricColumns() },
    { points: 0, metrics: 0, bad: 0, origin: null, layout: 0, columns: [] },
  );
  series.update(state(240, "nan")); // a run resumed from step 240
  series.update(state(250, 0.25));
  assert.deepEqual(plain({ origin: series.origin, data: series.loss.data(), step: series.step }), {
    origin: 240,
    data: [[250], [0.25]],
    step: 250,
  });
});
