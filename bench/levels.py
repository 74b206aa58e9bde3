"""Step time of the 784-512-512-10 MLP (batch 256, Adam) at each determinism level, on each device: the
price of debug's single matmul blocking and what fast's float16 tiles buy where the device has shader-f16.

    .venv/bin/python bench/levels.py [--steps 20] [--runs 3] [--no-chromium | --gpu-only]

Each figure is the median over `--runs` fresh sessions of ms per step (`--steps` steps back to back; see
bench/timing.py); the ratio column compares each level with prod on the same device in the same run.
Devices: WebGPU through wgpu-py (lavapipe here, or whatever Vulkan adapter the machine has), the CPU path
under wasmtime, and in Chromium WebGPU (SwiftShader) and the CPU path (left out with --no-chromium).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "e2e"), str(ROOT / "py"), str(ROOT / "bench")]

from timing import CPYTHON_DEVICES, PAGE_DEVICES, PAGE_SCRIPT, STEP_TIMING  # noqa: E402

LEVELS = """
from scellis.examples import mlp

async def _levels(device, steps, runs):
    out = {}
    for level in Level:
        program = mlp(784, [512, 512], 10, 256)
        out[level.value] = [await time_steps(device, program, 784, level, steps) for _ in range(runs)]
    return out
"""

PAGE = """
results = {}
for label, device in await page_devices():
    results[label] = await _levels(device, STEPS, RUNS)
json.dumps(results)
"""


def in_cpython(steps: int, runs: int, gpu_only: bool) -> dict:
    import asyncio

    scope: dict = {}
    exec(STEP_TIMING + LEVELS + CPYTHON_DEVICES, scope)  # the same text the page runs
    devices = list(scope["cpython_devices"](gpu_only))
    return {label: asyncio.run(scope["_levels"](device, steps, runs)) for label, device in devices}


def in_chromium(steps: int, runs: int) -> dict:
    from appdriver import served_app

    with served_app(ROOT / "dist", webgpu=True) as app:
        code = f"STEPS = {steps}\nRUNS = {runs}\n{STEP_TIMING}\n{LEVELS}\n{PAGE_DEVICES}\n{PAGE}"
        return json.loads(app.page.evaluate(PAGE_SCRIPT, code))


def table(results: dict) -> list[str]:
    lines = ["| device | level | kernels | ms/step (median) | min | max | vs prod | note |", "| --- " * 8 + "|"]
    for device, levels in results.items():
        prod = statistics.median(r["ms_per_step"] for r in levels["prod"])
        for level, runs in levels.items():
            times = [r["ms_per_step"] for r in runs]
            median = statistics.median(times)
            note = "; ".join(runs[0]["notes"])
            lines.append(
                f"| {device} | {level} | {runs[0]['kernels']} | {median:.2f} | {min(times):.2f} | {max(times):.2f} "
                f"| {median / prod:.2f}x | {note} |"
            )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--no-chromium", action="store_true", help="CPython devices only")
    parser.add_argument("--gpu-only", action="store_true", help="WebGPU through wgpu-py only (implies --no-chromium)")
    args = parser.parse_args()
    results = in_cpython(args.steps, args.runs, args.gpu_only)
    if not (args.no_chromium or args.gpu_only):
        results |= in_chromium(args.steps, args.runs)
    print(f"MLP 784-512-512-10, batch 256, Adam: {args.steps} steps back to back, median of {args.runs} runs\n")
    print("\n".join(table(results)))


if __name__ == "__main__":
    main()
