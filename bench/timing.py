"""The step timing shared by the benchmarks, as Python text: the same code runs in CPython and in the
page (sent as text to Pyodide), so the two are measured alike.

`time_steps(device, program, width, level, steps)` compiles `program` for `level` on `device`, runs a
warm-up step (pipelines compiled, buffers touched), then `steps` steps submitted back to back with a
fixed random batch, ending when the last step's loss is read back. It returns wall ms per step, host ms
per step (the time Python spends in the step call itself), the kernel count and the last loss.
"""

STEP_TIMING = """
import json, struct, time, random
from scellis.session import Session
from scellis.levels import Level

async def time_steps(device, program, width, level, steps):
    session = Session(program, device, seed=1, level=level, eval_batch=8)
    kernels = len(session.plan.functions[0].schedule.kernels)
    await session.start()
    batch = session.batch
    rnd = random.Random(0)
    x = struct.pack(f"<{batch * width}f", *(rnd.random() for _ in range(batch * width)))
    y = struct.pack(f"<{batch}i", *(rnd.randrange(10) for _ in range(batch)))
    writes = {session.features: x, session.labels: y}
    await session.step.step(writes, ["loss"])
    host = 0.0
    start = time.perf_counter()
    for i in range(steps):
        t = time.perf_counter()
        pending = session.step.submit(writes, ["loss"] if i == steps - 1 else [])
        host += time.perf_counter() - t
    loss = struct.unpack("<f", (await pending)["loss"])[0]
    wall = time.perf_counter() - start
    return {"ms_per_step": wall / steps * 1000, "host_ms_per_step": host / steps * 1000,
            "kernels": kernels, "loss": loss, "notes": list(session.plan.functions[0].schedule.notes)}
"""

CPYTHON_DEVICES = """
import asyncio

def cpython_devices(gpu_only=False):
    from scellis.runtime.webgpu.native import WgpuDevice
    gpu = WgpuDevice()
    yield "CPython: WebGPU via wgpu-py (" + gpu.name + ")", gpu
    if not gpu_only:
        from scellis.runtime.cpu.device import CpuDevice
        yield "CPython: CPU path via wasmtime", asyncio.run(CpuDevice.open())
"""

PAGE_DEVICES = """
from scellis.runtime.webgpu.browser import BrowserWebGPU
from scellis.runtime.cpu.device import CpuDevice

async def page_devices():
    return [("Chromium: WebGPU (SwiftShader)", BrowserWebGPU()),
            ("Chromium: CPU path (WebAssembly)", await CpuDevice.open())]
"""

PAGE_SCRIPT = """async (code) => window.scellis.python(code, {}, "webgpu")"""
