"""Wheel build hook: ship the WGSL templates and the compiled CPU-path module inside the wheel.

The browser installs only the wheel, so everything the engine executes travels in it.
Editable installs skip this: there `scellis.assets` finds the same files in the checkout.
"""

from pathlib import Path

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

ROOT = Path(__file__).parent
WASM = ROOT / "build" / "wasm" / "scellis_cpu.wasm"


class KernelAssets(BuildHookInterface):
    def initialize(self, version: str, build_data: dict) -> None:
        if version == "editable":
            return
        if not WASM.is_file():
            raise FileNotFoundError(
                f"{WASM} is missing: the wheel ships the compiled CPU path. "
                "Build with `python build.py`, which compiles it before the wheel."
            )
        build_data["force_include"][str(ROOT / "wgsl")] = "scellis/_assets/wgsl"
        build_data["force_include"][str(WASM)] = "scellis/_assets/scellis_cpu.wasm"
