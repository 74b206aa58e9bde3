"""What this environment offers: engine version, reachable devices, the chosen one, and
optionally the CPU path's self-check. `scellis info` prints it; the app renders it."""

from __future__ import annotations

import platform
import sys

from scellis import __version__
from scellis.engine import installed_engine_version
from scellis.levels import PROMISES, Level
from scellis.runtime import IN_BROWSER
from scellis.runtime.cpu.module import CpuPath
from scellis.runtime.devices import cpu_device, select, webgpu_devices
from scellis.runtime.selfcheck import first_kernels


async def environment_report(check: bool) -> dict:
    """A JSON-ready description of this environment; `check` also runs the first CPU kernels."""
    cpu = await CpuPath.open()
    devices = [*await webgpu_devices(), cpu_device(cpu.host)]
    report = {
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
        report["cpu_check"] = first_kernels(cpu)
    return report
