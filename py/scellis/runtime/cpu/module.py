"""The named CPU path: the kernels of `scellis_cpu.wasm`, driven from Python.

Buffer placement belongs to the host (later, the memory plan): the module only reports
where free memory starts, and `CpuPath` places operands from there, 16-byte aligned.
"""

from __future__ import annotations

from scellis.runtime.cpu.wasm import PAGE, WasmInstance, instantiate

ALIGN = 16
F32 = 4


def _aligned(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


class CpuPath:
    """The CPU path on one WebAssembly instance (wasmtime under CPython, the page's in a browser)."""

    def __init__(self, instance: WasmInstance) -> None:
        self.instance = instance
        self.heap_base = _aligned(int(instance.call("sc_heap_base")))  # type: ignore[arg-type]
        self.sum_block = int(instance.call("sc_sum_block_size"))  # type: ignore[arg-type]
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

    def add_f32(self, a: bytes, b: bytes) -> bytes:
        """Elementwise a + b over little-endian float32 arrays of equal length."""
        if len(a) != len(b) or len(a) % F32:
            raise ValueError(f"add_f32 needs two float32 arrays of equal length, got {len(a)} and {len(b)} bytes")
        pa, pb, po = self._place([len(a), len(b), len(a)])
        self.instance.write(pa, a)
        self.instance.write(pb, b)
        self.instance.call("sc_add_f32", pa, pb, po, 0, len(a) // F32)
        return self.instance.read(po, len(a))

    def sum_f32(self, x: bytes) -> bytes:
        """Sum of a float32 array in the kernel's fixed block order, as 4 little-endian bytes."""
        if len(x) % F32:
            raise ValueError(f"sum_f32 needs a float32 array, got {len(x)} bytes")
        n = len(x) // F32
        blocks = -(-n // self.sum_block)
        px, pp, po = self._place([len(x), blocks * F32, F32])
        self.instance.write(px, x)
        self.instance.call("sc_sum_blocks_f32", px, n, pp, 0, blocks)
        self.instance.call("sc_sum_partials_f32", pp, blocks, po)
        return self.instance.read(po, F32)
