"""WebGPU adapters under CPython, through wgpu-py (the same WGSL the browser runs)."""

from __future__ import annotations

from importlib.metadata import version

from scellis.runtime.devices import NATIVE_BACKENDS, DeviceInfo


def adapters() -> list[DeviceInfo]:
    """Every adapter wgpu-py enumerates, native backends first."""
    try:
        import wgpu
    except ImportError:
        return []
    found = []
    for adapter in wgpu.gpu.enumerate_adapters_sync():
        info, limits = adapter.info, adapter.limits
        backend = info.get("backend_type", "")
        found.append(
            DeviceInfo(
                kind="webgpu",
                name=info.get("device") or info.get("description") or "unnamed adapter",
                host=f"wgpu-py {version('wgpu')} ({backend})",
                vendor=info.get("vendor", ""),
                architecture=info.get("architecture", ""),
                software=info.get("adapter_type", "") == "CPU",
                max_buffer_size=int(limits["max-buffer-size"]),
                max_storage_binding=int(limits["max-storage-buffer-binding-size"]),
                features=tuple(sorted(f for f in adapter.features if f == "shader-f16")),
            )
        )
    return sorted(found, key=lambda d: not d.host.endswith(tuple(f"({b})" for b in NATIVE_BACKENDS)))
