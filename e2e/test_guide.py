"""The Guide in Chromium, for the page's own program: every stage in order, with the memory stage's buffer
lifetimes after the kernel schedule; a program node followed to its IR ops (marked in the typed, backward
and optimizer IR), to the kernels computing them, to a kernel's WGSL (its own shader, taken from the WGSL
stage) with its dispatch and CPU-path call; and the Guide following the program when a remedy changes it."""

from __future__ import annotations

from pathlib import Path

from appdriver import LoadedApp, start_over
from playwright.sync_api import Page

from scellis.codegen import render
from scellis.examples import digits_mlp
from scellis.guide import STAGE_TITLES, step_schedule
from scellis.levels import Level
from scellis.pipeline import compile_program

ARTIFACTS = Path(__file__).parent / "artifacts"
MEMORY = "memory plan (buffer lifetimes, training step)"


STEP_KEY = "() => document.getElementById('guide-summary').textContent.split('Training-step key ')[1]"


def step_key(page: Page) -> str:
    return page.evaluate(STEP_KEY)


def titles(app: LoadedApp) -> list[str]:
    return app.page.locator("#guide-stages details summary").all_inner_texts()


def test_the_guide_follows_a_node_to_its_code(loaded: LoadedApp) -> None:
    page = loaded.page
    start_over(page, "prod")
    at = compile_program(digits_mlp()).at(Level.PROD)
    key = at.key
    shown = f"kernels shown for level prod. Training-step key {key}."
    page.wait_for_function(  # the Guide of the example as shipped, at prod
        "(shown) => document.getElementById('guide-summary').textContent.endsWith(shown)", arg=shown
    )
    expected = list(STAGE_TITLES)
    expected.insert(expected.index("kernel schedule (training step)") + 1, MEMORY)
    assert titles(loaded) == expected
    # the kernels the page's device runs: the Guide lowers with its features (a software adapter's, its bindings)
    features = frozenset(f for f in (page.get_attribute("#guide-summary", "data-features") or "").split(",") if f)
    at = compile_program(digits_mlp()).at(Level.PROD, features)
    typed_ir = page.locator("#guide details[data-stage='typed IR'] pre").inner_text()
    assert typed_ir.startswith("func digits-mlp.train(\n    %pixels: f32[64,64] data,\n    %digit: i32[64] label,")
    bars = page.locator(f"#guide details[data-stage='{MEMORY}'] rect").count()
    assert bars > 20  # every buffer of the step: parameters, optimizer state, activations, gradients...

    page.click("#guide-nodes button[data-node=hidden]")
    marked = page.locator("#guide details[data-stage='typed IR'] .guide-line.marked").all_inner_texts()
    assert marked and all("%" in line for line in marked)
    assert any("matmul(%pixels, %hidden.weight)" in line for line in marked)
    assert page.locator("#guide details[data-stage='backward IR'] .guide-line.marked").count() >= 3
    kernels = page.locator("#guide-detail .guide-kernels button").all_inner_texts()
    assert kernels and kernels[0].startswith("k0: matmul")
    page.click("#guide-detail .guide-kernels button >> nth=0")
    box = page.inner_text("#guide-detail .guide-kernel")
    assert "workgroups" in box and "CPU path: sc_cpu_" in box and "@group(0) @binding(0)" in box
    assert "Computes ops of: hidden" in box
    code = page.locator("#guide-detail .guide-kernel pre").text_content()  # its lines of the WGSL stage
    schedule = step_schedule(at)
    assert code == render(schedule.kernels[0], schedule).source  # exactly k0's own shader
    ARTIFACTS.mkdir(exist_ok=True)
    kind = page.evaluate("() => document.body.dataset.device")
    page.locator("#guide").screenshot(path=str(ARTIFACTS / f"guide-{kind}.png"))


def test_the_guide_follows_the_program_and_level(loaded: LoadedApp) -> None:
    page = loaded.page
    start_over(page, "debug")
    shown = f"kernels shown for level debug. Training-step key {compile_program(digits_mlp()).at(Level.DEBUG).key}."
    page.wait_for_function(  # the Guide of the example as shipped, at debug
        "(shown) => document.getElementById('guide-summary').textContent.endsWith(shown)", arg=shown
    )
    before = step_key(page)
    page.fill("#plan-cap", "0.15")  # 150 KiB: the digits MLP is red, a smaller batch is offered
    page.click("#plan-cap-form button[type=submit]")
    page.wait_for_selector("#plan-remedies button")
    page.click("#plan-remedies button >> nth=0")
    # the key, not the summary: a new compile of the same program is a new summary (its time) too
    page.wait_for_function(f"(before) => ({STEP_KEY})() !== before", arg=before)
    assert step_key(page).startswith("sha256:")
    page.click("#plan-cap-clear")
