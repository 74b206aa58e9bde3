"""Philox throughput: uniform float32 draws per second on each device, with pure Python and numpy
(vectorised, the reference) beside them in the same run.

    .venv/bin/python bench/rng.py [--draws 4000000] [--runs 5] [--no-chromium | --gpu-only]

Each device computes the RANDOM op over `--draws` elements (one Philox4x32-10 per element) through its
compiled schedule; timing covers the run, not the read-back (wgpu-py waits for the queue on a 4-byte read).
In Chromium (WebGPU on SwiftShader, and the CPU path) the page submits `--runs` runs back to back and
reads the draws back once, so that one read-back is included. `--gpu-only` (for the lent GPU machine)
times WGSL through wgpu-py and the CPython implementations only.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import struct
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "e2e"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "py"))

from scellis.examples import random_draws
from scellis.levels import Level
from scellis.plan import lowered
from scellis.rng import philox4x32
from scellis.runtime.reference.device import ReferenceDevice
from scellis.runtime.reference.oracle import philox
from scellis.runtime.webgpu.native import WgpuDevice

ROOT = Path(__file__).resolve().parents[1]
KEY = (0x01234567, 0x89ABCDEF)


def device_rate(device: object, draws: int, runs: int, wait: object = None) -> float:
    compiled = asyncio.run(device.compile(lowered(random_draws(draws), Level.PROD)))  # type: ignore[attr-defined]
    compiled.write("rng.test", struct.pack("<2I", *KEY))
    times = []
    for _ in range(runs + 1):
        start = time.perf_counter()
        compiled.run()
        if wait is not None:
            wait()  # type: ignore[operator]
        times.append(time.perf_counter() - start)
    return draws / statistics.median(times[1:])


PAGE = """
import struct, time
from scellis.examples import random_draws
from scellis.levels import Level
from scellis.lower import lower
from scellis.runtime.webgpu.browser import BrowserWebGPU
from scellis.runtime.cpu.device import CpuDevice
from scellis.plan import planned
schedule = lower(random_draws(DRAWS), Level.PROD)
rates = {}
for label, device in (("Chromium: WebGPU (SwiftShader)", BrowserWebGPU()),
                      ("Chromium: CPU path (WebAssembly)", await CpuDevice.open())):
    compiled = await device.compile(planned(schedule))
    compiled.write("rng.test", struct.pack("<2I", *KEY))
    await compiled.step({}, ["u"])
    start = time.perf_counter()
    for _ in range(RUNS - 1):
        compiled.submit({}, [])
    await compiled.step({}, ["u"])
    rates[label] = DRAWS * RUNS / (time.perf_counter() - start)
json.dumps(rates)
"""


def chromium_rates(draws: int, runs: int) -> dict[str, float]:
    import json

    from appdriver import served_app

    with served_app(ROOT / "dist-test", webgpu=True) as app:
        code = f"import json\nDRAWS = {draws}\nRUNS = {runs}\nKEY = {KEY}\n{PAGE}"
        script = """async (code) => window.scellis.python(code, {}, "webgpu")"""
        return json.loads(app.page.evaluate(script, code))


def python_rate(draws: int) -> float:
    start = time.perf_counter()
    for i in range(draws):
        philox4x32((i, 3, 11, 0), KEY)
    return draws / (time.perf_counter() - start)


def numpy_rate(draws: int, runs: int) -> float:
    i = np.arange(draws, dtype=np.uint64)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        philox([i, np.full_like(i, 3), np.full_like(i, 11), np.zeros_like(i)], KEY)
        times.append(time.perf_counter() - start)
    return draws / statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--draws", type=int, default=4_000_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--no-chromium", action="store_true")
    parser.add_argument("--gpu-only", action="store_true", help="WGSL via wgpu-py and CPython only")
    args = parser.parse_args()
    gpu = WgpuDevice()
    tiny = gpu.device.create_buffer(size=4, usage=gpu.wgpu.BufferUsage.COPY_SRC | gpu.wgpu.BufferUsage.COPY_DST)
    rows = {
        f"WGSL via wgpu-py ({gpu.name})": device_rate(
            gpu, args.draws, args.runs, lambda: gpu.device.queue.read_buffer(tiny)
        )
    }
    if not args.gpu_only:
        from scellis.runtime.cpu.device import CpuDevice

        rows["CPU path via wasmtime (1 thread)"] = device_rate(asyncio.run(CpuDevice.open()), args.draws, args.runs)
        if not args.no_chromium:
            rows |= chromium_rates(args.draws, args.runs)
    rows |= {
        "reference device (numpy)": device_rate(ReferenceDevice(), args.draws, args.runs),
        "numpy, vectorised Philox": numpy_rate(args.draws, args.runs),
        "pure Python (scellis.rng)": python_rate(min(args.draws, 200_000)),
    }
    print(f"Philox4x32-10 uniform draws, {args.draws:,} per run, median of {args.runs}\n")
    print("| implementation | draws/s | vs pure Python |")
    print("| --- | --- | --- |")
    base = rows["pure Python (scellis.rng)"]
    for label, rate in rows.items():
        print(f"| {label} | {rate:,.0f} | {rate / base:,.1f}x |")


if __name__ == "__main__":
    main()
