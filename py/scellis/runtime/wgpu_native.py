"""The WebGPU device under CPython, through wgpu-py: the same WGSL the browser runs, on lavapipe in CI
or a real GPU elsewhere. A compiled schedule owns its buffers, pipelines and bind groups; a run
records every dispatch and carry copy into one command encoder and submits it once."""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from scellis.codegen import render
from scellis.lower.kernels import Schedule
from scellis.ops import DType


@dataclass
class WgpuDevice:
    """One adapter and its device; pipelines are cached by WGSL source."""

    backend: str = "Vulkan"
    _pipelines: dict[str, object] = field(default_factory=dict)

    def __post_init__(self) -> None:
        import wgpu

        self.wgpu = wgpu
        adapters = [a for a in wgpu.gpu.enumerate_adapters_sync() if a.info["backend_type"] == self.backend]
        if not adapters:
            raise RuntimeError(f"no {self.backend} WebGPU adapter (lavapipe comes with mesa-vulkan-drivers)")
        self.adapter = adapters[0]
        self.device = self.adapter.request_device_sync(required_limits={"max-storage-buffers-per-shader-stage": 8})
        self.name = self.adapter.info["device"]

    def pipeline(self, source: str, label: str) -> object:
        if source not in self._pipelines:
            module = self.device.create_shader_module(code=source, label=label)
            self._pipelines[source] = self.device.create_compute_pipeline(
                layout="auto", compute={"module": module, "entry_point": "main"}, label=label
            )
        return self._pipelines[source]

    def compile(self, schedule: Schedule) -> CompiledWgpu:
        return CompiledWgpu(self, schedule)


class CompiledWgpu:
    def __init__(self, device: WgpuDevice, schedule: Schedule) -> None:
        wgpu, dev = device.wgpu, device.device
        self.device = device
        self.schedule = schedule
        usage = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST
        self.buffers = [dev.create_buffer(size=b.nbytes, usage=usage) for b in schedule.buffers]
        for buffer_id, value in schedule.consts:
            dtype = schedule.buffer(buffer_id).dtype
            fmt = "<f" if dtype is DType.F32 else "<i" if dtype is DType.I32 else "<I"
            dev.queue.write_buffer(
                self.buffers[buffer_id], 0, struct.pack(fmt, value if dtype is DType.F32 else int(value))
            )
        self.steps = []
        for kernel in schedule.kernels:
            wk = render(kernel, schedule)
            pipeline = device.pipeline(wk.source, wk.label)
            bind = dev.create_bind_group(
                layout=pipeline.get_bind_group_layout(0),  # type: ignore[attr-defined]
                entries=[{"binding": i, "resource": {"buffer": self.buffers[b]}} for i, b in enumerate(wk.bindings)],
            )
            self.steps.append((pipeline, bind, wk.workgroups))
        self.names = dict((*schedule.inputs, *schedule.outputs))

    def write(self, name: str, data: bytes) -> None:
        self.device.device.queue.write_buffer(self.buffers[self.names[name]], 0, data)

    def read(self, name: str) -> bytes:
        buffer = self.schedule.buffer(self.names[name])
        return bytes(self.device.device.queue.read_buffer(self.buffers[buffer.id]))[: buffer.size * 4]

    def run(self) -> None:
        """One submission: every kernel in order, then the carry copies."""
        dev = self.device.device
        encoder = dev.create_command_encoder()
        compute = encoder.begin_compute_pass()
        for pipeline, bind, groups in self.steps:
            compute.set_pipeline(pipeline)
            compute.set_bind_group(0, bind)
            compute.dispatch_workgroups(*groups)
        compute.end()
        for copy in self.schedule.carry:
            size = self.schedule.buffer(copy.src).nbytes
            encoder.copy_buffer_to_buffer(self.buffers[copy.src], 0, self.buffers[copy.dst], 0, size)
        dev.queue.submit([encoder.finish()])
