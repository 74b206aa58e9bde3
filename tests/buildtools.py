"""build.py, loaded as a module for tests (it is a script at the project root)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]


def load_build_script(root: Path = ROOT) -> ModuleType:
    """build.py as a module (it is a script at the project root, not part of the package)."""
    spec = importlib.util.spec_from_file_location(f"build_{abs(hash(root))}", root / "build.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while being defined
    spec.loader.exec_module(module)
    return module
