"""The Fine-tune card in Chromium, on the page's device (WebGPU on SwiftShader, and the CPU path): a Hugging
Face model folder's files and a CSV of texts are given, the three ways to fine-tune are planned (full >
LoRA > QLoRA in bytes), QLoRA is trained through the Train card and its adapter exported in PEFT's format;
the editor draws the chosen program with its layers folded; the bundled all-MiniLM-L6-v2 with the bundled
SpamAssassin mails is read and planned the three ways; a
folder without its weights and a CSV without its label column are refused by name. Screenshots go to
e2e/artifacts/."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest
from appdriver import RUN_MS, LoadedApp
from playwright.sync_api import Page

from scellis.models.safetensors import read_safetensors
from tests.fixtures.tiny_bert import tiny_texts_csv, write_tiny_bert

ARTIFACTS = Path(__file__).resolve().parent / "artifacts"


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("finetune")
    write_tiny_bert(root / "tiny-bert")
    (root / "mails.csv").write_bytes(tiny_texts_csv())
    (root / "no-label.csv").write_bytes(b"text,kind\nhello,a\nworld,b\n")
    return root


def fill(page: Page, length: int, batch: int, epochs: int, level: str) -> None:
    page.fill("#ft-length", str(length))
    page.fill("#ft-batch", str(batch))
    page.fill("#ft-epochs", str(epochs))
    page.select_option("#ft-level", level)


def read_and_plan(page: Page) -> dict[str, dict]:
    """Presses Read and waits for the three plans; each row's total bytes and verdict, by way."""
    page.click("#ft-read")
    page.wait_for_selector("#finetune[data-state=planned], #finetune[data-state=error]", timeout=RUN_MS)
    assert page.get_attribute("#finetune", "data-state") == "planned", page.text_content("#ft-error")
    return page.evaluate(
        """() => Object.fromEntries([...document.querySelectorAll('#ft-plans tbody tr')].map((tr) => [
          tr.dataset.choice,
          { total: Number(tr.querySelector('[data-bytes]').dataset.bytes),
            verdict: tr.querySelector('[data-verdict]').dataset.verdict },
        ]))"""
    )


