"""The app's responsiveness in headless Chromium: time from navigation to "ready" on a cold start (fresh
browser) and a warm one (a reload: HTTP cache and the service worker's copy), and, while the digits MLP
trains in the run panel, the page's main thread: the longest task it ran (the Long Tasks API reports
every task over 50 ms), how many such tasks there were, and how often the panel drew a new state next to
the steps/s the run reached.

    .venv/bin/python bench/responsiveness.py [--runs 3] [--epochs 20]

The engine runs in a Web Worker, so the main thread only draws; the target is a longest task of at most
50 ms during a run. Each row is the median of `--runs` runs, WebGPU (SwiftShader) and the CPU path.
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

from appdriver import launch, open_app, wait_ready  # noqa: E402

from scellis.serve import make_server  # noqa: E402

WATCH = """() => {
    window.benchTasks = [];
    window.benchDraws = 0;
    new PerformanceObserver((list) => {
      for (const entry of list.getEntries()) window.benchTasks.push(entry.duration);
    }).observe({ type: "longtask" });
    new MutationObserver(() => { window.benchDraws += 1; })
      .observe(document.getElementById("run-figures"), { childList: true, characterData: true, subtree: true });
}"""


def run_once(page: Page, epochs: int) -> dict[str, float]:
    """Watched from the click on Train to the run's end (choosing the level before it plans the program and
    draws its Guide, which is not the run)."""
    page.select_option("#train-level", "prod")
    page.fill("#train-epochs", str(epochs))
    page.wait_for_selector("#plan[data-state=shown]", timeout=300_000)
    page.wait_for_function("() => document.getElementById('guide').getAttribute('aria-busy') === 'false'")
    page.evaluate(WATCH)
    page.evaluate("() => { window.benchStart = performance.now(); }")
    page.click("#train-button")
    page.wait_for_selector("#run[data-phase=done]", timeout=900_000)
    out = page.evaluate(
        """() => ({ tasks: window.benchTasks, draws: window.benchDraws,
        seconds: (performance.now() - window.benchStart) / 1000,
        figures: document.getElementById('run-figures').textContent })"""
    )
    rate = float(out["figures"].split(" · ")[2].split(" ")[0])
    return {
        "longest_ms": max(out["tasks"], default=0.0),
        "long_tasks": len(out["tasks"]),
        "draws_per_s": out["draws"] / out["seconds"],
        "steps_per_s": rate,
    }


def measure(base_url: str, runs: int, epochs: int) -> dict[str, list[dict[str, float]]]:
    results: dict[str, list[dict[str, float]]] = {"webgpu": [], "cpu": []}
    with sync_playwright() as playwright:
        for _ in range(runs):
            for variant, rows in results.items():
                browser = launch(playwright, webgpu=variant == "webgpu")
                app = open_app(browser, base_url)
                cold = app.session()["readyMs"] / 1000
                app.page.wait_for_selector("body[data-offline=yes]", timeout=120_000)  # the service worker's copy
                app.page.reload()
                wait_ready(app.page)
                warm = app.session()["readyMs"] / 1000
                rows.append({"cold_s": cold, "warm_s": warm, **run_once(app.page, epochs)})
                browser.close()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--epochs", type=int, default=20)
    args = parser.parse_args()
    httpd = make_server(ROOT / "dist", port=0, quiet=True)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        results = measure(f"http://127.0.0.1:{httpd.server_address[1]}/", args.runs, args.epochs)
    finally:
        httpd.shutdown()
    print(f"digits MLP, prod, {args.epochs} epochs in the run panel; medians of {args.runs} runs\n")
    heads = ["device", "ready, cold s", "ready, warm s", "longest main-thread task ms", "tasks > 50 ms", "steps/s"]
    print(f"| {' | '.join(heads)} | draws/s |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for variant, rows in results.items():
        med = {key: statistics.median(row[key] for row in rows) for key in rows[0]}
        print(
            f"| {variant} | {med['cold_s']:.2f} | {med['warm_s']:.2f} | {med['longest_ms']:.0f} | "
            f"{med['long_tasks']:.0f} | {med['steps_per_s']:.1f} | {med['draws_per_s']:.1f} |"
        )


if __name__ == "__main__":
    main()
