"""The simulation and the analysis from CPython's command line: `scellis examples` prints them, `scellis run`
runs them on the CPU path (wasmtime) and pins a manifest (no data versions for a program without data,
both splits for the breast cancer analysis), `scellis verify` re-runs it bit for bit; --data is refused
for a program that reads none and required by one that does."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scellis import cli
from scellis.examples import catalogue
from scellis.manifest import read_manifest


@pytest.fixture
def programs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """The option pricer (4,096 paths: its 64 time steps kept) and the analysis (100 resamples) as files."""
    for name, change in (("option-pricing", {"batch_size": 4096}), ("logistic-bootstrap", {})):
        assert cli.main(["examples", name]) == 0
        program = json.loads(capsys.readouterr().out)
        program["loop"].update(change)
        if name == "logistic-bootstrap":
            boot = next(n for n in program["nodes"] if n["id"] == "resampled")
            boot["params"]["resamples"] = 100
            beta = next(n for n in program["nodes"] if n["id"] == "boot_coefficients")
            beta["params"]["shape"] = [100, 4, 1]
        (tmp_path / f"{name}.json").write_text(json.dumps(program))
    return tmp_path


def test_examples_lists_every_example_with_the_data_it_reads(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["examples"]) == 0
    out = capsys.readouterr().out
    for name, (data, _, _) in catalogue().items():
        assert f"{name}  [data: {data}]" in out
    assert cli.main(["examples", "nothing"]) == 2
    assert "no example 'nothing'; examples: digits-mlp" in capsys.readouterr().err


def run_and_verify(folder: Path, name: str, data: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[str, str]:
    manifest = folder / f"{name}.manifest.json"
    argv = ["run", str(folder / f"{name}.json"), *data, "--device", "cpu", "--determinism", "debug", "--seed", "3"]
    assert cli.main([*argv, "--store", str(folder / "store"), "--manifest", str(manifest)]) == 0
    ran = capsys.readouterr().out
    assert cli.main(["verify", str(manifest), *data]) == 0
    return ran, capsys.readouterr().out


def test_the_option_pricer_runs_pins_no_data_and_verifies(programs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ran, verified = run_and_verify(programs, "option-pricing", [], capsys)
    assert ran.startswith("running option-pricing on CPU path (WebAssembly)")
    assert "results: asian " in ran and "loss" not in ran
    pinned = read_manifest((programs / "option-pricing.manifest.json").read_bytes())
    assert pinned.settings.data == () and pinned.settings.steps == 64
    assert pinned.metrics["metric/european"] > 0
    assert "the program reads no data" in verified and "bit for bit" in verified


def test_the_analysis_runs_on_the_breast_cancer_data_and_verifies(
    programs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ran, verified = run_and_verify(programs, "logistic-bootstrap", ["--data", "breast-cancer"], capsys)
    assert ran.startswith("running logistic-bootstrap") and "coef_mean_radius -4.919" in ran
    pinned = read_manifest((programs / "logistic-bootstrap.manifest.json").read_bytes())
    assert [(v.split, v.examples) for v in pinned.settings.data] == [("train", 569), ("test", 569)]
    assert pinned.metrics["metric/coef_mean_radius"] == pytest.approx(-4.9187, abs=1e-3)
    assert "data matches the pinned versions" in verified and "bit for bit" in verified


def test_data_is_refused_where_there_is_none_and_required_where_there_is(
    programs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    common = ["--device", "cpu", "--determinism", "debug", "--seed", "3", "--store", str(programs / "store")]
    assert cli.main(["run", str(programs / "option-pricing.json"), "--data", "digits", *common]) == 2
    assert "has no input node, so it reads no data: leave out --data" in capsys.readouterr().err
    assert cli.main(["run", str(programs / "logistic-bootstrap.json"), *common]) == 2
    assert "reads data (input nodes features, diagnosis): give --data" in capsys.readouterr().err
