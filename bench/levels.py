"""Step time of the 784-512-512-10 MLP (batch 256, Adam) at each determinism level, on each device: the
price of debug's single matmul blocking and what fast's float16 tiles buy where the device has shader-f16.
`--programs small,large` adds a 784-2048-2048-10 MLP at batch 1024, whose matmuls are large enough for
fast's float16 tiles (and so for its loss scaling); it is a GPU's work, far too slow for lavapipe.

    .venv/bin/python bench/levels.py [--steps 20] [--runs 3] [--no-chromium | --gpu-only] [--programs small,large]

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

# name -> (hidden widths, batch) of a 784-...-10 MLP with Adam. "small" is the benchmark the levels are
# judged by; "large" has matmuls big enough for fast's float16 tiles (a GPU's work, not lavapipe's).
PROGRAMS = {"small": ([512, 512], 256), "large": ([2048, 2048], 1024)}

LEVELS = """
from scellis.examples import mlp

async def _levels(device, steps, runs, programs):
    out = {}
    for name, (hidden, batch) in programs.items():
        label = "MLP 784-" + "-".join(map(str, hidden)) + f"-10, batch {batch}"
        for level in Level:
            program = mlp(784, hidden, 10, batch)
            out[(label, level.value)] = [await time_steps(device, program, 784, level, steps) for _ in range(runs)]
    return out
"""

PAGE = """
results = {}
for label, device in await page_devices():
    results[label] = [[k, v] for k, v in (await _levels(device, STEPS, RUNS, PROGRAMS)).items()]
json.dumps(results)
"""


def in_cpython(steps: int, runs: int, programs: dict, gpu_only: bool) -> dict:
    import asyncio

    scope: dict = {}
    exec(STEP_TIMING + LEVELS + CPYTHON_DEVICES, scope)  # the same text the page runs
    devices = list(scope["cpython_devices"](gpu_only))
    return {label: asyncio.run(scope["_levels"](device, steps, runs, programs)) for label, device in devices}


def in_chromium(steps: int, runs: int, programs: dict) -> dict:
    from appdriver import served_app

    with served_app(ROOT / "dist-test", webgpu=True) as app:
        setup = f"STEPS = {steps}\nRUNS = {runs}\nPROGRAMS = {programs!r}\n"
        code = setup + f"{STEP_TIMING}\n{LEVELS}\n{PAGE_DEVICES}\n{PAGE}"
        answer = json.loads(app.page.evaluate(PAGE_SCRIPT, code))
    return {device: {tuple(key): runs for key, runs in pairs} for device, pairs in answer.items()}


def table(results: dict) -> list[str]:
    head = "| device | program | level | kernels | ms/step (median) | min | max | vs prod | note |"
    lines = [head, "| --- " * 9 + "|"]
    for device, timed in results.items():
        for (program, level), runs in timed.items():
            prod = statistics.median(r["ms_per_step"] for r in timed[(program, "prod")])
            times = [r["ms_per_step"] for r in runs]
            median = statistics.median(times)
            lines.append(
                f"| {device} | {program} | {level} | {runs[0]['kernels']} | {median:.2f} | {min(times):.2f} "
                f"| {max(times):.2f} | {median / prod:.2f}x | {'; '.join(runs[0]['notes'])} |"
            )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--no-chromium", action="store_true", help="CPython devices only")
    parser.add_argument("--gpu-only", action="store_true", help="WebGPU through wgpu-py only (implies --no-chromium)")
    parser.add_argument("--programs", default="small", help=f"comma-separated, of {', '.join(PROGRAMS)}")
    args = parser.parse_args()
    programs = {name: PROGRAMS[name] for name in args.programs.split(",")}
    results = in_cpython(args.steps, args.runs, programs, args.gpu_only)
    if not (args.no_chromium or args.gpu_only):
        results |= in_chromium(args.steps, args.runs, programs)
    print(f"Adam steps, {args.steps} back to back, median of {args.runs} runs\n")
    print("\n".join(table(results)))


if __name__ == "__main__":
    main()
