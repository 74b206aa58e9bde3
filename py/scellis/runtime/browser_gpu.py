"""The WebGPU adapter of the page, through `navigator.gpu` and Pyodide's JS FFI."""

from __future__ import annotations

import js  # only importable in Pyodide
from pyodide.ffi import jsnull

from scellis.runtime.devices import DeviceInfo


def _browser() -> str:
    """The browser's name and major version, from User-Agent Client Hints where offered."""
    data = getattr(js.navigator, "userAgentData", None)
    if data is not None and data is not jsnull:
        brands = [(str(b.brand), str(b.version)) for b in data.brands if "Not" not in str(b.brand)]
        named = [b for b in brands if b[0] != "Chromium"] or brands
        if named:
            return f"{named[0][0]} {named[0][1]}"
    agent = str(js.navigator.userAgent)
    for token, name in (("Firefox/", "Firefox"), ("Safari/", "Safari")):
        if token in agent:
            return f"{name} {agent.split(token)[1].split(' ', maxsplit=1)[0]}"
    return "browser"


async def adapters() -> list[DeviceInfo]:
    """The page's adapter, or nothing when `navigator.gpu` is absent or `requestAdapter()` gives null."""
    gpu = getattr(js.navigator, "gpu", None)
    if gpu is None or gpu is jsnull:
        return []
    adapter = await gpu.requestAdapter()
    if adapter is None or adapter is jsnull:
        return []
    info, limits = adapter.info, adapter.limits
    vendor, arch = str(info.vendor or ""), str(info.architecture or "")
    fallback = bool(getattr(info, "isFallbackAdapter", False))
    return [
        DeviceInfo(
            kind="webgpu",
            name=str(info.description or info.device or " ".join(p for p in (vendor, arch) if p) or "WebGPU adapter"),
            host=f"{_browser()} WebGPU",
            vendor=vendor,
            architecture=arch,
            software=fallback or arch == "swiftshader",
            max_buffer_size=int(limits.maxBufferSize),
            max_storage_binding=int(limits.maxStorageBufferBindingSize),
            features=("shader-f16",) if adapter.features.has("shader-f16") else (),
        )
    ]
