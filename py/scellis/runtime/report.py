"""What this environment offers: engine version, reachable devices, the chosen one, and
optionally the self-check of the engine's path on them. `scellis info` prints it; the app renders it."""

from __future__ import annotations

import platform
import sys
from typing import Any

from scellis import __version__
from scellis.engine import installed_engine_version
from scellis.levels import PROMISES, Level
from scellis.runtime import IN_BROWSER
from scellis.runtime.cpu.device import CpuDevice
from scellis.runtime.cpu.module import CpuPath
from scellis.runtime.device import Device
from scellis.runtime.devices import DeviceInfo, cpu_device, select, webgpu_devices
from scellis.runtime.selfcheck import self_check


async def environment_report(check: bool) -> dict:
    """A JSON-ready description of this environment. `check` also runs the self-check
    (runtime.selfcheck) on the CPU path (`cpu_check`) and on a WebGPU device where one can be opened
    here (`webgpu_check`, else None: in the browser the page opens its GPU only for a run)."""
    cpu = await CpuPath.open()
    gpus = await webgpu_devices()
    devices = [*gpus, cpu_device(cpu.host)]
    report: dict[str, Any] = {
        "package_version": __version__,
        "engine_version": installed_engine_version(),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "environment": "browser (Pyodide)" if IN_BROWSER else f"CPython on {sys.platform}",
        "devices": [d.to_json() for d in devices],
        "device_lines": [d.describe() for d in devices],
        "selected": select(devices).to_json(),
        "levels": {level.value: PROMISES[level] for level in Level},
    }
    if check:
        report["cpu_check"] = {"host": cpu.host, **await self_check(CpuDevice(cpu))}
        gpu = _native_gpu(gpus)
        report["webgpu_check"] = None if gpu is None else await self_check(gpu)
    return report


def _native_gpu(adapters: list[DeviceInfo]) -> Device | None:
    """The WebGPU device the CPython devices use (wgpu-py, runtime.webgpu.native), when there is one."""
    if IN_BROWSER or not adapters:
        return None
    from scellis.runtime.webgpu.native import WgpuDevice

    try:
        return WgpuDevice()
    except RuntimeError:  # adapters, but none of the backend the engine drives
        return None
