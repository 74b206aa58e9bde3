"""Bundled engine assets: the WGSL kernel templates and the compiled CPU-path module.

In a built wheel (the browser's install, or `pip install scellis-*.whl`) they sit in
`scellis/_assets/`; in a source checkout they are read where `build.py` leaves them.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

WASM_NAME = "scellis_cpu.wasm"

_CHECKOUT = Path(__file__).resolve().parents[2]


class AssetMissing(FileNotFoundError):
    """An engine asset is absent: the checkout has not been built, or the install is broken."""


def _bundled(name: str) -> resources.abc.Traversable:
    return resources.files("scellis").joinpath("_assets", *name.split("/"))


def read_asset(name: str) -> bytes:
    """The bytes of a bundled asset, e.g. `scellis_cpu.wasm` or `wgsl/elementwise.wgsl`."""
    bundled = _bundled(name)
    if bundled.is_file():
        return bundled.read_bytes()
    # In a checkout, sources sit where they are written and the module where build.py compiles it.
    local = _CHECKOUT / "build" / "wasm" / name if name == WASM_NAME else _CHECKOUT / name
    if local.is_file():
        return local.read_bytes()
    raise AssetMissing(
        f"engine asset {name!r} is neither in the installed package nor at {local}; "
        "in a checkout, run `python build.py` first"
    )


def wgsl_names() -> list[str]:
    """Names (`wgsl/<file>`) of every bundled WGSL source, sorted."""
    bundled = _bundled("wgsl")
    folder = bundled if bundled.is_dir() else _CHECKOUT / "wgsl"
    if not folder.is_dir():
        return []
    return sorted(f"wgsl/{p.name}" for p in folder.iterdir() if p.name.endswith(".wgsl"))
