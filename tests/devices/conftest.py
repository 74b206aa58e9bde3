"""Device fixtures. Each device the test command installs must be present: a missing
lavapipe or wasmtime fails these tests instead of skipping them."""

from __future__ import annotations

import asyncio

import pytest
import wgpu

from scellis.assets import read_asset
from scellis.runtime.cpu.module import CpuPath


@pytest.fixture(scope="session")
def cpu() -> CpuPath:
    return asyncio.run(CpuPath.open())


class WgslRunner:
    """Just enough WebGPU to run one WGSL kernel on lavapipe (the engine's executor comes later)."""

    def __init__(self) -> None:
        adapters = [a for a in wgpu.gpu.enumerate_adapters_sync() if a.info["backend_type"] == "Vulkan"]
        assert adapters, "no Vulkan adapter: lavapipe (mesa-vulkan-drivers) is required for device tests"
        self.adapter = adapters[0]
        self.device = self.adapter.request_device_sync()

    def elementwise(self, wgsl_name: str, inputs: list[bytes], out_bytes: int) -> bytes:
        dev = self.device
        module = dev.create_shader_module(code=read_asset(wgsl_name).decode())
        pipeline = dev.create_compute_pipeline(layout="auto", compute={"module": module, "entry_point": "main"})
        usage = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST
        buffers = [dev.create_buffer_with_data(data=data, usage=usage) for data in inputs]
        buffers.append(dev.create_buffer(size=out_bytes, usage=usage))
        bind = dev.create_bind_group(
            layout=pipeline.get_bind_group_layout(0),
            entries=[{"binding": i, "resource": {"buffer": b}} for i, b in enumerate(buffers)],
        )
        groups = -(-out_bytes // 4 // 256)
        encoder = dev.create_command_encoder()
        compute = encoder.begin_compute_pass()
        compute.set_pipeline(pipeline)
        compute.set_bind_group(0, bind)
        compute.dispatch_workgroups(min(groups, 65535), -(-groups // 65535), 1)
        compute.end()
        dev.queue.submit([encoder.finish()])
        return bytes(dev.queue.read_buffer(buffers[-1]))


@pytest.fixture(scope="session")
def wgsl() -> WgslRunner:
    return WgslRunner()
