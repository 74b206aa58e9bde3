"""The run panel in Chromium, on the page's device (WebGPU on SwiftShader, and the CPU path), at debug:
a run is paused, stepped one step, saved and continued; the panel shows the rate and the time left while
it runs, its decision log and its checkpoints by key. Its manifest downloads and verifies in CPython (on
the CPU path: the same bits as wasmtime's). Its share link opened in a new page asks for the data,
checks it, re-runs the run and says it reached the pinned final key. A new page resumes the run from the
key it saved mid-run and ends on the same final key."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from appdriver import RUN_MS, LoadedApp, start_and_pause, wait_ready
from playwright.sync_api import Page
from safetensors import safe_open

from scellis import cli

ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
EPOCHS = 4  # 88 steps of the digits MLP


def state(page: Page) -> dict:
    return page.evaluate(
        """() => ({
        phase: document.getElementById('run').dataset.phase,
        step: Number(document.getElementById('run').dataset.step),
        stepsPerS: document.getElementById('run').dataset.stepsPerS,
        etaS: document.getElementById('run').dataset.etaS,
        figures: document.getElementById('run-figures').textContent,
        status: document.getElementById('train-status').textContent,
        events: [...document.querySelectorAll('#run-events li')].map((li) => li.textContent),
        keys: [...document.querySelectorAll('#run-checkpoints li')].map((li) => li.dataset.key),
        rows: document.querySelectorAll('#train-log tbody tr').length,
        pinned: document.getElementById('run-pinned-status').textContent,
        link: document.getElementById('run-link-text').value,
        })"""
    )


def wait_phase(page: Page, phases: str) -> dict:
    selector = ", ".join(f"#run[data-phase={p}]" for p in phases.split())
    page.wait_for_selector(selector, timeout=RUN_MS)
    return state(page)


def pause_step_save_continue(page: Page) -> str:
    """The run paused at once, one step, a state saved, then on to the end; returns the saved key."""
    start_and_pause(page, EPOCHS, "5")
    paused = wait_phase(page, "paused done")
    assert paused["phase"] == "paused", "the run ended before it could be paused"
    assert paused["status"] == f"paused after step {paused['step']}"
    # the rate and the time left are measured (their wording, which depends on the speed, is unit-tested)
    assert float(paused["stepsPerS"]) > 0 and float(paused["etaS"]) > 0
    assert paused["figures"].startswith(f"step {paused['step']} of {EPOCHS * 22} · epoch ")
    page.click("#run-step")
    page.wait_for_function(f"() => document.getElementById('run').dataset.step === '{paused['step'] + 1}'")
    page.click("#run-save")
    page.wait_for_function("() => document.getElementById('run-pinned-status').textContent.startsWith('saved ')")
    saved = state(page)
    key = saved["pinned"].removeprefix("saved ")
    assert key in saved["keys"]
    assert page.input_value("#resume-key") == key  # the last run's newest key, kept for a later visit
    page.click("#run-continue")
    done = wait_phase(page, "done failed")
    assert done["phase"] == "done", done["status"]
    assert done["step"] == EPOCHS * 22 and done["rows"] == EPOCHS
    assert done["figures"].startswith(f"step {EPOCHS * 22} of {EPOCHS * 22} · epoch {EPOCHS} of {EPOCHS} · ")
    assert done["status"].startswith("done: test accuracy")
    return key


def screenshot(page: Page, selector: str, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.locator(selector).screenshot(path=str(ARTIFACTS / f"{name}.png"))


def download_manifest(page: Page, folder: Path, prefix: str = "") -> Path:
    with page.expect_download() as download:
        page.click("#run-manifest")
    path = folder / (prefix + download.value.suggested_filename)
    download.value.save_as(path)
    assert download.value.suggested_filename.startswith("digits-mlp-") and path.name.endswith(".manifest.json")
    return path


def download_weights(page: Page, folder: Path) -> dict:
    """The exported weights, read by the safetensors package: names, metadata, the first weight."""
    with page.expect_download() as download:
        page.click("#run-weights")
    path = folder / download.value.suggested_filename
    download.value.save_as(path)
    with safe_open(str(path), framework="numpy") as f:
        return {"name": path.name, "names": sorted(f.keys()), "meta": f.metadata(), "w": f.get_tensor("hidden.weight")}


def verify_in_cpython(path: Path, folder: Path, capsys: pytest.CaptureFixture[str]) -> str:
    argv = ["verify", str(path), "--data", "digits", "--store", str(folder / "store")]
    with ThreadPoolExecutor(1) as thread:  # asyncio.run needs a thread of its own: Playwright's loop runs here
        status = thread.submit(cli.main, argv).result()
    out = capsys.readouterr().out
    assert status == 0, out
    return out


def share_link(page: Page) -> str:
    page.click("#run-link")
    page.wait_for_function("() => document.getElementById('run-link-text').value.includes('#run=')")
    return state(page)["link"]


def rerun_from_link(shared: Page, link: str, final: str) -> None:
    shared.goto(link)
    wait_ready(shared)
    shared.wait_for_selector("#shared[data-state=asking]")
    facts = shared.inner_text("#shared-facts")
    assert "Final checkpoint" in facts and final in facts
    shared.click("#shared-site-data")
    ends = ("verified", "mismatch", "different", "error")
    shared.wait_for_selector(", ".join(f"#shared[data-state={s}]" for s in ends), timeout=RUN_MS)
    verdict = shared.inner_text("#shared-verdict") if shared.is_visible("#shared-verdict") else ""
    assert shared.get_attribute("#shared", "data-state") == "verified", verdict or shared.inner_text("#shared")
    assert f"verified: the re-run reached the pinned final checkpoint {final} bit for bit" in verdict


def resume_in_a_new_page(resumed: Page, address: str, key: str, folder: Path) -> str:
    """A later visit (IndexedDB and the last run's record are the same) resumes from `key`; its final key."""
    resumed.goto(address)
    wait_ready(resumed)
    resumed.wait_for_function("() => document.getElementById('resume-key').value.startsWith('sha256:')")
    resumed.fill("#resume-key", key)
    resumed.click("#resume-button")
    again = wait_phase(resumed, "done failed")
    assert again["phase"] == "done", again["status"]
    assert again["step"] == EPOCHS * 22
    return json.loads(download_manifest(resumed, folder, "resumed-").read_text())["final"]


def test_pause_step_save_continue_then_manifest_and_link(
    loaded: LoadedApp, request: pytest.FixtureRequest, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kind = request.node.callspec.params["loaded"]
    page = loaded.page
    key = pause_step_save_continue(page)
    screenshot(page, "#train", f"run-panel-{kind}")
    manifest = json.loads(download_manifest(page, tmp_path).read_text())
    assert (manifest["level"], manifest["seed"], manifest["device"], manifest["steps"]) == ("debug", 5, kind, 88)
    assert manifest["environment"]["browser"].startswith("Mozilla/5.0")
    final = manifest["final"]
    weights = download_weights(page, tmp_path)
    assert weights["name"] == "digits-mlp-step88.safetensors"
    assert weights["names"] == ["hidden.bias", "hidden.weight", "logits.bias", "logits.weight"]
    assert weights["meta"]["step"] == "88" and weights["meta"]["device"] == manifest["environment"]["device"]
    assert weights["w"].shape == (64, 128) and np.isfinite(weights["w"]).all()
    if kind == "cpu":  # the CPU path's bits at debug are wasmtime's: CPython verifies them
        path = next(tmp_path.glob("digits-mlp-*.manifest.json"))
        out = verify_in_cpython(path, tmp_path, capsys)
        assert f"verified: the re-run reached the pinned final checkpoint {final}" in out
    link = share_link(page)
    shared = loaded.context.new_page()
    try:
        rerun_from_link(shared, link, final)
        screenshot(shared, "#shared", f"shared-run-{kind}")
    finally:
        shared.close()
    resumed = loaded.context.new_page()
    try:  # resumed from the key saved mid-run: the same bits as the run that went on
        assert resume_in_a_new_page(resumed, link.partition("#")[0], key, tmp_path) == final
    finally:
        resumed.close()


def test_a_resume_key_that_is_wrong_is_named(loaded: LoadedApp) -> None:
    page = loaded.page
    page.fill("#resume-key", "sha256:12")
    page.click("#resume-button")
    assert page.inner_text("#resume-error").startswith('a checkpoint key is "sha256:" and 64 hexadecimal digits')
    page.fill("#resume-key", "sha256:" + "0" * 64)
    page.click("#resume-button")
    page.wait_for_selector("#resume-error:has-text('Cannot resume')")
    text = page.inner_text("#resume-error")
    assert "no object sha256:" + "0" * 64 in text and 'IndexedDB database "scellis"' in text, text
