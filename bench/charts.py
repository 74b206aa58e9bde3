"""The run panel's live charts under load in headless Chromium: the built page's chart code (charts.js, as
window.scellis.charts) is given a run with a long history already fed (`--history` steps, an epoch every
100), then fed synthetic run states, one per step, at 100 and at 1,000 steps/s for `--seconds` (and, as a
baseline, nothing), while the main thread is watched: its longest task (the Long Tasks API reports every
task over 50 ms), the interval between animation frames (median and 95th percentile), the charts' draws
and the points they drew per second, the ms per draw and per feeding timer tick, and how far the loss
chart's newest drawn step trails the newest step fed (95th percentile over the frames, and at the end).

    .venv/bin/python bench/charts.py [--runs 3] [--seconds 20] [--history 100000]

Each row is the median of `--runs` runs, each in a fresh browser. Targets: a longest task of at most 50 ms,
and a chart that keeps up (trailing the newest step by no more than a few frames).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
from pathlib import Path

from playwright.sync_api import Page, sync_playwright

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "e2e"), str(ROOT / "py")]

from appdriver import launch, open_app  # noqa: E402

from scellis.serve import make_server  # noqa: E402

RATES = [0, 100, 1000]  # steps/s, a state per step; 0: the same page and watch, nothing fed (the baseline)

# Feeds a fresh RunCharts (on a copy of the run panel's chart containers) and watches the main thread.
# `draw` and `setData` are wrapped on the instance only, to time the draws and count the points drawn (uPlot
# paints in a microtask that setData queues: a draw's time is taken in one queued after it).
FEED = """async ({ rate, seconds, history }) => {
  document.getElementById("run").hidden = false;
  document.querySelector(".bench-charts")?.remove();
  const panel = document.getElementById("run-charts");
  const root = panel.cloneNode(true);
  root.removeAttribute("id");
  root.classList.add("bench-charts");
  panel.after(root);
  const charts = new window.scellis.charts(root);
  const drawMs = [];
  let draws = 0, points = 0;
  const draw = charts.draw.bind(charts), setData = charts.setData.bind(charts);
  charts.draw = () => {
    const t = performance.now();
    draw();
    queueMicrotask(() => drawMs.push(performance.now() - t));
  };
  charts.setData = (name, data, count) => { draws += 1; points += data[0].length; setData(name, data, count); };
  const state = (step) => ({
    step,
    loss: step % 5000 === 4999 ? "nan" : 2.3 / Math.sqrt(1 + step / 50) + 0.05 * Math.sin(step),
    epochs_done: step % 100 ? [] : [{ steps: step, test: { loss: 2 / Math.sqrt(1 + step / 60),
      "metric/accuracy": 1 - 0.9 / Math.sqrt(1 + step / 80) } }],
  });
  charts.start();
  let t = performance.now();
  for (let step = 0; step <= history; step += 1) charts.feed(state(step));
  const historyMs = performance.now() - t;
  charts.finish();
  await new Promise((resolve) => setTimeout(resolve, 500)); // the history's task ends before the watch starts
  const box = root.querySelector("[data-chart=loss]");
  const drawn = () => Number(box.dataset.step);
  const tasks = [];
  const observer = new PerformanceObserver((list) => { for (const e of list.getEntries()) tasks.push(e.duration); });
  observer.observe({ type: "longtask" });
  draws = 0;
  points = 0;
  drawMs.length = 0;
  const begin = performance.now();
  let fed = history;
  const feedMs = [];
  const feeder = setInterval(() => {
    const t = performance.now();
    const due = history + Math.floor(((t - begin) / 1000) * rate);
    while (fed < due) charts.feed(state(++fed));
    feedMs.push(performance.now() - t);
  }, 10);
  const frames = [], lags = [];
  await new Promise((resolve) => {
    let last = null;
    const frame = (now) => {
      if (last !== null) frames.push(now - last);
      last = now;
      lags.push(fed - drawn());
      if (now - begin < seconds * 1000) requestAnimationFrame(frame);
      else resolve();
    };
    requestAnimationFrame(frame);
  });
  clearInterval(feeder);
  const elapsed = (performance.now() - begin) / 1000;
  const endLag = fed - drawn();
  await new Promise((resolve) => setTimeout(resolve, 200)); // long-task entries arrive after their task
  tasks.push(...observer.takeRecords().map((e) => e.duration));
  observer.disconnect();
  return { historyMs, tasks, frames, lags, endLag, drawMs, feedMs, draws, points, elapsed, fed: fed - history,
    kept: Number(box.dataset.points) };
}"""


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(int(q * len(ordered)), len(ordered) - 1)] if ordered else 0.0


def run_once(page: Page, rate: int, seconds: float, history: int) -> dict[str, float]:
    out = page.evaluate(FEED, {"rate": rate, "seconds": seconds, "history": history})
    return {
        "history_ms": out["historyMs"],
        "longest_ms": max(out["tasks"], default=0.0),
        "long_tasks": len(out["tasks"]),
        "frame_median_ms": statistics.median(out["frames"]),
        "frame_p95_ms": quantile(out["frames"], 0.95),
        "fed_per_s": out["fed"] / out["elapsed"],
        "draws_per_s": out["draws"] / out["elapsed"],
        "points_per_s": out["points"] / out["elapsed"],
        "draw_p95_ms": quantile(out["drawMs"], 0.95),
        "draw_max_ms": max(out["drawMs"], default=0.0),
        "feed_max_ms": max(out["feedMs"], default=0.0),
        "lag_p95_ms": quantile(out["lags"], 0.95) / max(rate, 1) * 1000,
        "lag_end_ms": out["endLag"] / max(rate, 1) * 1000,
        "kept": out["kept"],
    }


def measure(base_url: str, runs: int, seconds: float, history: int) -> dict[int, list[dict[str, float]]]:
    results: dict[int, list[dict[str, float]]] = {rate: [] for rate in RATES}
    with sync_playwright() as playwright:
        for _ in range(runs):
            browser = launch(playwright, webgpu=False)  # the charts draw on the main thread either way
            app = open_app(browser, base_url)
            app.page.set_viewport_size({"width": 1280, "height": 1000})
            app.page.wait_for_selector("body[data-offline=yes]", timeout=120_000)  # start-up's work is over
            app.page.wait_for_selector("#train-level", timeout=120_000)  # the train card, where the panel is
            app.page.wait_for_timeout(1000)
            for rate, rows in results.items():
                rows.append(run_once(app.page, rate, seconds, history))
            assert not app.errors, app.errors
            browser.close()
    return results


COLUMNS = [
    ("steps/s fed", "fed_per_s", "{:.0f}"),
    ("history load ms", "history_ms", "{:.0f}"),
    ("longest task ms (0: none over 50)", "longest_ms", "{:.0f}"),
    ("tasks > 50 ms", "long_tasks", "{:.0f}"),
    ("frame interval median / p95 ms", ("frame_median_ms", "frame_p95_ms"), "{:.1f} / {:.1f}"),
    ("draws/s", "draws_per_s", "{:.1f}"),
    ("points drawn/s", "points_per_s", "{:.0f}"),
    ("ms per draw, p95 / max", ("draw_p95_ms", "draw_max_ms"), "{:.2f} / {:.2f}"),
    ("ms per feed tick, max", "feed_max_ms", "{:.2f}"),
    ("lag p95 / at end ms", ("lag_p95_ms", "lag_end_ms"), "{:.0f} / {:.0f}"),
    ("loss points kept", "kept", "{:.0f}"),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--history", type=int, default=100_000)
    args = parser.parse_args()
    httpd = make_server(ROOT / "dist", port=0, quiet=True)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        results = measure(f"http://127.0.0.1:{httpd.server_address[1]}/", args.runs, args.seconds, args.history)
    finally:
        httpd.shutdown()
    print(f"run panel charts, {args.history:,} steps of history, {args.seconds:g} s fed; medians of {args.runs} runs\n")
    print("| rate | " + " | ".join(head for head, _, _ in COLUMNS) + " |")
    print("| --- " * (len(COLUMNS) + 1) + "|")
    for rate, rows in results.items():
        cells = []
        for _, keys, form in COLUMNS:
            names = keys if isinstance(keys, tuple) else (keys,)
            cells.append(form.format(*(statistics.median(row[k] for row in rows) for k in names)))
        print(f"| {rate:,} steps/s | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
