// A program without a loss in the run panel, under Node: its results as rows (a value with its standard
// error, an interval from its two ends), whether a program trains, and its charts (no train loss counted,
// results by name on the value axis, never percent).
import assert from "node:assert/strict";
import { test } from "node:test";
import * as charts from "../../app/src/chartmodel.js";
import * as model from "../../app/src/runmodel.js";

test("results pair values with standard errors and intervals", () => {
  const rows = model.resultRows({
    "metric/european": 10.4331054,
    "metric/european_se": 0.0287083,
    "metric/asian": 5.8291945,
    "metric/coef_mean_radius": -4.918741,
    "metric/coef_mean_radius_se": 0.54234,
    "metric/coef_mean_radius_ci_low": -6.4094,
    "metric/coef_mean_radius_ci_high": -4.1596,
    "metric/average_radius_ci_low": 13.857,
    "metric/average_radius_ci_high": 14.4359,
    "metric/average_radius": 14.127292,
    "metric/lonely_ci_low": 1,
    "metric/bad": "nan",
  });
  assert.deepEqual(rows, [
    { name: "european", text: "10.433 ± 0.028708 (standard error)" },
    { name: "asian", text: "5.8292" },
    { name: "coef_mean_radius", text: "-4.9187 ± 0.54234 (standard error) interval [-6.4094, -4.1596]" },
    { name: "average_radius", text: "14.127 interval [13.857, 14.436]" },
    { name: "lonely", text: "ci_low 1" },
    { name: "bad", text: "nan" },
  ]);
});

test("a program trains when it has a loss", () => {
  const kinds = [
    model.trains('{"loss": "loss"}'),
    model.trains('{"loss": null}'),
    model.trains("{}"),
    model.trains("{"),
  ];
  assert.deepEqual(kinds, [true, false, false, true]); // unreadable text: the page's default words
});

test("a simulation's charts count no loss and draw results as values", () => {
  const series = new charts.RunSeries();
  const state = (step, rows = []) => ({ step, loss: "nan", trains: false, epochs_done: rows });
  series.update(state(0));
  const results = { "metric/se": 0.02, "metric/m": 0.98 };
  series.update(state(64, [{ epoch: 1, steps: 64, train_loss: "nan", test: results }]));
  assert.equal(series.nonFinite, 0);
  assert.equal(series.loss.x.length, 0);
  assert.deepEqual(series.metricColumns(), [
    { name: "metric/se", label: "se", unit: "value" },
    { name: "metric/m", label: "m", unit: "value" },
  ]);
  assert.equal(series.lossSummary(), "No train loss: the program has no loss, so nothing is trained.");
  assert.equal(series.metricsSummary(), "Results by step: se 0.02 at step 64, m 0.98 at step 64.");
});
