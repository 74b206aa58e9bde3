"""Device discovery: which devices this environment can reach, named, never chosen silently.

CPython reaches WebGPU through wgpu-py (lavapipe on CI, a real GPU elsewhere); the browser
through `navigator.gpu`. Both reach the CPU path through their WebAssembly host.
"""

from __future__ import annotations

from dataclasses import dataclass

from scellis.runtime import IN_BROWSER
from scellis.runtime.device import DeviceInfo

CPU_BANNER = "CPU path (WebAssembly) — no usable GPU found"
WASM32_MEMORY = 4 * 1024**3  # wasm32 linear memory ceiling: 65,536 pages of 64 KiB


@dataclass(frozen=True)
class Selection:
    """The device a run would use, and the sentence that says why."""

    device: DeviceInfo
    reason: str
    cpu_fallback: bool

    def to_json(self) -> dict:
        return {"device": self.device.to_json(), "reason": self.reason, "cpu_fallback": self.cpu_fallback}


def select(devices: list[DeviceInfo]) -> Selection:
    """The first WebGPU adapter if any (hardware before software), else the CPU path, announced."""
    gpus = sorted((d for d in devices if d.kind == "webgpu"), key=lambda d: d.software)
    if gpus:
        soft = " (a software adapter: expect CPU-like speed)" if gpus[0].software else ""
        return Selection(gpus[0], f"WebGPU adapter found: {gpus[0].name}{soft}", False)
    cpus = [d for d in devices if d.kind == "cpu"]
    if not cpus:
        raise RuntimeError("no device reachable: neither a WebGPU adapter nor the CPU path's WebAssembly host")
    return Selection(cpus[0], CPU_BANNER, True)


def cpu_device(host: str) -> DeviceInfo:
    return DeviceInfo(
        kind="cpu",
        name="CPU path (WebAssembly)",
        host=host,
        architecture="wasm32+simd128",
        max_buffer_size=WASM32_MEMORY,
        max_storage_binding=WASM32_MEMORY,
    )


async def webgpu_devices() -> list[DeviceInfo]:
    """WebGPU adapters of this environment; empty when there is none."""
    if IN_BROWSER:
        from scellis.runtime.webgpu import browser

        return await browser.adapters()
    from scellis.runtime.webgpu import native

    return native.adapters()
