"""The named CPU path: the kernels of `scellis_cpu.wasm`, driven from Python.

Buffer placement belongs to the host (a compiled schedule's memory plan): the module only reports
where free memory starts, and `CpuPath` places regions from there, 16-byte aligned.
"""

from __future__ import annotations

from scellis.runtime.cpu.wasm import PAGE, WasmInstance, instantiate

ALIGN = 16


def _aligned(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


class CpuPath:
    """The CPU path on one WebAssembly instance (wasmtime under CPython, the page's in a browser)."""

    def __init__(self, instance: WasmInstance) -> None:
        self.instance = instance
        self.heap_base = _aligned(int(instance.call("sc_heap_base")))  # type: ignore[arg-type]
        self.free_base = self.heap_base  # where placements start: after every reserved region

    @classmethod
    async def open(cls) -> CpuPath:
        return cls(await instantiate())

    @property
    def host(self) -> str:
        return self.instance.host

    def reserve(self, nbytes: int) -> int:
        """A zeroed region of `nbytes` that stays the caller's for the instance's life (a compiled
        schedule's memory, zeroed as WebGPU's new buffers are: earlier scratch placements may have written
        there); later placements and reservations start after it."""
        offset = self.free_base
        self.free_base = _aligned(offset + nbytes)
        self._place([])
        self.instance.write(offset, bytes(nbytes))
        return offset

    def _place(self, sizes: list[int]) -> list[int]:
        """Offsets for buffers of the given byte sizes, growing memory to hold them all."""
        offsets, end = [], self.free_base
        for size in sizes:
            offsets.append(end)
            end = _aligned(end + size)
        missing = end - self.instance.memory_size()
        if missing > 0:
            self.instance.grow(-(-missing // PAGE))
        return offsets