def test_a_model_folder_and_a_csv_train_qlora_and_export_a_peft_adapter(loaded: LoadedApp, folder: Path) -> None:
    page = loaded.page
    page.wait_for_selector("#finetune", state="visible")  # wired: it shows itself with its handlers
    model = folder / "tiny-bert"
    page.set_input_files(
        "#ft-model-files", [str(model / n) for n in ("config.json", "tokenizer.json", "model.safetensors")]
    )
    page.set_input_files("#ft-texts-file", str(folder / "mails.csv"))
    assert page.is_checked("input[name=ft-model][value=folder]") and page.is_checked("input[name=ft-texts][value=csv]")
    fill(page, length=16, batch=4, epochs=2, level="debug")
    plans = read_and_plan(page)
    assert list(plans) == ["full", "lora", "qlora"]
    assert plans["full"]["total"] > plans["lora"]["total"] > plans["qlora"]["total"]
    assert {p["verdict"] for p in plans.values()} == {"green"}
    facts = page.text_content("#ft-facts")
    assert "2 layers, hidden 64" in facts and "32 to train on, 8 held out" in facts and "ham, spam" in facts
    ARTIFACTS.mkdir(exist_ok=True)
    page.locator("#finetune").screenshot(path=str(ARTIFACTS / f"finetune-plans-{page_kind(page)}.png"))

    page.click("#ft-plans tr[data-choice=qlora] button")
    page.wait_for_function("() => document.getElementById('data-text-choice').checked")
    # the editor draws the encoder's 170 nodes with each layer folded into one box, and unfolds on request
    page.wait_for_selector("#editor .group-node[data-group=layer1]")
    folded = page.locator("#editor .react-flow__node").count()
    assert page.locator("#editor .group-node").count() == 4 and folded < 50, folded
    page.locator("#editor").screenshot(path=str(ARTIFACTS / f"finetune-editor-{page_kind(page)}.png"))
    page.click("#editor .editor-fold")
    page.wait_for_function("() => !document.querySelector('#editor .group-node')")
    assert page.locator("#editor .react-flow__node").count() == 170
    page.click("#editor .editor-fold")
    page.wait_for_selector("#editor .group-node[data-group=layer0] .group-unfold")
    page.click("#editor .group-node[data-group=layer0] .group-unfold")
    page.wait_for_function("() => !document.querySelector('#editor .group-node[data-group=layer0]')")
    page.wait_for_function("() => document.querySelector('#data-facts dd').textContent === 'mails.csv'")
    page.select_option("#train-level", "debug")
    page.fill("#train-epochs", "2")
    page.fill("#train-seed", "5")
    page.wait_for_selector("#plan[data-state=shown]", timeout=RUN_MS)
    page.click("#train-button")
    page.wait_for_selector("#run[data-phase=done], #run[data-phase=failed]", timeout=RUN_MS)
    assert page.get_attribute("#run", "data-phase") == "done", page.text_content("#train-status")
    assert page.is_visible("#run-export-adapter") and page.is_visible("#run-export-model")
    with page.expect_download() as download:
        page.click("#run-export-adapter")
    name = download.value.suggested_filename
    assert name == "mails-csv-qlora-peft-adapter-step16.zip", name
    with zipfile.ZipFile(io.BytesIO(Path(download.value.path()).read_bytes())) as archive:
        assert archive.namelist() == ["adapter_config.json", "adapter_model.safetensors", "head.safetensors"]
        config = json.loads(archive.read("adapter_config.json"))
        tensors = read_safetensors(archive.read("adapter_model.safetensors")).tensors
    assert (config["peft_type"], config["r"], config["target_modules"]) == (
        "LORA", 8, ["attention.self.query", "attention.self.value"]
    )  # fmt: skip
    b = tensors["base_model.model.encoder.layer.0.attention.self.query.lora_B.weight"]
    assert b.shape == (64, 8) and any(bytes(b.data))  # trained away from its zero start
    page.wait_for_selector("#run[data-exported=adapter]")
    page.locator("#run").screenshot(path=str(ARTIFACTS / f"finetune-exported-{page_kind(page)}.png"))


def page_kind(page: Page) -> str:
    return page.evaluate("() => document.body.dataset.device")


def test_a_folder_without_weights_and_a_csv_without_labels_are_refused_by_name(loaded: LoadedApp, folder: Path) -> None:
    page = loaded.page
    model = folder / "tiny-bert"
    page.set_input_files("#ft-model-files", [str(model / "config.json"), str(model / "tokenizer.json")])
    page.set_input_files("#ft-texts-file", str(folder / "mails.csv"))
    page.click("#ft-read")
    page.wait_for_selector("#finetune[data-state=error]")
    assert "the model folder lacks model.safetensors" in page.text_content("#ft-error")
    page.set_input_files(
        "#ft-model-files", [str(model / n) for n in ("config.json", "tokenizer.json", "model.safetensors")]
    )
    page.set_input_files("#ft-texts-file", str(folder / "no-label.csv"))
    page.click("#ft-read")
    page.wait_for_function("() => document.getElementById('finetune').dataset.state === 'error'"
                           " && document.getElementById('ft-error').textContent.includes('no-label.csv')")  # fmt: skip
    assert "no-label.csv has no 'label' column; its columns are 'text', 'kind'" in page.text_content("#ft-error")


def test_the_bundled_minilm_and_spam_mails_are_planned_three_ways(loaded: LoadedApp) -> None:
    page = loaded.page
    page.check("input[name=ft-model][value=bundled]")
    page.check("input[name=ft-texts][value=bundled]")
    fill(page, length=128, batch=32, epochs=3, level="prod")
    plans = read_and_plan(page)
    assert plans["full"]["total"] > plans["lora"]["total"] > plans["qlora"]["total"]
    facts = page.text_content("#ft-facts")
    assert "6 layers, hidden 384, 12 heads, vocabulary 30,522" in facts
    assert "SpamAssassin mails: 4,837 to train on, 1,209 held out" in facts
    page.locator("#finetune").screenshot(path=str(ARTIFACTS / f"finetune-minilm-{page_kind(page)}.png"))
