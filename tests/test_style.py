"""House style, enforced: ruff lint and format over all Python here, mypy over the package, Biome's lint and
format over the JavaScript (biome.json names which), clang-format over the CPU path's C (.clang-format)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def ruff(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ruff", *args], cwd=ROOT, capture_output=True, text=True, check=False)


def test_ruff_lint_is_clean() -> None:
    done = ruff("check", ".")
    assert done.returncode == 0, done.stdout + done.stderr


def test_ruff_format_is_clean() -> None:
    done = ruff("format", "--check", ".")
    assert done.returncode == 0, done.stdout + done.stderr


def test_biome_lint_and_format_are_clean() -> None:
    biome = ROOT / "node_modules" / ".bin" / "biome"
    assert biome.is_file(), "Biome is not installed: run scripts/setup"
    done = subprocess.run(
        [str(biome), "ci", "--colors=off", "--error-on-warnings"], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_clang_format_is_clean_on_the_c() -> None:
    clang_format = Path(sys.executable).parent / "clang-format"  # the clang-format of requirements-dev.txt
    sources = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "wasm").iterdir() if p.suffix in (".c", ".h"))
    done = subprocess.run(
        [str(clang_format), "--dry-run", "--Werror", *sources], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert sources and done.returncode == 0, done.stdout + done.stderr


def test_mypy_is_clean_on_the_package() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True, text=True, check=False, timeout=600
    )
    assert done.returncode == 0, done.stdout + done.stderr
