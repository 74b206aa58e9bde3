"""`scellis check`: the correctness matrix on a device of this machine, summarised per level."""

from __future__ import annotations

import pytest

from scellis import cli
from scellis.checks.cases import CASES
from scellis.lower import variants


def test_check_on_the_cpu_path_passes_every_level(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["check", "--device", "cpu"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("correctness matrix on CPU path (WebAssembly) via wasmtime")
    checks = sum(len(case.build().outputs) for case in CASES if not case.needs)  # float16 storage is skipped
    for level in ("debug", "prod", "fast"):
        assert f"  {level}: {checks}/{checks} within tolerance" in out
    assert "  skipped float16 storage: needs the device feature shader-f16, which this device lacks" in out
    assert "FAILED" not in out


def test_a_broken_promise_fails_the_check(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(variants.TOLERANCE, "tile64", 1e-12)  # no float32 matmul is this close
    assert cli.main(["check", "--device", "cpu"]) == 1
    out = capsys.readouterr().out
    assert "FAILED debug matmul 97x47x257: matmul (matmul [tile64])" in out
