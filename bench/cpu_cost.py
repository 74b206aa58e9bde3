"""What the CPU path costs against WebGPU: training steps per second of a small and a large model on
every device this machine offers, the figures the Honest limits page (app/limits.html) quotes.

    .venv/bin/python bench/cpu_cost.py [--steps 20] [--runs 5] [--no-chromium]

Programs: the digits MLP (64-128-10, batch 64, the app's first example) and a 784-1024-1024-10 MLP
(batch 128), both with Adam at level prod. Devices: WebGPU through wgpu-py (lavapipe here, or whatever
Vulkan adapter the machine has) and the CPU path under wasmtime in CPython; in Chromium, WebGPU
(SwiftShader, a CPU rasteriser) and the page's own CPU path (left out with --no-chromium). Each figure is
the median over `--runs` fresh sessions of `--steps` steps back to back (bench/timing.py, the timing
bench/step.py and bench/levels.py use too); "vs CPU path" divides by the CPU path's steps/s in the same
environment.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "e2e"), str(ROOT / "py"), str(ROOT / "bench")]

from timing import CPYTHON_DEVICES, PAGE_DEVICES, PAGE_SCRIPT, STEP_TIMING  # noqa: E402

PROGRAMS = """
from scellis.examples import digits_mlp, mlp

SMALL = "digits MLP 64-128-10, batch 64"
LARGE = "MLP 784-1024-1024-10, batch 128"

async def _cost(device, steps, runs):
    out = {}
    for name, build, width in ((SMALL, digits_mlp, 64), (LARGE, lambda: mlp(784, [1024, 1024], 10, 128), 784)):
        out[name] = [(await time_steps(device, build(), width, Level.PROD, steps))["ms_per_step"] for _ in range(runs)]
    return out
"""

PAGE = """
results = {}
for label, device in await page_devices():
    results[label] = await _cost(device, STEPS, RUNS)
json.dumps(results)
"""


def in_cpython(steps: int, runs: int) -> dict[str, dict[str, list[float]]]:
    import asyncio

    scope: dict = {}
    exec(STEP_TIMING + PROGRAMS + CPYTHON_DEVICES, scope)  # the same text the page runs
    return {label: asyncio.run(scope["_cost"](device, steps, runs)) for label, device in scope["cpython_devices"]()}


def in_chromium(steps: int, runs: int) -> dict[str, dict[str, list[float]]]:
    from appdriver import served_app

    with served_app(ROOT / "dist-test", webgpu=True) as app:
        code = f"STEPS = {steps}\nRUNS = {runs}\n{STEP_TIMING}\n{PROGRAMS}\n{PAGE_DEVICES}\n{PAGE}"
        return json.loads(app.page.evaluate(PAGE_SCRIPT, code))


def cpu_path_of(device: str, results: dict) -> str:
    """The CPU path measured in the same environment as `device` (CPython or Chromium)."""
    where = device.partition(":")[0]
    return next(d for d in results if d.partition(":")[0] == where and "CPU path" in d)


def figure(x: float) -> str:
    """`x` to three significant digits, without an exponent (1720, 13.3, 0.516)."""
    return f"{x:.{max(0, 2 - math.floor(math.log10(x)))}f}"


def table(results: dict[str, dict[str, list[float]]]) -> list[str]:
    lines = ["| device | program | steps/s (median) | ms/step (median, min-max) | vs CPU path |", "| --- " * 5 + "|"]
    for device, programs in results.items():
        for program, times in programs.items():
            median = statistics.median(times)
            cpu = statistics.median(results[cpu_path_of(device, results)][program])
            lines.append(
                f"| {device} | {program} | {figure(1000 / median)} | {figure(median)} ({figure(min(times))}-"
                f"{figure(max(times))}) | {figure(cpu / median)}x |"
            )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--no-chromium", action="store_true", help="CPython devices only")
    args = parser.parse_args()
    results = in_cpython(args.steps, args.runs)
    if not args.no_chromium:
        results |= in_chromium(args.steps, args.runs)
    print(f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores; Adam at level prod")
    print(f"{args.steps} steps back to back, median of {args.runs} fresh sessions\n")
    print("\n".join(table(results)))


if __name__ == "__main__":
    main()
