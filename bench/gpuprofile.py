"""Where a compiled WebGPU function's time goes (wgpu-py): the whole function replayed back to back, and each
of its kernels dispatched alone, for the benchmarks' --profile.

`replayed_ms(gpu, run, repeat)`: ms per call of `run` (one submission), `repeat` calls back to back, the
queue drained before and after. `kernel_times(gpu, compiled, kernels, repeat)`: per kernel of `compiled`
(a native CompiledStep) its ms dispatched alone `repeat` times in one queue, its variant and a label (the
plan's label, variant, output shape, workgroups), slowest first. `part_ms(gpu, compiled, keep, repeat)`:
ms of one pass of only the kernels `keep(i)` admits, replayed back to back; the numbers computed are not
the function's, only the time is meant. `show(part, times, top)`: the kernel times as lines.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

_DRAINS: dict[int, Any] = {}  # per device, a 4-byte buffer whose read-back waits for the queue


def replayed_ms(gpu: Any, run: Callable[[], None], repeat: int = 10) -> float:
    dev = gpu.device
    if id(dev) not in _DRAINS:
        usage = gpu.wgpu.BufferUsage.COPY_SRC | gpu.wgpu.BufferUsage.COPY_DST
        _DRAINS[id(dev)] = dev.create_buffer(size=4, usage=usage)
    tiny = _DRAINS[id(dev)]
    run()
    dev.queue.read_buffer(tiny)
    begin = time.perf_counter()
    for _ in range(repeat):
        run()
    dev.queue.read_buffer(tiny)  # waits for the queue
    return (time.perf_counter() - begin) / repeat * 1000


def kernel_times(gpu: Any, compiled: Any, kernels: Sequence[Any], repeat: int = 10) -> list[dict[str, Any]]:
    dev = gpu.device

    def alone(pipeline: Any, bind: Any, groups: list[int]) -> Callable[[], None]:
        def run() -> None:
            encoder = dev.create_command_encoder()
            compute = encoder.begin_compute_pass()
            compute.set_pipeline(pipeline)
            compute.set_bind_group(0, bind)
            compute.dispatch_workgroups(*groups)
            compute.end()
            dev.queue.submit([encoder.finish()])

        return run

    times = []
    for i, (pipeline, bind, groups) in enumerate(compiled.steps):
        kernel = kernels[i]
        label = compiled.plan["kernels"][i]["label"]
        text = f"{label} [{kernel.variant}] out {list(kernel.out.shape)} workgroups {list(groups)}"
        ms = replayed_ms(gpu, alone(pipeline, bind, groups), repeat)
        times.append({"ms": ms, "variant": kernel.variant, "kernel": text})
    times.sort(key=lambda t: -t["ms"])
    return times


def part_ms(gpu: Any, compiled: Any, keep: Callable[[int], bool], repeat: int = 10) -> float:
    dev = gpu.device
    chosen = [step for i, step in enumerate(compiled.steps) if keep(i)]

    def run() -> None:
        encoder = dev.create_command_encoder()
        compute = encoder.begin_compute_pass()
        for pipeline, bind, groups in chosen:
            compute.set_pipeline(pipeline)
            compute.set_bind_group(0, bind)
            compute.dispatch_workgroups(*groups)
        compute.end()
        dev.queue.submit([encoder.finish()])

    return replayed_ms(gpu, run, repeat)


def show(part: str, times: list[dict[str, Any]], top: int) -> list[str]:
    total = sum(t["ms"] for t in times)
    lines = [f"  {part}: {len(times)} kernels, {total:.3f} ms dispatched one at a time; the slowest:"]
    lines += [f"  {t['ms']:10.3f} ms {100 * t['ms'] / total:5.1f} %  {t['kernel']}" for t in times[:top]]
    return lines
