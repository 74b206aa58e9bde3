"""The WebGPU adapters and device under CPython, through wgpu-py: the same WGSL the browser runs, on
lavapipe in CI or a real GPU elsewhere. The device replays a step plan exactly as the app's JS executor
does: every dispatch and carry copy recorded into one command encoder, one submission per step."""

from __future__ import annotations

import time
from importlib.metadata import version
from typing import Any

from scellis.plan.budget import Budget, DeviceLimits, probe_search, run_search
from scellis.plan.planned import Planned
from scellis.runtime.device import DeviceInfo, borrowed, lowering_features
from scellis.runtime.index_checks import IndexChecks
from scellis.runtime.ready import HostCost, Ready, Synchronous, copy_sizes
from scellis.runtime.webgpu.wire import step_plan

# Backends wgpu can drive compute through well; GL's compute support is partial.
NATIVE_BACKENDS = ("Vulkan", "Metal", "D3D12")
LIMIT_KEYS = ("max-buffer-size", "max-storage-buffer-binding-size", "max-storage-buffers-per-shader-stage")


def _software(info: Any) -> bool:
    """Whether an adapter (its wgpu-py info) emulates a GPU on the CPU, as lavapipe does."""
    return bool(info.get("adapter_type", "") == "CPU")


class WgpuDevice:
    """One adapter and its device; pipelines are cached by WGSL source."""

    def __init__(self, backend: str = "Vulkan") -> None:
        import wgpu

        self.wgpu = wgpu
        adapters = [a for a in wgpu.gpu.enumerate_adapters_sync() if a.info["backend_type"] == backend]
        if not adapters:
            raise RuntimeError(f"no {backend} WebGPU adapter (lavapipe comes with mesa-vulkan-drivers)")
        self.adapter = adapters[0]
        # the optional features the fast level can use, enabled when the adapter has them
        enabled = sorted(f for f in ("shader-f16",) if f in self.adapter.features)
        # the adapter's largest buffers and most bindings, not WebGPU's defaults (256 MiB, 128 MiB, 8)
        wanted = {k: self.adapter.limits[k] for k in LIMIT_KEYS}
        self.device = self.adapter.request_device_sync(required_features=enabled, required_limits=wanted)
        self.limits = DeviceLimits(
            max_buffer_size=int(self.device.limits["max-buffer-size"]),
            max_storage_binding=int(self.device.limits["max-storage-buffer-binding-size"]),
            max_storage_buffers=int(self.device.limits["max-storage-buffers-per-shader-stage"]),
        )
        software = _software(self.adapter.info)
        self.features = lowering_features(frozenset(enabled), self.limits.max_storage_buffers, software)
        self.name = self.adapter.info["device"]
        self._pipelines: dict[str, Any] = {}
        self._probes: dict[int, bool] = {}

    def probe(self, nbytes: int) -> bool:
        """Whether `nbytes` can be allocated now, in buffers no larger than the device's largest; every
        buffer is destroyed before this returns, whatever happens. Results are kept per size."""
        if nbytes not in self._probes:
            chunk = self.limits.max_buffer_size // 4 * 4
            buffers = []
            try:
                for start in range(0, nbytes, chunk):
                    size = -(-min(chunk, nbytes - start) // 4) * 4
                    buffers.append(self.device.create_buffer(size=size, usage=self.wgpu.BufferUsage.STORAGE))
                self._probes[nbytes] = True
            except self.wgpu.GPUError:
                self._probes[nbytes] = False
            finally:
                for buffer in buffers:
                    buffer.destroy()
        return self._probes[nbytes]

    async def budget(self, need: int) -> Budget:
        """WebGPU does not say how much memory its device has: the allocation probe measures around
        `need` (plan.budget.probe_search)."""
        return run_search(probe_search(need), self.probe)

    def pipeline(self, source: str, label: str) -> Any:
        if source not in self._pipelines:
            module = self.device.create_shader_module(code=source, label=label)
            self._pipelines[source] = self.device.create_compute_pipeline(
                layout="auto", compute={"module": module, "entry_point": "main"}, label=label
            )
        return self._pipelines[source]

    async def compile(self, planned: Planned, host: CompiledWgpu | None = None) -> CompiledWgpu:
        compiled = CompiledWgpu(self, step_plan(planned), borrowed(planned, host), host)
        compiled.index_checks = IndexChecks(planned.schedule)
        return compiled


class CompiledWgpu(Synchronous):
    def __init__(self, device: WgpuDevice, plan: dict[str, Any], borrows: list[int], host: CompiledWgpu | None) -> None:
        wgpu, dev = device.wgpu, device.device
        self.device, self.plan, self.names = device, plan, plan["names"]
        usage = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST
        self.buffers: list[Any] = [
            dev.create_buffer(size=size, usage=usage) if b < 0 else host.buffers[b]  # type: ignore[union-attr]
            for size, b in zip(plan["buffers"], borrows, strict=True)
        ]
        owned = [buffer for buffer, b in zip(self.buffers, borrows, strict=True) if b < 0]
        self.allocated = sum(b.size for b in owned)  # what the device was asked for, by the buffers
        self.host = HostCost()
        self.steps = []
        for kernel in plan["kernels"]:
            pipeline = device.pipeline(kernel["source"], kernel["label"])
            entries = [
                {"binding": i, "resource": {"buffer": self.buffers[b]}} for i, b in enumerate(kernel["bindings"])
            ]
            bind = dev.create_bind_group(layout=pipeline.get_bind_group_layout(0), entries=entries)
            self.steps.append((pipeline, bind, kernel["workgroups"]))

    def write(self, name: str, data: bytes) -> None:
        self.device.device.queue.write_buffer(self.buffers[self.names[name]], 0, data)

    def submit(self, writes: dict[str, bytes], reads: list[str]) -> Ready[dict[str, bytes]]:
        """Write, run, and hold the reads (Synchronous.submit), timing the host's part (`host_cost`)."""
        began = time.perf_counter()
        for name, data in writes.items():
            self.write(name, data)
        self.run()
        self.host.add(time.perf_counter() - began)
        return Ready(self._read_checked(reads))

    def host_cost(self) -> dict[str, float] | None:
        """ms per step the host spent writing the inputs, recording every dispatch and submitting, and µs
        per dispatch; None before a step (the page's executor.js measures its own alike)."""
        return self.host.cost(len(self.steps))

    def read(self, name: str) -> bytes:
        return bytes(self.device.device.queue.read_buffer(self.buffers[self.names[name]]))

    def sizes(self) -> dict[str, int]:
        return {name: self.buffers[b].size for name, b in self.names.items()}

    def copy_into(self, other: CompiledWgpu, names: list[str]) -> None:
        """One submission of buffer-to-buffer copies (runtime.device.CompiledStep.copy_into)."""
        if other.device is not self.device:
            raise ValueError("copy_into needs both steps compiled by one device")
        encoder = self.device.device.create_command_encoder()
        for name, size in copy_sizes(names, self.sizes(), other.sizes()):
            source, target = self.buffers[self.names[name]], other.buffers[other.names[name]]
            if source is not target:  # a buffer `other` borrows from this step is already the same bytes
                encoder.copy_buffer_to_buffer(source, 0, target, 0, size)
        self.device.device.queue.submit([encoder.finish()])

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
        for src, dst, size in self.plan["carry"]:
            encoder.copy_buffer_to_buffer(self.buffers[src], 0, self.buffers[dst], 0, size)
        dev.queue.submit([encoder.finish()])


def adapters() -> list[DeviceInfo]:
    """Every adapter wgpu-py enumerates, native backends first (none without wgpu-py)."""
    try:
        import wgpu
    except ImportError:
        return []
    found = []
    for adapter in wgpu.gpu.enumerate_adapters_sync():
        info, limits = adapter.info, adapter.limits
        backend = info.get("backend_type", "")
        enabled = frozenset(f for f in adapter.features if f == "shader-f16")
        bindings = int(limits["max-storage-buffers-per-shader-stage"])
        software = _software(info)
        found.append(
            DeviceInfo(
                kind="webgpu",
                name=info.get("device") or info.get("description") or "unnamed adapter",
                host=f"wgpu-py {version('wgpu')} ({backend})",
                vendor=info.get("vendor", ""),
                architecture=info.get("architecture", ""),
                software=software,
                max_buffer_size=int(limits["max-buffer-size"]),
                max_storage_binding=int(limits["max-storage-buffer-binding-size"]),
                features=tuple(sorted(lowering_features(enabled, bindings, software))),
            )
        )
    return sorted(found, key=lambda d: not d.host.endswith(tuple(f"({b})" for b in NATIVE_BACKENDS)))
