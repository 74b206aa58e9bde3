"""CPU-path kernel benchmark: float32 matmul GFLOP/s through the schedule executor under wasmtime
(one thread), next to numpy float32 (OpenBLAS, held to one thread for a like-for-like number).

    .venv/bin/python bench/kernels_cpu.py [--runs 5] [--sizes 256 512 1024]

Each size runs an IR matmul (and one with the right operand transposed, x @ w^T as a linear layer's
backward pass reads it) lowered and compiled with `compile_schedule`; a run is one `CompiledCpu.run()`,
the median of `--runs` runs is reported (after one warm-up). Target: >= 10 GFLOP/s at 512. The module
must be built (`python build.py`).
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # before numpy loads OpenBLAS

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "py"))

from scellis.ir.function import Function
from scellis.levels import Level
from scellis.ops import DType, make
from scellis.ops import defs as d
from scellis.ops.defs import Op, Role
from scellis.ops.node import input_node
from scellis.plan import lowered
from scellis.runtime.cpu.device import compile_schedule
from scellis.runtime.cpu.module import CpuPath


def median_seconds(fn: Callable[[], object], runs: int) -> float:
    fn()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def cpu_path_matmul(cpu: CpuPath, n: int, transpose_b: bool, runs: int) -> float:
    a = input_node("a", Role.DATA, DType.F32, (n, n))
    b = input_node("b", Role.DATA, DType.F32, (n, n))
    fn = Function("matmul", (a, b), (("y", make(Op.MATMUL, a, b, arg=d.MatmulArg(transpose_b=transpose_b))),))
    compiled = compile_schedule(cpu, lowered(fn, Level.PROD))
    rng = np.random.default_rng(0)
    compiled.write("a", rng.standard_normal((n, n), dtype=np.float32).tobytes())
    compiled.write("b", rng.standard_normal((n, n), dtype=np.float32).tobytes())
    return median_seconds(compiled.run, runs)


def numpy_matmul(n: int, runs: int) -> float:
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((n, n), dtype=np.float32), rng.standard_normal((n, n), dtype=np.float32)
    return median_seconds(lambda: a @ b, runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--sizes", type=int, nargs="+", default=[256, 512, 1024])
    args = parser.parse_args()
    cpu = asyncio.run(CpuPath.open())
    threads = os.environ["OPENBLAS_NUM_THREADS"]
    print(f"CPU path via {cpu.host}; numpy {np.__version__} with OPENBLAS_NUM_THREADS={threads}")
    print(f"median of {args.runs} runs, GFLOP/s = 2 n^3 / time\n")
    print("| n | CPU path a @ b | CPU path a @ b^T | numpy float32 | CPU path / numpy |")
    print("| ---: | ---: | ---: | ---: | ---: |")
    for n in args.sizes:
        flops = 2 * n**3
        plain = flops / cpu_path_matmul(cpu, n, False, args.runs) / 1e9
        transposed = flops / cpu_path_matmul(cpu, n, True, args.runs) / 1e9
        reference = flops / numpy_matmul(n, args.runs) / 1e9
        print(f"| {n} | {plain:.1f} | {transposed:.1f} | {reference:.1f} | {plain / reference:.2f} |")


if __name__ == "__main__":
    main()
