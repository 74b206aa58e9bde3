"""Start-up benchmark: time from navigation to "ready" and to the first steps' loss in headless Chromium,
and the size of dist/.

    .venv/bin/python bench/page_load.py [--runs 5] [--dist DIR]

Each run is a fresh browser (no HTTP cache), with WebGPU (SwiftShader) and without (CPU path).
"Ready" is the app's own mark: Pyodide loaded, the wheel installed, devices found, CPU path checked.
"First loss" then chooses level prod, presses Train on the example the page opens with and waits for the
run panel to show
a step (the first chunk of steps read back): compiling the step, evaluation and init on the device
included.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
from itertools import pairwise
from pathlib import Path

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "e2e"), str(ROOT / "py")]

from appdriver import launch, open_app  # noqa: E402

from scellis.serve import make_server  # noqa: E402


def dist_size(dist: Path) -> tuple[int, int]:
    files = [p for p in dist.rglob("*") if p.is_file()]
    return len(files), sum(p.stat().st_size for p in files)


STAGES = ["manifest", "Pyodide", "wheel", "devices + CPU check"]


Run = tuple[float, float, list[float], float]


def measure(runs: int, base_url: str) -> dict[str, list[Run]]:
    """Per run: wall seconds to ready seen by the driver, the app's own mark, seconds per stage, and wall
    seconds from navigation to the first steps' loss."""
    results: dict[str, list[Run]] = {"webgpu": [], "cpu": []}
    with sync_playwright() as playwright:
        for _ in range(runs):
            for variant, rows in results.items():
                browser = launch(playwright, webgpu=variant == "webgpu")
                started = time.perf_counter()
                app = open_app(browser, base_url)
                wall = time.perf_counter() - started
                assert app.page.evaluate("() => document.body.dataset.state") == "ready"
                session = app.session()
                marks = [s["atMs"] / 1000 for s in session["stages"]] + [session["readyMs"] / 1000]
                app.page.select_option("#train-level", "prod")  # the page asks for a level before it trains
                app.page.click("#train-button")
                app.page.wait_for_function("() => Number(document.getElementById('run').dataset.step || 0) >= 1")
                first = time.perf_counter() - started
                rows.append((wall, marks[-1], [b - a for a, b in pairwise(marks)], first))
                browser.close()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--dist", default=str(ROOT / "dist"), help="the build to serve (default: dist/)")
    args = parser.parse_args()
    dist = Path(args.dist)
    httpd = make_server(dist, port=0, quiet=True)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    results = measure(args.runs, f"http://127.0.0.1:{httpd.server_address[1]}/")
    httpd.shutdown()
    count, size = dist_size(dist)
    print(f"page load to ready, headless Chromium, {args.runs} runs each (seconds)\n")
    head = "| device | median (navigation → ready) | min | max | median (app's own mark) | "
    print(head + " | ".join(STAGES) + " | median (navigation → first loss) |")
    print("| --- " * (6 + len(STAGES)) + "|")
    for variant, rows in results.items():
        walls = [r[0] for r in rows]
        marks = [r[1] for r in rows]
        stages = [statistics.median(r[2][i] for r in rows) for i in range(len(STAGES))]
        first = statistics.median(r[3] for r in rows)
        print(
            f"| {variant} | {statistics.median(walls):.2f} | {min(walls):.2f} | {max(walls):.2f} "
            f"| {statistics.median(marks):.2f} | " + " | ".join(f"{s:.2f}" for s in stages) + f" | {first:.2f} |"
        )
    print(f"\ndist/: {count} files, {size / 2**20:.2f} MiB")


if __name__ == "__main__":
    main()
