"""Training-step benchmark: ms per step and host time per step, for the digits MLP (64-128-10, batch
64), the digits CNN (batch 64) and a 784-512-512-10 MLP (batch 256), on each device, in CPython and
in Chromium.

    .venv/bin/python bench/step.py [--steps 30]

The same Python code runs in both environments (sent to the page as text). "ms/step" is wall time
over `--steps` steps submitted back to back, ending when the last step's loss is read back; "host
ms/step" is the time Python spends in the step call itself (writing the batch, the one device call,
recording and submitting the kernels), which is what the device waits on when the host is the bottleneck.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "e2e"), str(ROOT / "py"), str(ROOT / "bench")]

from appdriver import served_app  # noqa: E402
from timing import CPYTHON_DEVICES, PAGE_DEVICES, PAGE_SCRIPT, STEP_TIMING  # noqa: E402

PROGRAMS = """
from scellis.examples import digits_cnn, digits_mlp, mlp

async def _bench(device, steps):
    out = {}
    for name, program, width in (("digits MLP 64-128-10, batch 64", digits_mlp(), 64),
                                  ("digits CNN (2 conv blocks), batch 64", digits_cnn(), 64),
                                  ("MLP 784-512-512-10, batch 256", mlp(784, [512, 512], 10, 256), 784)):
        out[name] = await time_steps(device, program, width, Level.PROD, steps)
    return out
"""

PAGE = """
results = {}
for label, device in await page_devices():
    results[label] = await _bench(device, STEPS)
json.dumps(results)
"""


def in_cpython(steps: int) -> dict:
    import asyncio

    scope: dict = {}
    exec(STEP_TIMING + PROGRAMS + CPYTHON_DEVICES, scope)  # the same text the page runs
    return {label: asyncio.run(scope["_bench"](device, steps)) for label, device in scope["cpython_devices"]()}


def in_chromium(steps: int) -> dict:
    with served_app(ROOT / "dist-test", webgpu=True) as app:
        code = f"STEPS = {steps}\n{STEP_TIMING}\n{PROGRAMS}\n{PAGE_DEVICES}\n{PAGE}"
        result = app.page.evaluate(PAGE_SCRIPT, code)
    return json.loads(result)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=30)
    args = parser.parse_args()
    results = {**in_cpython(args.steps), **in_chromium(args.steps)}
    print(f"training step, {args.steps} steps back to back\n")
    print("| device | program | kernels | ms/step | host ms/step |")
    print("| --- | --- | --- | --- | --- |")
    for device, programs in results.items():
        for program, r in programs.items():
            print(f"| {device} | {program} | {r['kernels']} | {r['ms_per_step']:.2f} | {r['host_ms_per_step']:.3f} |")


if __name__ == "__main__":
    main()
