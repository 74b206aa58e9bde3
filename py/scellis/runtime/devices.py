"""Device discovery: which devices this environment can reach, named, never chosen silently.

CPython reaches WebGPU through wgpu-py (lavapipe on CI, a real GPU elsewhere); the browser
through `navigator.gpu`. Both reach the CPU path through their WebAssembly host.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from scellis.runtime import IN_BROWSER

CPU_BANNER = "CPU path (WebAssembly) — no usable GPU found"
WASM32_MEMORY = 4 * 1024**3  # wasm32 linear memory ceiling: 65,536 pages of 64 KiB
# Backends wgpu can drive compute through well; GL's compute support is partial.
NATIVE_BACKENDS = ("Vulkan", "Metal", "D3D12")


@dataclass(frozen=True)
class DeviceInfo:
    """One reachable device, as shown to users and recorded with every run."""

    kind: str  # "webgpu" or "cpu"
    name: str
    host: str  # what reaches it: "wgpu-py 0.32.0 (Vulkan)", "Chromium WebGPU", "wasmtime 50.0.1"...
    vendor: str = ""
    architecture: str = ""
    software: bool = False  # a software rasteriser or fallback adapter, not a GPU
    max_buffer_size: int = 0
    max_storage_binding: int = 0
    features: tuple[str, ...] = field(default_factory=tuple)

    def to_json(self) -> dict:
        data = asdict(self)
        data["features"] = list(self.features)
        return data

    def describe(self) -> str:
        """One line for logs, the CLI and run records."""
        if self.kind == "cpu":
            return f"CPU path (WebAssembly) via {self.host}; memory ceiling {_size(self.max_buffer_size)}"
        parts = [p for p in (self.vendor, self.architecture) if p]
        soft = ", software adapter" if self.software else ""
        return (
            f"WebGPU: {self.name} [{' / '.join(parts) or 'vendor not reported'}{soft}] via {self.host}; "
            f"max buffer {_size(self.max_buffer_size)}, "
            f"max storage binding {_size(self.max_storage_binding)}"
        )


@dataclass(frozen=True)
class Selection:
    """The device a run would use, and the sentence that says why."""

    device: DeviceInfo
    reason: str
    cpu_fallback: bool

    def to_json(self) -> dict:
        return {"device": self.device.to_json(), "reason": self.reason, "cpu_fallback": self.cpu_fallback}


class DeviceLost(RuntimeError):
    """The GPU a run was on is lost (WebGPU's `device.lost`): nothing on it can run or be read back any more.
    The message says what the browser said (GPUDeviceLostInfo's reason and message) and names the device."""


def _size(n: int) -> str:
    """Bytes in binary units, 4 significant digits: 2147483648 -> '2 GiB'."""
    value, unit = float(n), 0
    while value >= 1024 and unit < 4:
        value, unit = value / 1024, unit + 1
    return f"{n} B" if unit == 0 else f"{value:.4g} {('KiB', 'MiB', 'GiB', 'TiB')[unit - 1]}"


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
        from scellis.runtime import browser_gpu

        return await browser_gpu.adapters()
    from scellis.runtime import native_gpu

    return native_gpu.adapters()
