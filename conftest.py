"""Fixtures shared by tests/ and e2e/: build.py as a module, an up-to-date dist/ and dist-test/."""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent


def _load_build_script(root: Path) -> ModuleType:
    """build.py of the checkout at `root`, as a module (it is a script, not part of the package)."""
    spec = importlib.util.spec_from_file_location(f"build_{abs(hash(root))}", root / "build.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while being defined
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def load_build_script() -> Callable[[Path], ModuleType]:
    return _load_build_script


@pytest.fixture(scope="session")
def build_script() -> ModuleType:
    return _load_build_script(ROOT)


@pytest.fixture(scope="session")
def production_dist(build_script: ModuleType) -> Path:
    """dist/, the build the site ships, brought up to date once per test session (the build is incremental)."""
    build_script.build()
    return build_script.DIST


@pytest.fixture(scope="session")
def dist(production_dist: Path) -> Path:
    """The build under test: dist/ here; e2e/conftest.py makes it dist-test/ (the app with the test hooks)."""
    return production_dist


@pytest.fixture(scope="session")
def test_dist(build_script: ModuleType) -> Path:
    """dist-test/, the test build (`build.py --test`: the app with the test suite's hooks), up to date."""
    build_script.build_test()
    return build_script.DIST_TEST


FAULTS = ROOT / "build" / "faults"


@pytest.fixture(scope="session")
def fault_log() -> Callable[..., None]:
    """record(suite, **figures): a fault or fuzz suite's counts, written to build/faults/<suite>.json.

    Figures are whole numbers (trials, inputs tried, faults survived, crashes, hangs, silent wrong results,
    objects lost); `python bench/faults.py` prints every suite's last figures as one table.
    """

    def record(suite: str, **figures: int) -> None:
        FAULTS.mkdir(parents=True, exist_ok=True)
        (FAULTS / f"{suite}.json").write_text(json.dumps({"suite": suite, **figures}, sort_keys=True) + "\n")

    return record
