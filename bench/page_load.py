"""Start-up benchmark: time from navigation to "ready" and to the first steps' loss in headless Chromium,
and the size of dist/.

    .venv/bin/python bench/page_load.py [--runs 5] [--dist DIR] [--again] [--spans]

Each run is a fresh browser (no HTTP cache, a first visit), with WebGPU (SwiftShader) and without (CPU
path). "Ready" is the app's own mark: Python started (from the build's snapshot), the wheel installed,
devices found, CPU path checked. "First loss" then chooses level prod, presses Train on the example the page
opens with as soon as the page lets it, and waits for the run panel to show a step (the first chunk of steps
read back): compiling the step and init on the device included. Each is reported twice: on the page's own
clock, from navigation (what a user waits), and as the driver saw it, from before it opened the browser
context (which adds the context's start and the driver's round trips). `--again` times a second visit
too, in the same browser context once the first one's offline copy is whole: what a returning user waits.

Where the time goes: the page's performance measures named "scellis:…" (app/src/timeline.js), each the
median over the runs of when it began (seconds since navigation) and how long it took: the engine's calls
(the page's own, such as the Guide and the memory plan, queue before the run's), the WebGPU device opened,
the Python phases of opening the run, WGSL generated, the pipelines made ahead and each compile's (how many
made, how many found under way or made before) and buffers, and the chunk of steps that brings the first
loss. `--spans` lists every span of the last
run as well.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
from itertools import pairwise
from pathlib import Path
from typing import Any

from playwright.sync_api import Page, sync_playwright

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "e2e"), str(ROOT / "py")]

from appdriver import launch, open_app, wait_ready  # noqa: E402

from scellis.serve import make_server  # noqa: E402


def dist_size(dist: Path) -> tuple[int, int]:
    files = [p for p in dist.rglob("*") if p.is_file()]
    return len(files), sum(p.stat().st_size for p in files)


STAGES = ["manifest", "Python", "wheel", "devices + CPU check"]


# (name, began: s since navigation, took: s, detail) of every "scellis:" measure on the page, in order
Span = tuple[str, float, float, Any]
Run = tuple[float, float, list[float], float, list[Span], float]
SPANS = """() => performance.getEntriesByType("measure").filter((m) => m.name.startsWith("scellis:"))
  .map((m) => [m.name.slice(8), m.startTime / 1000, m.duration / 1000, m.detail])"""


def first_loss(page: Page, started: float) -> tuple[float, float, float, list[float], list[Span]]:
    """On a page just ready: level prod chosen, Train pressed; the driver's wall seconds from `started` to
    ready (now) and to the first loss, the page's clock then (seconds since navigation), the marks of the
    start-up stages and ready, and the page's spans up to the first loss."""
    wall = time.perf_counter() - started
    assert page.evaluate("() => document.body.dataset.state") == "ready"
    session = page.evaluate("() => ({ stages: window.scellis.stages, readyMs: window.scellis.readyMs })")
    marks = [s["atMs"] / 1000 for s in session["stages"]] + [session["readyMs"] / 1000]
    page.select_option("#train-level", "prod")  # the page asks for a level before it trains
    pressed = page.evaluate("() => performance.now() / 1000")
    page.click("#train-button")
    page.wait_for_function("() => Number(document.getElementById('run').dataset.step || 0) >= 1")
    first = time.perf_counter() - started
    shown = page.evaluate("() => performance.now() / 1000")
    spans = [("Train pressed → first loss shown", pressed, shown - pressed, None)]
    spans += [tuple(span) for span in page.evaluate(SPANS) if span[1] < shown]
    return wall, first, shown, marks, spans


def measure(runs: int, base_url: str, again: bool) -> dict[str, list[Run]]:
    """Per run: wall seconds to ready seen by the driver, the app's own mark, seconds per stage, wall
    seconds to the first steps' loss seen by the driver, the page's spans up to then, and the page's own
    clock when it showed that loss (seconds since navigation). With `again`, each run also visits the page
    a second time in the same browser context once the first visit's offline copy is whole (the service
    worker's cache, the browser's code cache), measured the same way under the variant's name + " again"."""
    names = ["webgpu", "cpu"]
    results: dict[str, list[Run]] = {name: [] for name in names + [f"{n} again" for n in names if again]}
    with sync_playwright() as playwright:
        for _ in range(runs):
            for variant in names:
                browser = launch(playwright, webgpu=variant == "webgpu")
                started = time.perf_counter()
                app = open_app(browser, base_url)
                wall, first, shown, marks, spans = first_loss(app.page, started)
                results[variant].append((wall, marks[-1], [b - a for a, b in pairwise(marks)], first, spans, shown))
                if again:
                    app.page.wait_for_selector("body[data-offline=yes]")
                    app.page.close()
                    started = time.perf_counter()
                    page = app.context.new_page()
                    page.goto(base_url)
                    wait_ready(page)
                    wall, first, shown, marks, spans = first_loss(page, started)
                    row = (wall, marks[-1], [b - a for a, b in pairwise(marks)], first, spans, shown)
                    results[f"{variant} again"].append(row)
                browser.close()
    return results


