"""The Guide in Chromium, for the page's own program: every stage in order, with the memory stage's buffer
lifetimes after the kernel schedule; a program node followed to its IR ops (marked in the typed, backward
and optimizer IR), to the kernels computing them, to a kernel's WGSL with its dispatch and CPU-path call;
and the Guide following the program when a remedy changes it."""

from __future__ import annotations

from pathlib import Path

from appdriver import LoadedApp

from scellis.examples import digits_mlp
from scellis.levels import Level
from scellis.pipeline import STAGE_TITLES, compile_program

ARTIFACTS = Path(__file__).parent / "artifacts"
MEMORY = "memory plan (buffer lifetimes, training step)"


def titles(app: LoadedApp) -> list[str]:
    return app.page.locator("#guide-stages details summary").all_inner_texts()


def test_the_guide_follows_a_node_to_its_code(loaded: LoadedApp) -> None:
    page = loaded.page
    page.wait_for_selector("#guide[data-ready=yes]", timeout=120_000)
    expected = list(STAGE_TITLES)
    expected.insert(expected.index("kernel schedule (training step)") + 1, MEMORY)
    assert titles(loaded) == expected
    typed_ir = page.locator("#guide details[data-stage='typed IR'] pre").inner_text()
    assert typed_ir.startswith("func digits-mlp.train(\n    %pixels: f32[64,64] data,\n    %digit: i32[64] label,")
    key = compile_program(digits_mlp()).key(Level.PROD)
    summary = page.inner_text("#guide-summary")
    assert summary.endswith(f"kernels shown for level prod (choose a level to see its own). Training-step key {key}.")
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
    ARTIFACTS.mkdir(exist_ok=True)
    kind = page.evaluate("() => document.body.dataset.device")
    page.locator("#guide").screenshot(path=str(ARTIFACTS / f"guide-{kind}.png"))


def test_the_guide_follows_the_program_and_level(loaded: LoadedApp) -> None:
    page = loaded.page
    page.select_option("#train-level", "debug")
    page.wait_for_function(
        "() => document.getElementById('guide-summary').textContent.includes('kernels shown for level debug.')"
    )
    before = page.inner_text("#guide-summary")
    page.fill("#plan-cap", "0.1")  # 100 KiB: the digits MLP is red, a smaller batch is offered
    page.click("#plan-cap-form button[type=submit]")
    page.wait_for_selector("#plan-remedies button", timeout=120_000)
    page.click("#plan-remedies button >> nth=0")
    page.wait_for_function(
        "(before) => document.getElementById('guide-summary').textContent !== before", arg=before, timeout=120_000
    )
    assert "Training-step key sha256:" in page.inner_text("#guide-summary")
    page.click("#plan-cap-clear")
