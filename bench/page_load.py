"""Start-up benchmark: time from navigation to "ready" in headless Chromium, and the size of dist/.

    .venv/bin/python bench/page_load.py [--runs 5]

Each run is a fresh browser (no HTTP cache), with WebGPU (SwiftShader) and without (CPU path).
"Ready" is the app's own mark: Pyodide loaded, the wheel installed, devices found, CPU path checked.
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


def measure(runs: int, base_url: str) -> dict[str, list[tuple[float, float, list[float]]]]:
    """Per run: wall seconds to ready seen by the driver, the app's own mark, and seconds per stage."""
    results: dict[str, list[tuple[float, float, list[float]]]] = {"webgpu": [], "cpu": []}
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
                rows.append((wall, marks[-1], [b - a for a, b in pairwise(marks)]))
                browser.close()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    dist = ROOT / "dist"
    httpd = make_server(dist, port=0, quiet=True)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    results = measure(args.runs, f"http://127.0.0.1:{httpd.server_address[1]}/")
    httpd.shutdown()
    count, size = dist_size(dist)
    print(f"page load to ready, headless Chromium, {args.runs} runs each (seconds)\n")
    print("| device | median (navigation → ready) | min | max | median (app's own mark) | " + " | ".join(STAGES) + " |")
    print("| --- " * (5 + len(STAGES)) + "|")
    for variant, rows in results.items():
        walls = [w for w, _, _ in rows]
        marks = [m for _, m, _ in rows]
        stages = [statistics.median(r[2][i] for r in rows) for i in range(len(STAGES))]
        print(
            f"| {variant} | {statistics.median(walls):.2f} | {min(walls):.2f} | {max(walls):.2f} "
            f"| {statistics.median(marks):.2f} | " + " | ".join(f"{s:.2f}" for s in stages) + " |"
        )
    print(f"\ndist/: {count} files, {size / 2**20:.2f} MiB")


if __name__ == "__main__":
    main()