def numbered(spans: list[Span]) -> list[Span]:
    """The spans with a repeated name numbered from its second (`call: guide #2`), so runs line up."""
    seen: dict[str, int] = {}
    out = []
    for name, began, took, detail in spans:
        seen[name] = seen.get(name, 0) + 1
        out.append((name if seen[name] == 1 else f"{name} #{seen[name]}", began, took, detail))
    return out


def made(detail: Any) -> str:
    """What a pipelines span's detail says: pipelines made (begun together: when the last was made), found
    under way, made before."""
    if not isinstance(detail, dict) or "made" not in detail:
        return ""
    last = max((p["ms"] for p in detail["made"]), default=0.0)
    made_here = f"{len(detail['made'])} made (the last after {last:.0f} ms)"
    return f"{made_here}, {detail['waited']} under way, {detail['cached']} made before"


def breakdown(rows: list[Run]) -> list[str]:
    """The medians of each span over the runs, in the order the spans began."""
    runs = [numbered(r[4]) for r in rows]
    names = list(dict.fromkeys(name for spans in runs for name, *_ in spans))
    lines = ["| span | begins (s since navigation) | takes (ms) | runs | what it did |", "| --- " * 5 + "|"]
    table = []
    for name in names:
        hits = [span for spans in runs for span in spans if span[0] == name]
        began, took = statistics.median(h[1] for h in hits), statistics.median(h[2] for h in hits)
        table.append((began, name, took, len(hits), made(hits[-1][3])))
    for began, name, took, count, what in sorted(table):
        lines.append(f"| {name} | {began:.2f} | {took * 1000:.0f} | {count} | {what} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--dist", default=str(ROOT / "dist"), help="the build to serve (default: dist/)")
    parser.add_argument("--spans", action="store_true", help="also list every span of each device's last run")
    parser.add_argument("--again", action="store_true", help="also time a second visit (offline copy, code cache)")
    args = parser.parse_args()
    dist = Path(args.dist)
    httpd = make_server(dist, port=0, quiet=True)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    results = measure(args.runs, f"http://127.0.0.1:{httpd.server_address[1]}/", args.again)
    httpd.shutdown()
    count, size = dist_size(dist)
    print(f"page load to ready, headless Chromium, {args.runs} runs each (seconds)\n")
    head = "| device | median (driver: open → ready) | min | max | median (navigation → ready, page clock) | "
    tail = " | median (driver: open → first loss) | median (navigation → first loss, page clock) |"
    print(head + " | ".join(STAGES) + tail)
    print("| --- " * (7 + len(STAGES)) + "|")
    for variant, rows in results.items():
        walls = [r[0] for r in rows]
        marks = [r[1] for r in rows]
        stages = [statistics.median(r[2][i] for r in rows) for i in range(len(STAGES))]
        first, shown = statistics.median(r[3] for r in rows), statistics.median(r[5] for r in rows)
        print(
            f"| {variant} | {statistics.median(walls):.2f} | {min(walls):.2f} | {max(walls):.2f} "
            f"| {statistics.median(marks):.2f} | "
            + " | ".join(f"{s:.2f}" for s in stages)
            + f" | {first:.2f} | {shown:.2f} |"
        )
    print(f"\ndist/: {count} files, {size / 2**20:.2f} MiB")
    for variant, rows in results.items():
        print(f"\nwhere the time to the first loss goes, {variant}: medians of {args.runs} runs\n")
        print("\n".join(breakdown(rows)))
        if args.spans:
            print(f"\nevery span of the last run, {variant}:\n")
            for name, began, took, detail in rows[-1][4]:
                print(f"  {began:7.3f} s  {took * 1000:7.1f} ms  {name}  {'' if detail is None else detail}")


if __name__ == "__main__":
    main()
