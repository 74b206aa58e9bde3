"""Matmul throughput of the engine's kernels next to a peer in the same run.

    .venv/bin/python bench/kernels.py --devices webgpu,numpy --sizes 256,512,1024
    python3 bench/kernels.py --devices webgpu,torch --sizes 1024,2048,4096     (on the lent H200)

Each size is a square float32 matmul (N x N @ N x N, 2 N^3 flops). `webgpu` runs the WGSL kernel the
engine generates for prod, through wgpu-py (lavapipe here, the real GPU on the H200), and
`webgpu-debug` / `webgpu-fast` the kernels of those levels (fast: float16 tiles where the adapter
has shader-f16); `cpu` runs the CPU path's
WebAssembly kernel under wasmtime; `numpy` and `torch` (CUDA, TF32 off) are the peers. Reported:
median GFLOP/s over --runs timings, each timing `--repeat` products back to back.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "py"))

from scellis.ir import Function
from scellis.levels import Level
from scellis.lower import lower
from scellis.ops import DType, Op, make
from scellis.ops import defs as d
from scellis.ops.node import input_node
from scellis.plan import planned


def matmul_function(n: int) -> Function:
    a = input_node("a", d.Role.DATA, DType.F32, (n, n))
    b = input_node("b", d.Role.DATA, DType.F32, (n, n))
    return Function(f"matmul{n}", (a, b), (("c", make(Op.MATMUL, a, b, arg=d.MatmulArg())),))


def timed(run: Callable[[], None], sync: Callable[[], None], runs: int) -> list[float]:
    run()
    sync()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        run()
        sync()
        times.append(time.perf_counter() - start)
    return times


def webgpu(n: int, repeat: int, runs: int, level: Level = Level.PROD) -> tuple[str, list[float]]:
    from scellis.runtime.webgpu.native import WgpuDevice

    device = WgpuDevice()
    schedule = lower(matmul_function(n), level, device.features)
    compiled = asyncio.run(device.compile(planned(schedule)))
    rng = np.random.default_rng(0)
    for name in ("a", "b"):
        compiled.write(name, rng.standard_normal((n, n)).astype("<f4").tobytes())
    dev = device.device

    def run() -> None:
        encoder = dev.create_command_encoder()
        compute = encoder.begin_compute_pass()
        for _ in range(repeat):
            for pipeline, bind, groups in compiled.steps:
                compute.set_pipeline(pipeline)
                compute.set_bind_group(0, bind)
                compute.dispatch_workgroups(*groups)
        compute.end()
        dev.queue.submit([encoder.finish()])

    usage = device.wgpu.BufferUsage.COPY_SRC | device.wgpu.BufferUsage.COPY_DST
    tiny = dev.create_buffer(size=4, usage=usage)

    def sync() -> None:
        dev.queue.read_buffer(tiny)  # waits for the queue without copying the product back

    check = np.frombuffer(compiled.read("c"), "<f4")[:4]
    assert np.all(np.isfinite(check))
    variant = schedule.kernels[0].variant
    return f"WGSL {level.value} [{variant}] via wgpu-py ({device.name})", timed(run, sync, runs)


def cpu(n: int, repeat: int, runs: int) -> tuple[str, list[float]]:
    import asyncio

    from scellis.runtime.cpu.device import compile_schedule
    from scellis.runtime.cpu.module import CpuPath

    compiled = compile_schedule(asyncio.run(CpuPath.open()), lower(matmul_function(n), Level.PROD))
    rng = np.random.default_rng(0)
    for name in ("a", "b"):
        compiled.write(name, rng.standard_normal((n, n)).astype("<f4").tobytes())

    def run() -> None:
        for _ in range(repeat):
            compiled.run()

    return "CPU path (wasmtime, 1 thread)", timed(run, lambda: None, runs)


def numpy_peer(n: int, repeat: int, runs: int) -> tuple[str, list[float]]:
    rng = np.random.default_rng(0)
    a, b = (rng.standard_normal((n, n)).astype(np.float32) for _ in range(2))

    def run() -> None:
        for _ in range(repeat):
            np.matmul(a, b)

    return f"numpy {np.__version__} float32", timed(run, lambda: None, runs)


def torch_peer(n: int, repeat: int, runs: int) -> tuple[str, list[float]]:
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    a, b = (torch.randn(n, n, device="cuda", dtype=torch.float32) for _ in range(2))

    def run() -> None:
        for _ in range(repeat):
            torch.matmul(a, b)

    return f"torch {torch.__version__} float32, TF32 off ({torch.cuda.get_device_name()})", timed(
        run, torch.cuda.synchronize, runs
    )


DEVICES = {
    "webgpu": webgpu,
    "webgpu-fast": lambda n, repeat, runs: webgpu(n, repeat, runs, Level.FAST),
    "webgpu-debug": lambda n, repeat, runs: webgpu(n, repeat, runs, Level.DEBUG),
    "cpu": cpu,
    "numpy": numpy_peer,
    "torch": torch_peer,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--devices", default="webgpu,numpy")
    parser.add_argument("--sizes", default="256,512,1024")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    devices = args.devices.split(",")
    rows: dict[str, dict[int, float]] = {}
    for name in devices:
        for n in sizes:
            label, times = DEVICES[name](n, args.repeat, args.runs)
            gflops = 2 * n**3 * args.repeat / statistics.median(times) / 1e9
            rows.setdefault(label, {})[n] = gflops
            print(f"{label} N={n}: {gflops:.1f} GFLOP/s", file=sys.stderr, flush=True)
    print(f"float32 matmul, GFLOP/s, median of {args.runs} (each {args.repeat} products)\n")
    print("| device | " + " | ".join(f"N={n}" for n in sizes) + " |")
    print("| --- " * (len(sizes) + 1) + "|")
    labels = list(rows)
    for label in labels:
        print(f"| {label} | " + " | ".join(f"{rows[label][n]:.1f}" for n in sizes) + " |")
    if len(labels) > 1:
        base = labels[-1]
        for label in labels[:-1]:
            ratios = " | ".join(f"{rows[label][n] / rows[base][n]:.3f}" for n in sizes)
            print(f"| {label} / {base} | {ratios} |")


if __name__ == "__main__":
    main()
