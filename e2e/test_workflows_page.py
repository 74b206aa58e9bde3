"""The simulation and the analysis in the page, on WebGPU (SwiftShader) and on the CPU path: opened from the
editor's examples (the analysis chooses the breast cancer data in the Data card), planned, run with the
train card saying Run, and their results shown with standard errors and intervals; the option pricer's
manifest pins no data and, from the CPU path, verifies bit for bit in CPython."""

from __future__ import annotations

import json
import math
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from appdriver import RUN_MS, LoadedApp
from playwright.sync_api import Page

from scellis import cli
from scellis.examples import black_scholes_call, logistic_bootstrap, option_pricing

ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
OPTION = {"spot": 100.0, "strike": 100.0, "rate": 0.05, "volatility": 0.2, "years": 1.0}


def open_example(page: Page, name: str) -> None:
    page.select_option(".editor-examples select", label=name)
    page.get_by_role("button", name="Open", exact=True).click()


def import_program(page: Page, program: dict, folder: Path) -> None:
    """A smaller version of an example, through the editor's file picker (as a user's own file)."""
    path = folder / f"{program['name']}.json"
    path.write_text(json.dumps(program))
    page.set_input_files(".editor-toolbar input[type=file]", str(path))
    page.wait_for_selector(f".editor-notice:text-is('Opened {path.name}.')")
    page.wait_for_selector(".editor[data-checked=yes]")  # and handed to the page, which plans it next


def wait_plan_of(page: Page, level: str, program: str) -> None:
    """Waits for the plan of `program` (as the plan panel names it) at `level`: the editor has checked
    the program and the page took it."""
    page.select_option("#train-level", level)
    page.wait_for_function(
        f"() => document.getElementById('plan').dataset.state === 'shown'"
        f" && document.getElementById('plan-program').textContent.includes('{program}')",
    )


def run_to_the_end(page: Page, level: str, program: str) -> dict:
    wait_plan_of(page, level, program)
    assert page.text_content("#train-button") == "Run"
    page.fill("#train-seed", "4")
    page.click("#train-button")  # the train card says it is running at once: an earlier run's end is not waited for
    page.wait_for_selector("#train[data-state=done], #train[data-state=error]", timeout=RUN_MS)
    return page.evaluate(
        """() => ({
        phase: document.getElementById('run').dataset.phase,
        status: document.getElementById('train-status').textContent,
        results: Object.fromEntries([...document.querySelectorAll('#run-results dt')].map(
            (dt) => [dt.textContent, dt.nextElementSibling.textContent])),
        })"""
    )


def numbers(text: str) -> list[float]:
    return [float(v) for v in re.findall(r"-?\d+(?:\.\d+)?(?:e-?\d+)?", text)]


def test_the_option_pricer_runs_and_pins_no_data(loaded: LoadedApp, tmp_path: Path) -> None:
    page = loaded.page
    open_example(page, "option-pricing")
    page.wait_for_function("() => document.getElementById('train').dataset.trains === 'no'")
    import_program(page, option_pricing(2**14, 64, **OPTION), tmp_path)
    wait_plan_of(page, "debug", "option-pricing, batch 16384")
    assert page.input_value("#train-epochs") == "1"  # the program's own: more epochs would be more years
    done = run_to_the_end(page, "debug", "option-pricing, batch 16384")
    assert done["phase"] == "done", done["status"]
    assert done["status"].startswith("done: results: european ")
    price, se = numbers(done["results"]["european"])[:2]
    assert done["results"]["european"].endswith("(standard error)")
    assert abs(price - black_scholes_call(**OPTION)) < 3 * se
    asian = numbers(done["results"]["asian"])[0]
    assert 0 < asian < price
    ARTIFACTS.mkdir(exist_ok=True)
    page.locator("#run").screenshot(path=str(ARTIFACTS / f"simulation-{page_kind(page)}.png"))
    with page.expect_download() as download:
        page.click("#run-manifest")
    path = tmp_path / download.value.suggested_filename
    download.value.save_as(path)
    manifest = json.loads(path.read_text())
    assert manifest["data"] == [] and manifest["steps"] == 64
    assert manifest["metrics"]["metric/european"] == pytest.approx(price, rel=1e-4)
    if page_kind(page) == "cpu":  # the CPU path's bits are the same in CPython (wasmtime)
        argv = ["verify", str(path), "--store", str(tmp_path / "store")]
        with ThreadPoolExecutor(1) as thread:  # asyncio.run needs a thread of its own
            assert thread.submit(cli.main, argv).result() == 0
    rerun_a_link_without_data(loaded, manifest["final"])


def rerun_a_link_without_data(loaded: LoadedApp, final: str) -> None:
    """The run's share link, opened in another page, asks for no data: one button re-runs it and verifies."""
    page = loaded.page
    page.click("#run-link")
    page.wait_for_function("() => document.getElementById('run-link-text').value.includes('#run=')")
    shared = loaded.context.new_page()
    try:
        shared.goto(page.input_value("#run-link-text"))
        shared.wait_for_selector("#shared[data-state=asking]")
        assert "reads no data" in shared.inner_text("#shared-summary")
        assert shared.is_hidden("#shared-data") and shared.is_visible("#shared-rerun")
        shared.click("#shared-rerun")
        ends = ", ".join(f"#shared[data-state={s}]" for s in ("verified", "mismatch", "different", "error"))
        shared.wait_for_selector(ends, timeout=RUN_MS)
        verdict = shared.inner_text("#shared-verdict") if shared.is_visible("#shared-verdict") else ""
        assert shared.get_attribute("#shared", "data-state") == "verified", verdict or shared.inner_text("#shared")
        assert f"the pinned final checkpoint {final} bit for bit" in verdict
    finally:
        shared.close()


def page_kind(page: Page) -> str:
    return page.evaluate("() => document.body.dataset.device")


def test_the_analysis_chooses_its_data_and_shows_statsmodels_numbers(loaded: LoadedApp, tmp_path: Path) -> None:
    page = loaded.page
    open_example(page, "logistic-bootstrap")
    page.wait_for_function("() => document.querySelector('input[name=data-source][value=cancer]').checked")
    import_program(page, logistic_bootstrap(resamples=200), tmp_path)
    done = run_to_the_end(page, "prod", "logistic-bootstrap")
    assert done["phase"] == "done", done["status"]
    results = done["results"]
    coefficient, se = numbers(results["coef_mean_radius"])[:2]
    assert coefficient == pytest.approx(-4.9187, abs=2e-3) and se == pytest.approx(0.54234, abs=2e-4)  # statsmodels
    low, high = numbers(results["coef_mean_radius"].split("interval")[1])
    assert low < coefficient < high
    radius = numbers(results["average_radius"])
    assert radius[0] == pytest.approx(14.1273, abs=1e-3) and radius[1] < radius[0] < radius[2]
    assert not math.isnan(coefficient)
    page.locator("#run").screenshot(path=str(ARTIFACTS / f"analysis-{page_kind(page)}.png"))
