"""The device protocol every executor implements (WebGPU in the browser and through wgpu-py, the CPU
path in the browser and through wasmtime).

A device compiles a planned schedule (plan.planned: lowered, updated in place and planned) once, as it is:
it allocates exactly the plan's slots for the buffers the schedule names, builds its
kernels (WGSL pipelines and bind groups; or the CPU path's encoded call list), and returns a compiled
step. The compiled step is driven with one call per step: `submit(writes, reads)` writes the named
inputs, dispatches every kernel and the carry copies (`param/w` into `w` ...), and returns an awaitable
of the named outputs' bytes that the caller may await later, or never, so the next step is never held
up by a readback. Bytes are little-endian, 4 per element; bools are u32 0/1; float16 storage 2 per
element, padded with zeros to whole 4-byte words (a buffer's bytes are always `Buffer.nbytes`).

Implementations: `runtime.webgpu.browser` (the page's WebGPU, through app/src/executor.js),
`runtime.webgpu.native` (wgpu-py), `runtime.cpu.device` (the CPU path, in the page or under wasmtime) and
`runtime.reference.device` (numpy, float64: schedules checked against the IR oracle `runtime.reference`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from scellis.lower.merge import bindings_feature
from scellis.lower.variants import SOFTWARE
from scellis.plan.budget import Budget, DeviceLimits
from scellis.plan.planned import Planned


def lowering_features(enabled: frozenset[str], bindings: int, software: bool) -> frozenset[str]:
    """What the lowering may use on a WebGPU device: its `enabled` optional features, the storage buffers
    a kernel may bind (its maxStorageBuffersPerShaderStage, lower.merge.bindings_feature), and
    lower.variants.SOFTWARE where the adapter emulates a GPU on the CPU. The Guide lowers with these too,
    so it shows the kernels the device runs."""
    return enabled | bindings_feature(bindings) | (frozenset({SOFTWARE}) if software else frozenset())


def borrowed(planned: Planned, host: object) -> list[int]:
    """Per slot of `planned`, the slot of `host` it is (-1: its own); ValueError when a plan that borrows is
    compiled without its host."""
    if planned.borrows and host is None:
        raise ValueError(f"{planned.name} was planned alongside another function: compile it with that one")
    return list(planned.borrows) or [-1] * len(planned.memory.slot_bytes)


class CompiledStep(Protocol):
    def write(self, name: str, data: bytes) -> None:
        """Set an input (or output) buffer before the next step."""

    async def step(self, writes: dict[str, bytes], reads: list[str]) -> dict[str, bytes]:
        """submit() and wait for the reads."""

    def submit(self, writes: dict[str, bytes], reads: list[str]) -> Any:
        """One step; returns an awaitable of {name: bytes} for `reads`."""

    async def fetch(self, names: list[str]) -> dict[str, bytes]:
        """Bring buffers back without running anything."""

    def copy_into(self, other: Any, names: list[str]) -> None:
        """Copy the named buffers into `other`'s buffers of the same names, on the device: no round trip
        through the host (both steps compiled by one device; the copy follows every step submitted
        before it and precedes `other`'s next step; a buffer `other` borrows from this step is already the
        same bytes). ValueError when a name is missing from either or the two buffers differ in size."""


class Device(Protocol):
    name: str
    # what the lowering may use (lowering_features): optional WebGPU features enabled on it (shader-f16,
    # which the fast level reads), "bindings=N" where its kernels may bind more storage buffers than
    # WebGPU's default, "software" where the adapter emulates a GPU on the CPU
    features: frozenset[str]
    limits: DeviceLimits  # the largest buffer and binding, and how many buffers a kernel may bind

    async def budget(self, need: int) -> Budget:
        """The memory a run may allocate, measured (for WebGPU, by probing around `need`), or why not."""

    async def compile(self, planned: Planned, host: Any = None) -> CompiledStep:
        """The planned schedule compiled (the browser checks its pipelines asynchronously; every device
        is awaited alike). A schedule planned alongside another (plan.planned.alongside) is compiled with
        `host`, that one compiled by this device: its borrowed slots are the host's (`borrowed` checks)."""


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
    features: tuple[str, ...] = field(default_factory=tuple)  # lowering_features, as the device will have them

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


class DeviceLost(RuntimeError):
    """The GPU a run was on is lost (WebGPU's `device.lost`): nothing on it can run or be read back any more.
    The message says what the browser said (GPUDeviceLostInfo's reason and message) and names the device."""


def _size(n: int) -> str:
    """Bytes in binary units, 4 significant digits: 2147483648 -> '2 GiB'."""
    value, unit = float(n), 0
    while value >= 1024 and unit < 4:
        value, unit = value / 1024, unit + 1
    return f"{n} B" if unit == 0 else f"{value:.4g} {('KiB', 'MiB', 'GiB', 'TiB')[unit - 1]}"
