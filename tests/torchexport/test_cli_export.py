"""`scellis export torch` and `scellis import torch` from the command line: a program exported from the init
of a seed (computed on the CPU path) and from a checkpoint of a Scellis run, trained on by train.py, brought
back and resumed by `scellis run --resume`, and a simulation the same way; the export folder's model.py is a
module whose state_dict names and shapes are the program's; every op of the catalog has a lowering, and one
without would be refused by name, writing nothing."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest

from scellis import cli
from scellis.examples import digits_cnn, ising
from scellis.graph import validate
from scellis.graph.catalog import CATALOG
from scellis.torchexport.model import LOWERINGS, Unsupported, model_source
from tests.torchexport.cases import CASES, augmented, run_train

torch = pytest.importorskip(
    "torch", reason="PyTorch is not installed: scripts/setup installs it from requirements-dev.txt"
)


def write(path: Path, program: dict) -> Path:
    path.write_text(json.dumps(program))
    return path


@pytest.mark.parametrize("name", list(CASES))
def test_model_names_and_shapes_are_the_programs(name: str, tmp_path: Path) -> None:
    valid = validate(CASES[name].program())
    (tmp_path / "model.py").write_text(model_source(valid, "a test"))
    spec = importlib.util.spec_from_file_location("exported_model", tmp_path / "model.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    state = module.Model().state_dict()
    assert valid.built is not None
    builder = valid.built.builder
    want = {s.name: s.shape for s in [*builder.params, *builder.states]}
    assert {k: tuple(v.shape) for k, v in state.items()} == want


def test_an_op_without_a_torch_lowering_is_refused_by_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every op of the catalog has a lowering today; one without (here: the flip's, taken away) is refused."""
    monkeypatch.delitem(LOWERINGS, "random_flip")
    program = augmented(digits_cnn(), "image")
    with pytest.raises(Unsupported, match="node 'flip': op 'random_flip' has no PyTorch lowering"):
        model_source(validate(program), "a test")
    out = tmp_path / "out"
    assert (
        cli.main(["export", "torch", str(write(tmp_path / "p.json", program)), "--data", "digits", "-o", str(out)]) == 2
    )
    assert "op 'random_flip' has no PyTorch lowering" in capsys.readouterr().err
    assert not out.exists()


def test_every_op_of_the_catalog_has_a_lowering() -> None:
    assert sorted(op for op in CATALOG if op != "input" and op not in LOWERINGS) == []


