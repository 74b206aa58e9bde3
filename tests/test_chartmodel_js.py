"""The run panel's chart series under Node (app/src/chartmodel.js): bounded tables that keep their first
and newest rows and drop the same rows whatever the run's length, non-finite losses as counted gaps,
held-out metrics by name on a loss or percent axis, a reset, and a resumed run's origin."""

from __future__ import annotations

from pathlib import Path

from nodejs import run_node

SRC = (Path(__file__).resolve().parents[1] / "app" / "src").as_uri()

# `state(step, loss, rows)`: a run state as PageRun.state() sends it (only the keys the charts read).
PRELUDE = f"""
import * as charts from "{SRC}/chartmodel.js";
const state = (step, loss, rows = []) => ({{ step, loss, epochs_done: rows }});
const row = (steps, test) => ({{ epoch: 1, steps, train_loss: 0.5, test }});
const out = {{}};
"""


def run_js(body: str) -> dict:
    return run_node(PRELUDE, body)


def test_a_table_stays_bounded_and_keeps_its_first_and_newest_rows() -> None:
    out = run_js("""
const table = new charts.Table(100);
out.lengths = [];
out.newest = [];
for (let i = 0; i < 100000; i += 1) {
  table.add(i, { y: i * 2 });
  out.lengths.push(table.length);
  if (table.x.at(-1) !== i || table.columns.get("y").at(-1) !== i * 2) out.newest.push(i);
}
out.x = table.x;
out.stride = table.stride;
""")
    assert max(out["lengths"]) <= 100 and out["lengths"][:100] == list(range(1, 101))
    assert out["newest"] == []  # the row just added is always the last one
    xs = out["x"]
    assert xs[0] == 0 and xs[-1] == 99999
    grid = [x for x in xs[:-1] if x % out["stride"] == 0]
    assert grid == xs[:-1] and xs[:-1] == list(range(0, xs[-2] + 1, out["stride"]))  # evenly spaced
    assert len(xs) >= 40  # halving leaves about half the cap, never a handful


def test_decimation_is_deterministic_and_the_same_however_it_is_fed() -> None:
    out = run_js("""
const fill = (cap, n) => {
  const t = new charts.Table(cap);
  for (let i = 0; i < n; i += 1) t.add(i * 10, { loss: Math.sin(i) });
  return t.data();
};
out.a = fill(64, 5000);
out.b = fill(64, 5000);
const c = new charts.Table(64);
for (let i = 0; i < 4999; i += 1) c.add(i * 10, { loss: Math.sin(i) });
out.before = c.data()[0].slice(0, -1);
c.add(49990, { loss: Math.sin(4999) });
out.after = c.data()[0].slice(0, -1);
""")
    assert out["a"] == out["b"]
    assert out["a"][0][-1] == 49990 and len(out["a"][0]) == len(out["a"][1]) <= 64
    assert set(out["after"]) <= set(out["before"]) | {49980}  # the grid only ever thins


def test_non_finite_losses_are_gaps_and_counted() -> None:
    out = run_js("""
const series = new charts.RunSeries();
series.update(state(0, "nan"));  // the opened run: its loss is of no step
for (const [step, loss] of [[4, 2.3], [8, "nan"], [12, "inf"], [16, 1.9], [16, 1.9], [20, "-inf"]]) {
  series.update(state(step, loss));
}
out.data = series.loss.data();
out.count = series.nonFinite;
out.summary = series.lossSummary();
out.none = new charts.RunSeries().lossSummary();
""")
    assert out["data"] == [[4, 8, 12, 16, 20], [2.3, None, None, 1.9, None]]  # step 16 twice: one point
    assert out["count"] == 3
    assert out["summary"] == "Train loss by step: 1.9 at step 16; 3 non-finite losses (not drawn)."
    assert out["none"] == "Train loss by step: no step taken yet."


def test_metrics_appear_by_name_on_a_loss_or_percent_axis() -> None:
    out = run_js("""
const series = new charts.RunSeries();
series.update(state(0, 2.3));
const layouts = [series.layout];
series.update(state(22, 1.1, [row(22, { loss: 0.9, "metric/accuracy": 0.71 })]));
layouts.push(series.layout);
series.update(state(44, 0.8, [row(44, { loss: 0.5, "metric/accuracy": 0.88, "metric/mae": 0.4 })]));
layouts.push(series.layout);
series.update(state(66, 0.6, [row(66, { loss: "nan", "metric/accuracy": 0.93, "metric/mae": 3.5 })]));
layouts.push(series.layout);
out.layouts = layouts;
out.columns = series.metricColumns();
out.data = series.metrics.data();
out.summary = series.metricsSummary();
out.empty = new charts.RunSeries().metricsSummary();
out.regression = (() => {
  const s = new charts.RunSeries();
  s.update(state(0, 1));
  s.update(state(10, 1, [row(10, { loss: 0.3 })]));
  return s.metricColumns();
})();
""")
    assert out["layouts"] == [0, 2, 3, 4]  # loss and accuracy, then mae, then mae leaves the percent axis
    assert out["columns"] == [
        {"name": "loss", "label": "test loss", "unit": "value"},
        {"name": "metric/accuracy", "label": "test accuracy", "unit": "%"},
        {"name": "metric/mae", "label": "test mae", "unit": "value"},
    ]
    assert out["data"] == [[22, 44, 66], [0.9, 0.5, None], [0.71, 0.88, 0.93], [None, 0.4, 3.5]]
    assert out["summary"] == (
        "Held-out metrics by step: test loss 0.5 at step 44, test accuracy 93.0 % at step 66, test mae 3.5 at step 66."
    )
    assert out["empty"] == "Held-out metrics by step: none until the first epoch ends."
    assert out["regression"] == [{"name": "loss", "label": "test loss", "unit": "value"}]  # no accuracy


def test_reset_forgets_the_run_and_a_resumed_run_starts_at_its_step() -> None:
    out = run_js("""
const series = new charts.RunSeries(50);
series.update(state(0, "nan"));
for (let step = 1; step <= 500; step += 1) {
  series.update(state(step, step % 7 ? 1 / step : "nan", step % 100 ? [] : [row(step, { loss: 1 / step })]));
}
const facts = (s) => ({ points: s.loss.length, metrics: s.metrics.length, bad: s.nonFinite, origin: s.origin });
out.before = facts(series);
series.reset();
out.reset = { ...facts(series), layout: series.layout, columns: series.metricColumns() };
series.update(state(240, "nan"));  // a run resumed from step 240
series.update(state(250, 0.25));
out.resumed = { origin: series.origin, data: series.loss.data(), step: series.step };
""")
    before = out["before"]
    assert 20 <= before["points"] <= 50 and (before["metrics"], before["bad"], before["origin"]) == (5, 500 // 7, 0)
    assert out["reset"] == {"points": 0, "metrics": 0, "bad": 0, "origin": None, "layout": 0, "columns": []}
    assert out["resumed"] == {"origin": 240, "data": [[250], [0.25]], "step": 250}
