"""A run handed to PyTorch from the page and taken back, on WebGPU (SwiftShader) and on the CPU path: the
digits CNN is paused mid-run, "Export for PyTorch" downloads a ZIP (model.py, train.py, weights, data, epoch
orders, manifest naming the checkpoint the page saved), train.py goes on in one process and under
`torchrun --nproc_per_node=2 --strategy fsdp`, and the FSDP run's checkpoint, chosen in the resume form, is
taken back into the page's store and resumed to the end of the run. A simulation (the Ising model) is
exported the same way: its states and its draws, no data, a train.py that computes its results."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest
from appdriver import RUN_MS, LoadedApp, start_and_pause
from playwright.sync_api import Page
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from scellis.examples import digits_cnn, ising
from tests.torchexport.cases import run_train

pytest.importorskip("torch", reason="PyTorch is not installed: scripts/setup installs it from requirements-dev.txt")

EPOCHS = 2  # 44 steps


def open_program(page: Page, folder: Path, program: dict[str, object]) -> None:
    path = folder / f"{program['name']}.json"
    path.write_text(json.dumps(program))
    page.set_input_files(".editor-toolbar input[type=file]", str(path))
    page.wait_for_selector(f".editor-notice:text-is('Opened {path.name}.')")
    page.wait_for_selector(".editor[data-checked=yes]")
    page.select_option("#train-level", "debug")
    page.wait_for_function(
        "(name) => document.getElementById('plan').dataset.state === 'shown'"
        " && document.getElementById('plan-program').textContent.includes(name)",
        arg=program["name"],
    )


def exported_zip(page: Page, name: str, step: int, into: Path) -> Path:
    """Export for PyTorch pressed: the ZIP's name, and its folder unpacked under `into`."""
    assert page.is_visible("#run-export-torch")
    with page.expect_download(timeout=RUN_MS) as download:
        page.click("#run-export-torch")
    assert download.value.suggested_filename == f"{name}-pytorch-step{step}.zip"
    page.wait_for_selector("#run[data-exported=torch]")
    with zipfile.ZipFile(io.BytesIO(Path(download.value.path()).read_bytes())) as archive:
        archive.extractall(into)
    return into / f"{name}-torch"


def test_export_train_with_torchrun_and_take_back(loaded: LoadedApp, tmp_path: Path) -> None:
    page = loaded.page
    open_program(page, tmp_path, digits_cnn())
    start_and_pause(page, EPOCHS, "4")
    page.wait_for_selector("#run[data-phase=paused], #run[data-phase=done]", timeout=RUN_MS)
    paused = int(page.get_attribute("#run", "data-step") or 0)
    assert page.get_attribute("#run", "data-phase") == "paused" and 0 < paused < 44
    folder = exported_zip(page, "digits-cnn", paused, tmp_path)
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["source"]["step"] == paused and manifest["source"]["checkpoint"].startswith("sha256:")
    assert manifest["program"]["level"] == "debug"

    alone = run_train(folder, "--steps", "6", out="alone")
    assert alone.checkpoint.name == f"step-{paused + 6:08d}.safetensors"
    sharded = run_train(folder, "--steps", "6", "--strategy", "fsdp", processes=2, out="fsdp")
    assert sharded.checkpoint.name == alone.checkpoint.name

    page.set_input_files("#resume-torch", str(sharded.checkpoint))
    page.wait_for_selector("#resume-form[data-imported]", timeout=RUN_MS)
    key = page.get_attribute("#resume-form", "data-imported")
    assert key is not None and key.startswith("sha256:"), page.text_content("#resume-error")
    status = page.text_content("#resume-torch-status") or ""
    assert f"took back step {paused + 6} of PyTorch" in status and "fsdp x 2" in status
    assert page.input_value("#resume-key") == key and page.input_value("#train-level") == "debug"
    page.click("#resume-button")
    page.wait_for_selector("#run[data-phase=done], #run[data-phase=failed]", timeout=RUN_MS)
    assert page.get_attribute("#run", "data-phase") == "done", page.text_content("#train-status")
    assert page.get_attribute("#run", "data-step") == str(EPOCHS * 22)
    events = page.eval_on_selector_all("#run-events li", "(items) => items.map((li) => li.textContent)")
    assert any("imported from a checkpoint of PyTorch" in e and "fsdp x 2" in e for e in events), events


def test_a_file_train_py_did_not_write_is_refused(loaded: LoadedApp, tmp_path: Path) -> None:
    page = loaded.page
    other = tmp_path / "other.safetensors"
    other.write_bytes(b"\x08\0\0\0\0\0\0\0{}      ")
    page.set_input_files("#resume-torch", str(other))
    page.wait_for_selector("#resume-form[data-imported=failed]", timeout=RUN_MS)
    assert "has no scellis.torch metadata" in (page.text_content("#resume-error") or "")


def test_a_simulation_is_exported_and_taken_back(loaded: LoadedApp, tmp_path: Path) -> None:
    page = loaded.page
    # a million sweeps, far more than a chunk of steps however fast the machine: paused long before the end
    open_program(page, tmp_path, ising(2.2, size=8, chains=6, sweeps=1000, epochs=1000))
    start_and_pause(page, 1000, "3")
    page.wait_for_selector("#run[data-phase=paused]", timeout=RUN_MS)  # (the page's last run may be done)
    paused = int(page.get_attribute("#run", "data-step") or 0)
    assert 0 < paused < 10**6
    folder = exported_zip(page, "ising", paused, tmp_path)
    assert not (folder / "data").exists() and json.loads((folder / "manifest.json").read_text())["data"] == []
    steps = 1000 - paused % 1000  # to the end of the epoch, where the results are computed
    more = run_train(folder, "--steps", str(steps), out="more")
    assert more.checkpoint.name == f"step-{paused + steps:08d}.safetensors"
    assert f"step {paused + steps} (epoch {(paused + steps) // 1000}): results: abs_magnetisation" in more.output
    page.set_input_files("#resume-torch", str(more.checkpoint))
    try:  # (an earlier test's file may have been refused: its state stays until this one is read)
        page.wait_for_selector("#resume-form[data-imported^='sha256:']", timeout=RUN_MS)
    except PlaywrightTimeoutError:
        raise AssertionError(page.text_content("#resume-error")) from None
    assert f"took back step {paused + steps} of PyTorch" in (page.text_content("#resume-torch-status") or "")
