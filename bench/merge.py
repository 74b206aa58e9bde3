"""What merging kernels buys (lower.merge: producers computed inside their consumers, updates inside their
gradients' kernels, independent kernels side by side; lower.series: small kernels run as one dispatch):
kernels per training step and ms per step, merged and apart, for the digits MLP (batch 64), the digits CNN
(batch 64) and the 784-512-512-10 MLP (batch 256), at prod, in CPython.

    .venv/bin/python bench/merge.py [--steps 50] [--rounds 5] [--gpu-only] [--json FILE]

"apart" lowers with lower.merge and lower.series switched off (every kernel as the lowering made it);
"no series" with lower.series alone off. Each round times every program all three ways on every device, one
after the other, so machine noise falls on each alike; the table gives the median of the rounds and
merged / apart. Devices: WebGPU through wgpu-py (lavapipe here, or the machine's Vulkan adapter) and the CPU
path under wasmtime (left out with --gpu-only).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "py"), str(ROOT / "bench")]

from timing import CPYTHON_DEVICES, STEP_TIMING  # noqa: E402

from scellis.examples import digits_cnn, digits_mlp, mlp  # noqa: E402
from scellis.lower import schedule  # noqa: E402

PROGRAMS = {
    "digits MLP 64-128-10, batch 64": (digits_mlp, 64),
    "digits CNN, batch 64": (digits_cnn, 64),
    "MLP 784-512-512-10, batch 256": (lambda: mlp(784, [512, 512], 10, 256), 784),
}


def measure(steps: int, rounds: int, gpu_only: bool) -> dict[tuple[str, str, str], list[dict[str, Any]]]:
    scope: dict[str, Any] = {}
    exec(STEP_TIMING + CPYTHON_DEVICES, scope)  # the timing every step benchmark shares
    devices = list(scope["cpython_devices"](gpu_only))
    merged, joined = schedule.merged, schedule.joined
    alone = lambda kernels, *_: tuple(kernels)  # noqa: E731 - stands in for either stage
    out: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for _ in range(rounds):
        for device_name, device in devices:
            for name, (build, width) in PROGRAMS.items():
                for way in ("merged", "no series", "apart"):
                    schedule.merged = merged if way != "apart" else alone  # type: ignore[assignment]
                    schedule.joined = joined if way == "merged" else alone  # type: ignore[assignment]
                    level = scope["Level"].PROD
                    timed = asyncio.run(scope["time_steps"](device, build(), width, level, steps))
                    out.setdefault((device_name, name, way), []).append(timed)
    schedule.merged, schedule.joined = merged, joined  # type: ignore[assignment]
    return out


def table(results: dict[tuple[str, str, str], list[dict[str, Any]]]) -> list[str]:
    head = "| device | program | kernels merged / no series / apart | ms/step merged | no series | apart |"
    lines = [head + " merged / apart |", "| --- | --- | ---: | ---: | ---: | ---: | ---: |"]
    for device, name, way in results:
        if way != "merged":
            continue
        runs = [results[(device, name, w)] for w in ("merged", "no series", "apart")]
        m, n, a = (statistics.median(r["ms_per_step"] for r in timed) for timed in runs)
        kernels = " / ".join(str(timed[0]["kernels"]) for timed in runs)
        lines.append(f"| {device} | {name} | {kernels} | {m:.3f} | {n:.3f} | {a:.3f} | {m / a:.2f} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--gpu-only", action="store_true")
    parser.add_argument("--json", default=None, help="also write the raw timings here")
    args = parser.parse_args()
    results = measure(args.steps, args.rounds, args.gpu_only)
    print("\n".join(table(results)))
    if args.json:
        raw = {" / ".join(key): value for key, value in results.items()}
        Path(args.json).write_text(json.dumps(raw, indent=1))


if __name__ == "__main__":
    main()
