"""Bundled engine assets: found in the checkout (editable install) or the wheel, or a clear error."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from scellis.assets import WASM_NAME, AssetMissing, read_asset, wgsl_names

ROOT = Path(__file__).resolve().parents[1]


def test_checkout_assets_are_the_sources_and_the_built_module(dist: Path) -> None:
    assert wgsl_names() == sorted(f"wgsl/{p.name}" for p in (ROOT / "wgsl").glob("*.wgsl"))
    assert read_asset("wgsl/elementwise.wgsl") == (ROOT / "wgsl" / "elementwise.wgsl").read_bytes()
    assert hashlib.sha256(read_asset(WASM_NAME)).digest() == hashlib.sha256((dist / WASM_NAME).read_bytes()).digest()


def test_missing_asset_names_where_it_looked() -> None:
    with pytest.raises(AssetMissing, match=r"'wgsl/nope.wgsl' is neither in the installed package nor at .*wgsl/nope"):
        read_asset("wgsl/nope.wgsl")
