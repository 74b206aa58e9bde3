"""The pipeline makes exactly what the fixture holds for every example (tests/fixtures/pipeline_snapshot.py
says what is in it and how to regenerate it): restructuring stages changes no key, plan, kernel or
manifest."""

from __future__ import annotations

import json

import pytest

from tests.fixtures.pipeline_snapshot import FIXTURE, snapshot


@pytest.fixture(scope="module")
def made() -> dict:
    return snapshot()


@pytest.fixture(scope="module")
def kept() -> dict:
    return json.loads(FIXTURE.read_text())


def test_every_example_at_every_level_compiles_plans_and_renders_as_kept(made: dict, kept: dict) -> None:
    assert sorted(made["programs"]) == sorted(kept["programs"])
    for name, levels in kept["programs"].items():
        for where, entry in levels.items():
            assert made["programs"][name][where] == entry, f"{name} at {where}"


def test_the_examples_manifests_are_as_kept(made: dict, kept: dict) -> None:
    for name, manifest in kept["manifests"].items():
        assert made["manifests"][name] == manifest, name
