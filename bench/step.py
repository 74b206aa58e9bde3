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
sys.path[:0] = [str(ROOT / "e2e"), str(ROOT / "py")]

from appdriver import served_app  # noqa: E402

TIMING = """
import json, struct, time, random
from scellis.datasets import Split
from scellis.examples import digits_cnn, digits_mlp, mlp
from scellis.session import Session
from scellis.levels import Level

async def _bench(device, steps):
    out = {}
    for name, program, width in (("digits MLP 64-128-10, batch 64", digits_mlp(), 64),
                                  ("digits CNN (2 conv blocks), batch 64", digits_cnn(), 64),
                                  ("MLP 784-512-512-10, batch 256", mlp(784, [512, 512], 10, 256), 784)):
        session = Session(program, device, seed=1, level=Level.PROD, eval_batch=8)
        kernels = len(session.schedule.kernels)
        await session.start()
        batch = session.batch
        rnd = random.Random(0)
        x = struct.pack(f"<{batch * width}f", *(rnd.random() for _ in range(batch * width)))
        y = struct.pack(f"<{batch}i", *(rnd.randrange(10) for _ in range(batch)))
        writes = {session.features: x, session.labels: y}
        await session.step.step(writes, ["loss"])  # warm-up: pipelines compiled, buffers touched
        host = 0.0
        start = time.perf_counter()
        for i in range(steps):
            t = time.perf_counter()
            pending = session.step.submit(writes, ["loss"] if i == steps - 1 else [])
            host += time.perf_counter() - t
        loss = struct.unpack("<f", (await pending)["loss"])[0]
        wall = time.perf_counter() - start
        out[name] = {"ms_per_step": wall / steps * 1000, "host_ms_per_step": host / steps * 1000,
                     "kernels": kernels, "loss": loss}
    return out
"""

CPYTHON_DEVICES = """
import asyncio

def _devices():
    from scellis.runtime.cpu_device import CpuDevice
    from scellis.runtime.wgpu_native import WgpuDevice
    gpu = WgpuDevice()
    yield "CPython: WebGPU via wgpu-py (" + gpu.name + ")", gpu
    yield "CPython: CPU path via wasmtime", asyncio.run(CpuDevice.open())
"""

PAGE = """
from scellis.runtime.browser_webgpu import BrowserWebGPU
from scellis.runtime.cpu_device import CpuDevice
json.dumps({"Chromium: WebGPU (SwiftShader)": await _bench(BrowserWebGPU(), STEPS),
            "Chromium: CPU path (WebAssembly)": await _bench(await CpuDevice.open(), STEPS)})
"""


def in_cpython(steps: int) -> dict:
    import asyncio

    scope: dict = {}
    exec(TIMING + CPYTHON_DEVICES, scope)  # the same text the page runs
    return {label: asyncio.run(scope["_bench"](device, steps)) for label, device in scope["_devices"]()}


def in_chromium(steps: int) -> dict:
    with served_app(ROOT / "dist", webgpu=True) as app:
        code = f"STEPS = {steps}\n{TIMING}\n{PAGE}"
        script = """async (code) => {
            await window.scellis.prepareDevice("webgpu");
            return window.scellis.pyodide.runPythonAsync(code);
        }"""
        result = app.page.evaluate(script, code)
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
