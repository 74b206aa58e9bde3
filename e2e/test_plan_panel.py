"""The memory plan panel in the page, with WebGPU (SwiftShader) and on the CPU path: the plan before
training, a memory limit that makes it red (training refused, with the engine's reasons), the batch
remedy that makes that red plan green and trains, and the allocation probe's answers kept across visits.
Screenshots of the panel go to e2e/artifacts/."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from appdriver import RUN_MS, LoadedApp, open_app, start_over, wait_ready
from playwright.sync_api import Page

from scellis.app import example_program, plan_example
from scellis.datasets import digits_csv, from_files, read_digits, to_files

ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
FILES = to_files(*read_digits(digits_csv().read_bytes()))


def cpython_plan(cap: int | None = None) -> dict:
    """The digits MLP's plan as the page's CPU path makes it, here under wasmtime (in a thread of its
    own: Playwright's event loop runs in this one)."""
    with ThreadPoolExecutor(1) as thread:
        run = thread.submit(asyncio.run, plan_example("site", FILES, example_program(), "cpu", "prod", cap=cap))
        return json.loads(run.result())


def mib(n: int) -> str:
    return repr(n / (1 << 20))  # exact: the page multiplies back by 2**20


@pytest.fixture(scope="module")
def expected() -> dict:
    """The plan, and a cap below it (red) where a smaller batch is green."""
    plan = cpython_plan()
    red = int(plan["total"] * 0.9)
    remedied = cpython_plan(red)
    assert remedied["verdict"]["color"] == "red"
    assert any(r["verdict"]["color"] == "green" and "batch" in r["change"] for r in remedied["remedies"])
    return {"plan": plan, "red": red}


def kind_of(loaded: LoadedApp) -> str:
    return loaded.page.evaluate("() => document.body.dataset.device")


def screenshot(page: Page, kind: str, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.locator("#plan").screenshot(path=str(ARTIFACTS / f"plan-panel-{kind}-{name}.png"))


def wait_plan(page: Page, verdict: str | None = None) -> dict:
    """Waits for the panel to show a plan (of `verdict`, when given); returns what it shows."""
    shown = "#plan[data-state=shown]" + (f"[data-verdict={verdict}]" if verdict else "")
    page.wait_for_selector(f"{shown}, #plan[data-state=error]")
    assert page.get_attribute("#plan", "data-state") == "shown", page.inner_text("#plan")
    return page.evaluate(
        """() => {
          const text = (id) => document.getElementById(id).textContent;
          return {
            verdict: text("plan-verdict"),
            badge: document.querySelector("#plan-verdict .verdict-badge").className,
            reasons: [...document.querySelectorAll("#plan-reasons li")].map((li) => li.textContent),
            program: text("plan-program"),
            budget: text("plan-budget-line"),
            segments: document.querySelectorAll("#plan-chart .plan-segment").length,
            markers: [...document.querySelectorAll("#plan-chart .plan-marker")].map((m) => m.textContent),
            chartLabel: document.getElementById("plan-chart").getAttribute("aria-label"),
            legend: [...document.querySelectorAll("#plan-legend li")].map((li) => li.textContent),
            legendTitles: [...document.querySelectorAll("#plan-legend data")].map((d) => d.title),
            functions: text("plan-functions"),
            remedies: [...document.querySelectorAll("#plan-remedies button")].map((b) => b.textContent),
            remediesShown: !document.getElementById("plan-remedies-box").hidden,
            measureShown: !document.getElementById("plan-measure").hidden,
          };
        }"""
    )


def set_cap(page: Page, cap: int) -> None:
    page.fill("#plan-cap", mib(cap))
    page.press("#plan-cap", "Enter")  # the limit's form: Enter sets it


def train(page: Page, epochs: int) -> dict:
    page.fill("#train-epochs", str(epochs))
    page.click("#train-button")
    done = "#train[data-state=done], #train[data-state=refused], #train[data-state=error]"
    page.wait_for_selector(done, timeout=RUN_MS)
    return page.evaluate(
        """() => ({state: document.getElementById('train').dataset.state,
          status: document.getElementById('train-status').textContent,
          memory: document.getElementById('train-memory').textContent,
          rows: [...document.querySelectorAll('#train-log tbody tr')].map((tr) =>
            [...tr.children].map((td) => td.textContent))})"""
    )


@pytest.fixture
def first_visit(loaded: LoadedApp, base_url: str) -> Iterator[Page]:
    """The page as a first visit opens it (no level chosen, nothing probed or kept), beside the module's."""
    app = open_app(loaded.context.browser, base_url)
    try:
        yield app.page
    finally:
        app.context.close()


def train_log(page: Page) -> list[list[str]]:
    rows = "[...document.querySelectorAll('#train-log tbody tr')]"
    return page.evaluate(f"() => {rows}.map((tr) => [...tr.children].map((td) => td.textContent))")


def test_the_plan_is_shown_before_training(loaded: LoadedApp, first_visit: Page, expected: dict) -> None:
    page, kind, plan = first_visit, kind_of(loaded), expected["plan"]
    assert page.get_attribute("#plan", "data-state") == "waiting"  # no level, no plan
    # until a level is chosen the Guide shows prod's kernels, and says so
    page.wait_for_selector("#guide[data-ready=yes]")
    assert "kernels shown for level prod (choose a level to see its own). Training-step key " in page.inner_text(
        "#guide-summary"
    )
    page.select_option("#train-level", "prod")
    shown = wait_plan(page)
    assert shown["verdict"] == "Verdict: green — fits with headroom" and "verdict-green" in shown["badge"]
    assert page.get_attribute("#plan-verdict", "aria-live") == "polite"
    assert shown["program"] == "Program: digits-mlp, batch 64 (the example as shipped)"
    assert shown["reasons"][0].startswith(f"takes {plan['total']:,} of a budget of ")
    assert shown["segments"] >= 5 and shown["markers"][0].startswith("budget ")
    assert " held while training, " in shown["chartLabel"] and " of a budget of " in shown["chartLabel"]
    parameters = plan["breakdown"][0]
    assert parameters["category"] == "parameters" and shown["legend"][0].startswith("parameters: ")
    assert shown["legendTitles"][0] == f"{parameters['bytes']:,} bytes"
    # the held-out split's 359 rows: evaluated in batches of 64 and a last batch of 39
    assert shown["legend"][-2].startswith("evaluation (compiled alongside): ")
    assert shown["legend"][-1].startswith("evaluation, last batch (compiled alongside): ")
    assert "training step" in shown["functions"] and "init" in shown["functions"]
    assert f"({plan['total']:,} bytes)" in shown["functions"]
    assert not shown["remediesShown"]
    if kind == "webgpu":
        assert "the allocation probe" in shown["budget"] and shown["budget"].endswith("measured now")
        assert shown["measureShown"]
    else:
        assert "wasm32 memory" in shown["budget"] and not shown["measureShown"]
    screenshot(page, kind, "green")


def test_a_memory_limit_makes_it_red_and_training_is_refused(loaded: LoadedApp, expected: dict) -> None:
    page, kind, total, red = loaded.page, kind_of(loaded), expected["plan"]["total"], expected["red"]
    start_over(page, "prod")
    set_cap(page, red)
    shown = wait_plan(page, "red")
    assert shown["verdict"].startswith("Verdict: red — does not fit") and "verdict-red" in shown["badge"]
    needs = f"needs {total:,} bytes, more than the budget of {red:,}"
    assert shown["reasons"][0].startswith(f"{needs} (limited to {red:,} bytes by the memory cap set in the page")
    assert shown["budget"].startswith("Budget: ") and f"limited to {red:,} bytes by the memory cap" in shown["budget"]
    assert shown["remediesShown"]  # remedies, or a sentence saying none was found
    assert all(text.startswith("Apply: ") for text in shown["remedies"])
    screenshot(page, kind, "red")
    log = train_log(page)  # an earlier run's, if any: a refused run adds nothing to it
    result = train(page, 1)
    assert result["state"] == "refused" and result["rows"] == log
    device = "google swiftshader" if kind == "webgpu" else "CPU path (WebAssembly) via browser WebAssembly"
    assert result["status"].startswith(f"refused: digits-mlp does not fit on {device}: {needs}"), result["status"]
    assert "Traceback" not in result["status"] and "verdict red" in result["memory"]


def test_the_batch_remedy_makes_it_green_and_it_trains(loaded: LoadedApp, expected: dict) -> None:
    page, kind = loaded.page, kind_of(loaded)
    start_over(page, "prod")
    set_cap(page, expected["red"])
    wait_plan(page, "red")
    button = page.locator("#plan-remedies button", has_text="Apply: batch ")
    label = button.inner_text()
    found = re.fullmatch(r"Apply: batch (\d+) — [\d.]+ KiB, green", label)
    assert found, label
    batch = int(found.group(1))
    button.focus()
    page.keyboard.press("Enter")  # remedies are buttons: the keyboard applies them
    shown = wait_plan(page, "green")
    assert shown["program"] == f"Program: digits-mlp, batch {batch} (changed: batch {batch})"
    assert shown["verdict"].startswith("Verdict: green") and not shown["remediesShown"]
    assert page.is_enabled("#plan-reset")
    screenshot(page, kind, "remedied")
    result = train(page, 1)
    assert result["state"] == "done", result["status"]
    train_rows = from_files(FILES)[0].n
    assert len(result["rows"]) == 1 and result["rows"][0][:2] == ["1", str(train_rows // batch)]
    assert "verdict green" in result["memory"]
    page.click("#plan-reset")
    shown = wait_plan(page, "red")
    assert shown["program"] == "Program: digits-mlp, batch 64 (the example as shipped)"
    assert page.is_disabled("#plan-reset")


def stored_probes(page: Page) -> list[dict]:
    return page.evaluate(
        """() => Object.keys(localStorage).filter((k) => k.startsWith('scellis.probes:'))
          .map((k) => JSON.parse(localStorage.getItem(k)))"""
    )


PROBE_KEY = "() => Object.keys(localStorage).find((k) => k.startsWith('scellis.probes:'))"
EARLIER = "2000-01-02T03:04:05.000Z"  # when an earlier visit measured, as the entry below is rewritten to say


def test_the_probe_is_kept_across_visits_and_measured_again_on_request(loaded: LoadedApp, base_url: str) -> None:
    if kind_of(loaded) != "webgpu":
        assert stored_probes(loaded.page) == []  # the CPU path's budget is read, never probed
        return
    start_over(loaded.page, "prod")
    wait_plan(loaded.page, "green")
    loaded.page.click("#plan-measure")  # every answer kept is now this plan's: the next visit's plan reads them
    wait_plan(loaded.page, "green")
    [entry] = stored_probes(loaded.page)
    identity = entry["identity"]  # SwiftShader names itself by vendor and architecture
    assert entry["format"] == "scellis-probes/2" and identity["vendor"] == "google"
    assert identity["limits"]["maxBufferSize"] > 0 and "Chrome" in identity["userAgent"]
    key = loaded.page.evaluate(PROBE_KEY)
    entry["answers"] = [{**a, "measured": EARLIER} for a in entry["answers"]]  # kept from a visit long ago
    loaded.page.evaluate("([key, text]) => localStorage.setItem(key, text)", [key, json.dumps(entry)])
    page = loaded.context.new_page()  # a later visit: same site, same storage
    page.goto(base_url)
    wait_ready(page)
    page.select_option("#train-level", "prod")
    shown = wait_plan(page, "green")
    assert shown["budget"].endswith(f"measured on {EARLIER[:10]}"), shown["budget"]  # nothing probed again
    page.click("#plan-measure")
    shown = wait_plan(page, "green")
    assert shown["budget"].endswith("measured now"), shown["budget"]
    [entry] = stored_probes(page)
    assert all(a["measured"] != EARLIER for a in entry["answers"])  # the old answers were dropped
    # a corrupt entry is not trusted: the next visit probes again and replaces it
    page.evaluate('(key) => localStorage.setItem(key, \'{"format": "scellis-probes/2", "answers": [\')', key)
    page.reload()
    wait_ready(page)
    page.select_option("#train-level", "prod")
    shown = wait_plan(page, "green")
    assert shown["budget"].endswith("measured now"), shown["budget"]
    assert json.loads(page.evaluate("(key) => localStorage.getItem(key)", key))["format"] == "scellis-probes/2"
    page.close()


PROBE_COUNT = """async (sizes, host) => {
    if (!host.gpu) return null;  // the CPU path reads its budget and never probes
    const live = new Set();
    const create = GPUDevice.prototype.createBuffer, destroy = GPUBuffer.prototype.destroy;
    GPUDevice.prototype.createBuffer = function (descriptor) {
      const buffer = create.call(this, descriptor);
      live.add(buffer);
      return buffer;
    };
    GPUBuffer.prototype.destroy = function () { live.delete(this); return destroy.call(this); };
    const answers = [];
    try {
      for (const size of sizes) answers.push([await host.gpu.probe(size), live.size]);
    } finally {
      GPUDevice.prototype.createBuffer = create;
      GPUBuffer.prototype.destroy = destroy;
    }
    return answers;
}"""


def test_the_probe_leaves_no_buffer_behind(loaded: LoadedApp) -> None:
    """Every buffer the page's allocation probe creates is destroyed before it answers, whether the
    bytes fit (300 MB, in several buffers) or not (1 TB: out of memory)."""
    page = loaded.page
    start_over(page, "prod")
    wait_plan(page)  # the page's device is open
    script = "([source, sizes]) => window.scellis.inWorker(source, sizes)"  # the device lives in the engine's worker
    answers = page.evaluate(script, [PROBE_COUNT, [300_000_000, 1_000_000_000_000]])
    if kind_of(loaded) == "cpu":
        assert answers is None and stored_probes(page) == []
        return
    assert answers == [[True, 0], [False, 0]]
