"""The repository keeps the shape the project promises: layout, layering, module headers, sizes."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "py" / "scellis"
# Pipeline stages, upstream first: a stage may import only stages before it (and base modules).
STAGES = ["graph", "ir", "autodiff", "optim", "loop", "lower", "plan", "codegen", "runtime"]
# Below every stage; they import only each other.
BASE = {"assets", "engine", "gcpause", "rng", "ops", "datasets", "levels", "store", "jsontext", "text"}
TOP = {
    "cli",
    "serve",
    "__main__",
    "pipeline",
    "examples",
    "session",
    "manifest",
    "app",
    "calls",
    "checks",
    "guide",
    "pagerun",
    "provenance",
    "datafit",
    "rerunstorage",
    "models",
    "torchexport",
    "warmup",
}  # above every stage
# The browser's: Pyodide's, and the engine worker's host module (app/src/enginehost.js).
BROWSER_MODULES = {"js", "pyodide", "scellis_host"}


def modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def imported(path: Path) -> list[str]:
    names = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
    return names


def stage_of(path: Path) -> str:
    return path.relative_to(PACKAGE).parts[0].removesuffix(".py")


@pytest.mark.parametrize(
    "name",
    [
        "pyproject.toml",
        "README.md",
        "build.py",
        "py/scellis",
        "app",
        "wgsl",
        "wasm",
        "tests",
        "e2e",
        "bench",
        ".ci/run",
    ],
)
def test_top_level_layout(name: str) -> None:
    assert (ROOT / name).exists(), f"{name} is part of the promised layout"


@pytest.mark.parametrize("path", modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_module_opens_with_docstring_and_stays_small(path: Path) -> None:
    tree = ast.parse(path.read_text())
    assert ast.get_docstring(tree), f"{path} must open with a docstring naming its stage"
    assert len(path.read_text().splitlines()) <= 800


@pytest.mark.parametrize("path", modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_imports_point_downward(path: Path) -> None:
    stage = stage_of(path)
    for name in imported(path):
        root = name.split(".")[0]
        if root in BROWSER_MODULES:
            assert stage == "runtime", f"{path}: only scellis.runtime may import {root}"
        if root != "scellis" or name == "scellis" or stage in TOP:
            continue
        target = name.split(".")[1]
        if target in BASE:
            continue
        assert stage in STAGES and target in STAGES, f"{path} imports {name}: base modules import no stage"
        assert STAGES.index(target) <= STAGES.index(stage), f"{path} ({stage}) imports {name}: upward import"


def test_layering_check_sees_a_violation(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text('"""x"""\nimport scellis.runtime.cpu.module\nfrom scellis.plan import thing\n')
    assert imported(bad) == ["scellis.runtime.cpu.module", "scellis.plan"]