def test_a_simulation_goes_to_pytorch_and_comes_back(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The Ising model exported from the init of a seed, 6 of its 12 sweeps run by train.py, taken back and
    finished by `scellis run --resume`: the same results as an unbroken Scellis run of 12 sweeps."""
    program = write(tmp_path / "ising.json", ising(2.2, size=8, chains=6, sweeps=4, epochs=3))
    out, store = tmp_path / "export", tmp_path / "store"
    assert cli.main(["export", "torch", str(program), "--seed", "2", "-o", str(out)]) == 0
    said = capsys.readouterr().out
    assert f"python {out}/train.py" in said and "torchrun" not in said and "one process" in said
    assert not (out / "data").exists()
    assert json.loads((out / "manifest.json").read_text())["data"] == []
    trained = run_train(out, "--steps", "6")
    assert cli.main(["import", "torch", str(trained.checkpoint), "--export", str(out), "--store", str(store)]) == 0
    key = re.search(r"as checkpoint (sha256:[0-9a-f]{64})", capsys.readouterr().out)
    assert key is not None
    run = ["run", str(program), "--device", "cpu", "--determinism", "prod", "--seed", "2"]
    run += ["--manifest", str(tmp_path / "run.manifest.json")]  # not the working directory's
    assert cli.main([*run, "--store", str(store), "--resume", key[1]]) == 0
    resumed = capsys.readouterr().out
    assert cli.main([*run, "--store", str(tmp_path / "unbroken")]) == 0
    unbroken = capsys.readouterr().out
    assert "imported from a checkpoint of PyTorch" in resumed

    def final(text: str) -> str:
        return re.findall(r"step 12/12 .*?results: (.*)", text)[-1]

    assert final(resumed) == final(unbroken)


def test_export_train_import_and_resume(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    program = write(tmp_path / "cnn.json", digits_cnn())
    store, out = tmp_path / "store", tmp_path / "export"
    argv = ["export", "torch", str(program), "--data", "digits", "--seed", "5", "-o", str(out)]
    assert cli.main(argv) == 0
    assert f"exported digits-cnn (the init of seed 5, level prod) to {out}/" in capsys.readouterr().out
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["source"] == {"checkpoint": None, "seed": 5, "step": 0}
    assert [d["split"] for d in manifest["data"]] == ["train", "test"]
    assert set(manifest["files"]) == {
        "model.py", "train.py", "weights.safetensors", "data/train.safetensors", "data/test.safetensors",
        "data/orders.safetensors",
    }  # fmt: skip
    trained = run_train(out, "--steps", "25")
    assert cli.main(["import", "torch", str(trained.checkpoint), "--export", str(out), "--store", str(store)]) == 0
    key = re.search(r"as checkpoint (sha256:[0-9a-f]{64})", capsys.readouterr().out)
    assert key is not None
    run = ["run", str(program), "--data", "digits", "--device", "cpu", "--determinism", "prod", "--seed", "5"]
    more = ["--store", str(store), "--resume", key[1], "--epochs", "2", "--manifest", str(tmp_path / "m.json")]
    assert cli.main([*run, *more]) == 0
    said = capsys.readouterr().out
    assert "imported from a checkpoint of PyTorch" in said and "step 44/44" in said

    # and back again: the resumed run's final checkpoint exported, its optimizer state and place kept
    final = json.loads((tmp_path / "m.json").read_text())["final"]
    again = tmp_path / "again"
    argv = ["export", "torch", str(program), "--data", "digits", "--checkpoint", final, "--store", str(store)]
    assert cli.main([*argv, "-o", str(again)]) == 0
    assert json.loads((again / "manifest.json").read_text())["source"]["step"] == 44
    more_steps = run_train(again, "--steps", "3")
    assert more_steps.checkpoint.name == "step-00000047.safetensors"


def test_a_checkpoint_of_another_export_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cnn, mlp = write(tmp_path / "cnn.json", digits_cnn()), write(tmp_path / "mlp.json", CASES["digits MLP"].program())
    for program, out in ((cnn, "a"), (mlp, "b")):
        assert cli.main(["export", "torch", str(program), "--data", "digits", "-o", str(tmp_path / out)]) == 0
    trained = run_train(tmp_path / "a", "--steps", "1")
    argv = ["import", "torch", str(trained.checkpoint), "--export", str(tmp_path / "b"), "--store", str(tmp_path / "s")]
    assert cli.main(argv) == 2
    assert "it is a checkpoint of program sha256:" in capsys.readouterr().err
    assert cli.main([*argv[:2], str(tmp_path / "a" / "model.py"), *argv[3:]]) == 2
    assert "not a safetensors file" in capsys.readouterr().err


def test_nf4_words_packed_here_are_the_devices(tmp_path: Path) -> None:
    """A checkpoint leaves the frozen NF4 base out: the export packs it again from the weights file, to the
    words the device packed at start."""
    from scellis.levels import Level
    from scellis.runtime.reference.device import ReferenceDevice
    from scellis.torchexport.bundle import pretrained_tensors
    from tests.torchexport.cases import scellis_run, tiny_encoder

    program, data, raw = tiny_encoder("qlora")
    run = scellis_run(program, ReferenceDevice(), data, steps=0, seed=1, level=Level.PROD, weights=raw)
    here = pretrained_tensors(run.session.compiled, raw)
    words = {name: t for name, t in here.items() if t.dtype == "U32"}
    assert len(words) == 12  # six linears a layer, two layers
    assert words == {name: run.start[name] for name in words}
