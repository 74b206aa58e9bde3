"""A program without a loss in the run panel, under Node: its results as rows (a value with its standard
error, an interval from its two ends), whether a program trains, and its charts (no train loss counted,
results by name on the value axis, never percent)."""

from __future__ import annotations

from pathlib import Path

from nodejs import run_node

SRC = (Path(__file__).resolve().parents[1] / "app" / "src").as_uri()
PRELUDE = f"""
import * as model from "{SRC}/runmodel.js";
import * as charts from "{SRC}/chartmodel.js";
const out = {{}};
"""


def test_results_pair_values_with_standard_errors_and_intervals() -> None:
    out = run_node(
        PRELUDE,
        """
out.rows = model.resultRows({
  "metric/european": 10.4331054, "metric/european_se": 0.0287083, "metric/asian": 5.8291945,
  "metric/coef_mean_radius": -4.918741, "metric/coef_mean_radius_se": 0.54234,
  "metric/coef_mean_radius_ci_low": -6.4094, "metric/coef_mean_radius_ci_high": -4.1596,
  "metric/average_radius_ci_low": 13.857, "metric/average_radius_ci_high": 14.4359, "metric/average_radius": 14.127292,
  "metric/lonely_ci_low": 1, "metric/bad": "nan",
});
""",
    )
    assert out["rows"] == [
        {"name": "european", "text": "10.433 ± 0.028708 (standard error)"},
        {"name": "asian", "text": "5.8292"},
        {"name": "coef_mean_radius", "text": "-4.9187 ± 0.54234 (standard error) interval [-6.4094, -4.1596]"},
        {"name": "average_radius", "text": "14.127 interval [13.857, 14.436]"},
        {"name": "lonely", "text": "ci_low 1"},
        {"name": "bad", "text": "nan"},
    ]


def test_a_program_trains_when_it_has_a_loss() -> None:
    out = run_node(
        PRELUDE,
        """
out.kinds = [model.trains('{"loss": "loss"}'), model.trains('{"loss": null}'), model.trains('{}'), model.trains("{")];
""",
    )
    assert out["kinds"] == [True, False, False, True]  # unreadable text: the page's default words


def test_a_simulations_charts_count_no_loss_and_draw_results_as_values() -> None:
    out = run_node(
        PRELUDE,
        """
const series = new charts.RunSeries();
const state = (step, rows = []) => ({ step, loss: "nan", trains: false, epochs_done: rows });
series.update(state(0));
series.update(state(64, [{ epoch: 1, steps: 64, train_loss: "nan", test: { "metric/se": 0.02, "metric/m": 0.98 } }]));
out.nonFinite = series.nonFinite;
out.points = series.loss.x.length;
out.columns = series.metricColumns();
out.loss = series.lossSummary();
out.metrics = series.metricsSummary();
""",
    )
    assert out["nonFinite"] == 0 and out["points"] == 0
    assert out["columns"] == [
        {"name": "metric/se", "label": "se", "unit": "value"},
        {"name": "metric/m", "label": "m", "unit": "value"},
    ]
    assert out["loss"] == "No train loss: the program has no loss, so nothing is trained."
    assert out["metrics"] == "Results by step: se 0.02 at step 64, m 0.98 at step 64."
