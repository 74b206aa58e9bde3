"""`scellis plan`: the memory a session of a program holds on a device of this machine."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scellis import cli
from scellis.examples import digits_mlp
from scellis.levels import Level
from scellis.pipeline import compile_program


def test_plan_prints_each_function_and_the_step_by_category(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    program = tmp_path / "digits.json"
    program.write_text(json.dumps(digits_mlp()))
    assert cli.main(["plan", str(program), "--device", "cpu", "--level", "prod", "--batch", "32"]) == 0
    out = capsys.readouterr().out.splitlines()
    plan = compile_program(digits_mlp(), batch=32).at(Level.PROD, frozenset()).plan
    assert out[0].startswith("device: CPU path (WebAssembly)")
    assert out[1] == "memory plan: digits-mlp at level prod, batch 32 (features: none)"
    step = plan.functions[0]
    assert out[2].startswith(f"  training step: {step.allocated:,} bytes in {step.allocations} allocations")
    assert f"  held while training (step and evaluation): {plan.total:,} bytes" in out
    assert f"    parameters: {4 * 9610:,}" in out  # 64*128 + 128 + 128*10 + 10 float32 parameters
    verdict = out.index("verdict: green")  # the CPU path measures its budget: the wasm32 memory left
    assert out[verdict + 1].startswith(f"  - takes {plan.total:,} of a budget of ")


def test_plan_names_what_is_wrong_with_the_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "missing.json"
    assert cli.main(["plan", str(missing), "--device", "cpu", "--level", "prod"]) == 2
    assert f"scellis plan: cannot read {missing}" in capsys.readouterr().err
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps({**digits_mlp(), "nodes": []}))
    assert cli.main(["plan", str(broken), "--device", "cpu", "--level", "prod"]) == 2
    assert f"scellis plan: {broken}:" in capsys.readouterr().err


def test_float16_storage_without_shader_f16_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    program = tmp_path / "half.json"
    program.write_text(json.dumps({**digits_mlp(), "memory": {"storage": "float16"}}))
    assert cli.main(["plan", str(program), "--device", "cpu", "--level", "prod"]) == 2
    said = "needs the device feature shader-f16, which this device lacks (its features: none)"
    assert f"scellis plan: {program}: float16 storage" in (err := capsys.readouterr().err) and said in err
    assert cli.main(["compile", str(program), "--level", "prod"]) == 2
    assert said in capsys.readouterr().err
    assert cli.main(["compile", str(program), "--level", "prod", "--features", "shader-f16"]) == 0
    assert "f16[64,128]" in capsys.readouterr().out  # the typed IR holds the float16 parameter


def test_plan_on_webgpu_measures_its_budget_with_the_allocation_probe(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    program = tmp_path / "digits.json"
    program.write_text(json.dumps(digits_mlp()))
    assert cli.main(["plan", str(program), "--device", "webgpu", "--level", "prod"]) == 0
    out = capsys.readouterr().out
    assert "verdict: green\n  - takes " in out and "at least: the allocation probe allocated and released" in out


def test_plan_of_a_resident_data_set_needs_its_size(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from scellis.plan.remedies import apply

    program = tmp_path / "resident.json"
    program.write_text(json.dumps(apply(digits_mlp(), {"data": "resident"})))
    assert cli.main(["plan", str(program), "--device", "cpu", "--level", "prod"]) == 2
    assert "needs the number of training examples; got None" in capsys.readouterr().err
    examples = 4_000_000  # 1 GiB of pixels: more than the given budget, which the model alone fits in
    budget = str(512 << 20)
    argv = ["plan", str(program), "--device", "cpu", "--level", "prod", "--examples", str(examples)]
    assert cli.main([*argv, "--budget", budget]) == 1
    out = capsys.readouterr().out
    assert f"    resident data set: {examples * 65 * 4:,}" in out
    assert "remedies:\n  - stream the data set: " in out and ', green (data "stream")' in out
