"""The renderers make exactly the WGSL the fixture holds for every kernel of the correctness matrix's
cases and of the edge cases beside them (tests/fixtures/wgsl_kernels.py says what and how): filling the
templates of wgsl/ gives, byte for byte, the text the f-strings they replaced gave."""

from __future__ import annotations

import json

import pytest

from tests.fixtures.wgsl_kernels import FIXTURE, snapshot


@pytest.fixture(scope="module")
def made() -> dict:
    return snapshot()


def test_every_kernel_renders_as_kept(made: dict) -> None:
    kept = json.loads(FIXTURE.read_text())
    assert sorted(made) == sorted(kept)
    for name, levels in kept.items():
        for where, entry in levels.items():
            assert made[name][where] == entry, f"{name} at {where}"


def test_the_kept_kernels_cover_every_kind_and_variant() -> None:
    from scellis.codegen import wgsl_matmul
    from scellis.codegen.wgsl import RENDERERS
    from scellis.levels import Level
    from scellis.lower import lower
    from tests.fixtures.wgsl_kernels import FEATURES, functions

    seen = set()
    for fn in functions():
        for level in Level:
            for features in FEATURES.values():
                kernels = lower(fn, level, features).kernels  # a series, and each of its parts
                seen |= {(k.kind, k.variant) for k in kernels} | {(p.kind, p.variant) for k in kernels for p in k.parts}
    assert {kind for kind, _ in seen} == set(RENDERERS)
    variants = {variant for _, variant in seen}
    assert {"dot", "tile64", "tile128", "tile128-f16", *wgsl_matmul.BLOCKINGS, *wgsl_matmul.BLOCKS} <= variants
    assert {"solve-invocation", "solve-workgroup"} <= variants
