"""The engine version: which code a result was computed with.

`<package version>+<12 hex>`, the hex being SHA-256 over the sorted (name, SHA-256) pairs
of everything that decides what runs: the Python sources of `scellis`, the WGSL templates
and the compiled CPU-path module. Two builds of the same source give the same version;
`build.py` records it in `dist/build.json`, and the installed package recomputes it.
"""

from __future__ import annotations

import hashlib
from importlib import resources

from scellis import __version__
from scellis.assets import WASM_NAME, read_asset, wgsl_names


def engine_version(version: str, hashes: dict[str, str]) -> str:
    """Version string from the package version and the SHA-256 hex of each engine file."""
    digest = hashlib.sha256()
    for name in sorted(hashes):
        digest.update(f"{name}\t{hashes[name]}\n".encode())
    return f"{version}+{digest.hexdigest()[:12]}"


def python_sources() -> dict[str, str]:
    """SHA-256 of every `.py` file of the installed package, keyed `scellis/<path>`."""
    found: dict[str, str] = {}
    pending = [(resources.files("scellis"), "scellis")]
    while pending:
        folder, prefix = pending.pop()
        for entry in folder.iterdir():
            name = f"{prefix}/{entry.name}"
            if entry.is_dir() and entry.name not in ("__pycache__", "_assets"):
                pending.append((entry, name))
            elif entry.name.endswith(".py"):
                found[name] = hashlib.sha256(entry.read_bytes()).hexdigest()
    return found


def engine_files() -> dict[str, str]:
    """SHA-256 of every engine file as installed (the inputs of `engine_version`)."""
    hashes = python_sources()
    for name in [*wgsl_names(), WASM_NAME]:
        hashes[name] = hashlib.sha256(read_asset(name)).hexdigest()
    return hashes


def installed_engine_version() -> str:
    """The engine version of the code this interpreter would run."""
    return engine_version(__version__, engine_files())
