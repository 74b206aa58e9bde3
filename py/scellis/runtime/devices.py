"""Device discovery: which devices this environment can reach, named, never chosen silently.

CPython reaches WebGPU through wgpu-py (lavapipe on CI, a real GPU elsewhere); the browser
through `navigator.gpu`. Both reach the CPU path through their WebAssembly host.
"""

from __future__ import annotations

from dataclasses import dataclass

from scellis.runtime import IN_BROWSER
from scellis.runtime.device import DeviceInfo

NO_GPU = "no usable GPU found"
CPU_BANNER = f"CPU path (WebAssembly) — {NO_GPU}"
WASM32_MEMORY = 4 * 1024**3  # wasm32 linear memory ceiling: 65,536 pages of 64 KiB


@dataclass(frozen=True)
class Selection:
    """The device a run would use, and the phrase that says why (after the device's name: "CPU path
    (WebAssembly) — no usable GPU found")."""

    device: DeviceInfo
    reason: str
    cpu_fallback: bool

    def to_json(self) -> dict:
        return {"device": self.device.to_json(), "reason": self.reason, "cpu_fallback": self.cpu_fallback}


def select(devices: list[DeviceInfo]) -> Selection:
    """The one rule for which device runs when nobody chose (`scellis info` and the page both show it): a
    hardware WebGPU adapter; else the CPU path, saying why (a software adapter, a CPU rasteriser such as
    SwiftShader or llvmpipe, runs tens of times slower than the CPU path: Honest limits); a software
    adapter only where there is no CPU path."""
    gpus = [d for d in devices if d.kind == "webgpu"]
    hardware = [d for d in gpus if not d.software]
    cpus = [d for d in devices if d.kind == "cpu"]
    if hardware:
        return Selection(hardware[0], "the first hardware WebGPU adapter found", False)
    if cpus and gpus:
        why = f"{gpus[0].name} is a software adapter (a CPU rasteriser), slower here than the CPU path"
        return Selection(cpus[0], f"{why}: choose it to use it anyway", True)
    if cpus:
        return Selection(cpus[0], NO_GPU, True)
    if gpus:
        return Selection(gpus[0], "a software adapter, the only device found", False)
    raise RuntimeError("no device reachable: neither a WebGPU adapter nor the CPU path's WebAssembly host")


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
