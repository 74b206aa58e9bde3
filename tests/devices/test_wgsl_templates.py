"""Every template in wgsl/ is valid WGSL as it is, each file alone: lavapipe's shader compiler (naga,
through wgpu-py) parses and validates it, the way an editor or linter would check the file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import wgpu

from scellis.runtime.webgpu.native import WgpuDevice

ROOT = Path(__file__).resolve().parents[2]
TEMPLATES = sorted((ROOT / "wgsl").glob("*.wgsl"))


@pytest.fixture(scope="module")
def device() -> Any:
    return WgpuDevice().device


def compile_file(device: Any, path: Path) -> None:
    """Compile the file as it is; AssertionError naming it, with the compiler's message, if it fails."""
    try:
        device.create_shader_module(code=path.read_text(), label=path.name)
    except wgpu.GPUValidationError as error:
        raise AssertionError(f"wgsl/{path.name} is not valid WGSL as it is:\n{error}") from None


def test_there_are_templates() -> None:
    assert len(TEMPLATES) > 20


@pytest.mark.parametrize("path", TEMPLATES, ids=lambda p: p.name)
def test_template_is_valid_wgsl(device: Any, path: Path) -> None:
    compile_file(device, path)


def test_an_invalid_file_fails_naming_it(device: Any, tmp_path: Path) -> None:
    broken = tmp_path / "broken.wgsl"
    broken.write_text((ROOT / "wgsl" / "elementwise.wgsl").read_text().replace("fn DECODE() {}\n", ""))
    with pytest.raises(AssertionError, match=r"(?s)wgsl/broken.wgsl is not valid WGSL as it is:\n.*DECODE"):
        compile_file(device, broken)
