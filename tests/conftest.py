"""Shared fixtures: build.py as a module and an up-to-date dist/ (the build is incremental)."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest
from buildtools import load_build_script


@pytest.fixture(scope="session")
def build_script() -> ModuleType:
    return load_build_script()


@pytest.fixture(scope="session")
def dist(build_script: ModuleType) -> Path:
    """dist/, brought up to date once per test session."""
    build_script.build()
    return build_script.DIST
