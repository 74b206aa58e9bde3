"""Bindings to one instance of the CPU-path module (`scellis_cpu.wasm`).

`WasmInstance` is all the CPU path needs from its host: call an export, read and write
linear memory, grow it. Under CPython the host is wasmtime; in the browser it is the
page's own `WebAssembly`, reached through Pyodide's JS FFI. Both run the same bytes.
"""

from __future__ import annotations

from typing import Protocol

from scellis.assets import WASM_NAME, read_asset
from scellis.runtime import IN_BROWSER

PAGE = 65536


class WasmInstance(Protocol):
    host: str

    def call(self, name: str, *args: int) -> int | float | None: ...
    def read(self, offset: int, size: int) -> bytes: ...
    def write(self, offset: int, data: bytes) -> None: ...
    def memory_size(self) -> int: ...
    def grow(self, pages: int) -> None: ...


class WasmtimeInstance:
    """The CPU-path module under CPython, through wasmtime."""

    def __init__(self, module_bytes: bytes) -> None:
        from importlib.metadata import version

        import wasmtime

        self.host = f"wasmtime {version('wasmtime')}"
        self._store = wasmtime.Store(wasmtime.Engine())
        module = wasmtime.Module(self._store.engine, module_bytes)
        exports = wasmtime.Instance(self._store, module, []).exports(self._store)
        memory = exports["memory"]
        if not isinstance(memory, wasmtime.Memory):
            raise TypeError(f"{WASM_NAME} must export a (non-shared) memory named 'memory'")
        self._memory = memory
        self._funcs = {e.name: exports[e.name] for e in module.exports if isinstance(e.type, wasmtime.FuncType)}

    def call(self, name: str, *args: int) -> int | float | None:
        result = self._funcs[name](self._store, *args)  # type: ignore[operator]  # Func, by construction
        return result if result is None or isinstance(result, int | float) else float(result)

    def read(self, offset: int, size: int) -> bytes:
        return bytes(self._memory.read(self._store, offset, offset + size))

    def write(self, offset: int, data: bytes) -> None:
        self._memory.write(self._store, data, offset)

    def memory_size(self) -> int:
        return int(self._memory.data_len(self._store))

    def grow(self, pages: int) -> None:
        self._memory.grow(self._store, pages)


class BrowserInstance:
    """The CPU-path module in the browser, through the page's WebAssembly and Pyodide's FFI."""

    def __init__(self, instance: object) -> None:
        self.host = "browser WebAssembly"
        self._exports = instance.exports  # type: ignore[attr-defined]
        self._memory = self._exports.memory

    @classmethod
    async def create(cls, module_bytes: bytes) -> BrowserInstance:
        import js
        from pyodide.ffi import to_js

        result = await js.WebAssembly.instantiate(to_js(module_bytes))
        return cls(result.instance)

    def _view(self, offset: int, size: int) -> object:
        import js

        return js.Uint8Array.new(self._memory.buffer, offset, size)

    def call(self, name: str, *args: int) -> int | float | None:
        return getattr(self._exports, name)(*args)

    def read(self, offset: int, size: int) -> bytes:
        return self._view(offset, size).to_bytes()  # type: ignore[attr-defined]

    def write(self, offset: int, data: bytes) -> None:
        self._view(offset, len(data)).assign(data)  # type: ignore[attr-defined]

    def memory_size(self) -> int:
        return int(self._memory.buffer.byteLength)

    def grow(self, pages: int) -> None:
        self._memory.grow(pages)


async def instantiate() -> WasmInstance:
    """The bundled CPU-path module, instantiated by this environment's WebAssembly host."""
    module_bytes = read_asset(WASM_NAME)
    if IN_BROWSER:
        return await BrowserInstance.create(module_bytes)
    return WasmtimeInstance(module_bytes)
