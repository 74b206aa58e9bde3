"""Fine-tuning from the command line on the CPU path (wasmtime), with a small BERT model folder and a CSV of
texts: `scellis finetune` writes the QLoRA program, `scellis run --model --data texts:` trains it and exports
the PEFT adapter and the merged model, `scellis verify` re-runs it bit for bit from its manifest; missing
models, programs that cannot give an export and other weights are refused by name."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest

from scellis import cli
from tests.fixtures.tiny_bert import tiny_texts_csv, write_tiny_bert


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("finetune")
    write_tiny_bert(root / "model")
    (root / "mails.csv").write_bytes(tiny_texts_csv())
    return root


def program(folder: Path, way: str, capsys: pytest.CaptureFixture[str]) -> Path:
    out = folder / f"{way}.json"
    argv = ["finetune", str(folder / "model"), str(folder / "mails.csv"), "--way", way, "--length", "16"]
    assert cli.main([*argv, "--batch", "4", "--epochs", "1", "--out", str(out)]) == 0
    said = capsys.readouterr().err
    assert "classes ham, spam; 32 to train on, 8 held out (split seed 20021)" in said
    return out


def run_argv(folder: Path, program: Path, *more: str) -> list[str]:
    return [
        "run", str(program), "--model", str(folder / "model"), "--data", f"texts:{folder / 'mails.csv'}",
        "--device", "cpu", "--determinism", "debug", "--seed", "3", "--store", str(folder / "store"), *more,
    ]  # fmt: skip


def test_a_qlora_program_trains_exports_and_verifies(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    qlora = program(folder, "qlora", capsys)
    assert json.loads(qlora.read_text())["name"] == "mails.csv-qlora"
    manifest = folder / "qlora.manifest.json"
    argv = run_argv(folder, qlora, "--manifest", str(manifest), "--export", "adapter", "--export", "model")
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    assert f"exported the LoRA adapter (PEFT): {folder / 'qlora-adapter.zip'}" in out
    with zipfile.ZipFile(io.BytesIO((folder / "qlora-adapter.zip").read_bytes())) as archive:
        assert json.loads(archive.read("adapter_config.json"))["r"] == 8
    with zipfile.ZipFile(io.BytesIO((folder / "qlora-model.zip").read_bytes())) as archive:
        assert "model.safetensors" in archive.namelist() and "config.json" in archive.namelist()
    pinned = json.loads(manifest.read_text())
    assert pinned["program"]["json"]["weights"]["bytes"] == (folder / "model" / "model.safetensors").stat().st_size
    verify = ["verify", str(manifest), "--model", str(folder / "model"), "--data", f"texts:{folder / 'mails.csv'}"]
    assert cli.main(verify) == 0, capsys.readouterr().err


def test_what_is_missing_or_other_is_refused_by_name(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    full = program(folder, "full", capsys)
    argv = run_argv(folder, full)
    without = [a for i, a in enumerate(argv) if a != "--model" and argv[i - 1] != "--model"]
    assert cli.main(without) == 2
    assert "mails.csv-full starts from pretrained weights: give --model DIR" in capsys.readouterr().err
    assert cli.main([*argv, "--export", "adapter"]) == 2
    assert "has no LoRA adapters (export the model)" in capsys.readouterr().err
    other = folder / "other"
    write_tiny_bert(other)
    weights = other / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-4] + b"\0\0\0\0")
    assert cli.main([*argv[:3], str(other), *argv[4:]]) == 2
    assert "its SHA-256 is" in capsys.readouterr().err
    (other / "tokenizer.json").unlink()
    assert cli.main([*argv[:3], str(other), *argv[4:]]) == 2
    assert "no tokenizer.json there" in capsys.readouterr().err
