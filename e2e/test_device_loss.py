"""WebGPU device loss in Chromium (SwiftShader): a debug-level run that checkpoints every few steps has its
GPUDevice destroyed at a random step (device.destroy() in the engine's worker, where the device lives),
ten times with fixed seeds. Each time the page names the loss (GPUDeviceLostInfo's reason and message, the
device), says the state could not be saved from the lost GPU, and offers "Reopen GPU and resume from the
last checkpoint"; pressing it resumes on a fresh device to the uninterrupted run's final key. An allocation
probe asked of the lost device answers with the loss and stores nothing. WebGPU only: the CPU path has no
device to lose."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path

import pytest
from appdriver import RUN_MS, LoadedApp, launch, open_app
from playwright.sync_api import Page, Playwright

from scellis.examples import digits_mlp
from scellis.graph import validate

TRIALS = 10
FAULT_SEED = 19  # where the faults land
EVERY = 4  # steps between the loop program's checkpoints
LOST_PROBE = 64 * 1024**3  # what the probe of a lost device once said fitted
ENDS = ("done", "failed")  # the run panel's phases where a run has ended

# Counts the compute passes submitted to the engine's device (one per step, after init's) and destroys
# the device right after the pass numbered `target` is submitted (0: never). Installed once per worker;
# `host` is the engine's host module (enginehost.js), whose `gpu` is the device open now.
ARM = """(target, host) => {
  const fault = (globalThis.deviceFault ??= { passes: 0, target: 0, pending: false });
  if (!fault.installed) {
    fault.installed = true;
    const begin = GPUCommandEncoder.prototype.beginComputePass;
    GPUCommandEncoder.prototype.beginComputePass = function (...args) {
      fault.pending = true;
      return begin.apply(this, args);
    };
    const submit = GPUQueue.prototype.submit;
    GPUQueue.prototype.submit = function (buffers) {
      const out = submit.call(this, buffers);
      if (fault.pending) {
        fault.pending = false;
        fault.passes += 1;
        if (fault.passes === fault.target) host.gpu.device.destroy();
      }
      return out;
    };
  }
  Object.assign(fault, { passes: 0, target, pending: false });
  return true;
}"""
PASSES = "() => globalThis.deviceFault.passes"
# The allocation probe asked of the device the run lost: its answer, or the error it gives instead.
PROBE_LOST = """async (size, host) => {
  const gpu = host.gpu;
  try {
    return { answered: await gpu.measure(size), lost: gpu.lost };
  } catch (error) {
    return { error: error.name, message: error.message, lost: gpu.lost };
  }
}"""
STORED = """() => Object.keys(localStorage).filter((k) => k.startsWith('scellis.probes:'))
  .flatMap((k) => JSON.parse(localStorage.getItem(k)).answers)"""


def small_program() -> dict:
    """The digits as a linear model trained by SGD, with no metric but its loss (the fewest kernels for
    SwiftShader to compile on each fresh device): one epoch of 22 steps, a checkpoint every EVERY steps."""
    program = digits_mlp()
    gone = {"hidden", "relu", "accuracy"}
    program["nodes"] = [n for n in program["nodes"] if n["id"] not in gone]
    program["edges"] = [e for e in program["edges"] if not {e["from"]["node"], e["to"]["node"]} & gone]
    program["edges"].append({"from": {"node": "pixels", "port": "out"}, "to": {"node": "logits", "port": "x"}})
    program["metrics"] = []
    program["optimizer"] = {"kind": "sgd", "lr": 0.1}
    rule = {"on": "step", "if": {"every": EVERY}, "then": ["checkpoint"]}
    program["loop"] = {"epochs": 1, "batch_size": 64, "rules": [rule]}
    validate(program)
    return program


@pytest.fixture(scope="module")
def app(playwright: Playwright, base_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LoadedApp]:
    """The app in Chromium with WebGPU, the small program opened in its editor (checked, no problems), set
    to train at debug."""
    browser = launch(playwright, webgpu=True)
    try:
        loaded = open_app(browser, base_url)
        kinds = loaded.page.evaluate("() => window.scellis.report.devices.map((d) => d.kind)")
        assert kinds[0] == "webgpu" and loaded.page.evaluate("() => document.body.dataset.device") == "webgpu"
        path = tmp_path_factory.mktemp("loss") / "small.json"
        path.write_text(json.dumps(small_program()))
        page = loaded.page
        page.set_input_files(".editor-toolbar input[type=file]", str(path))
        page.wait_for_selector(".react-flow__node[data-id=accuracy]", state="detached")
        page.select_option("#train-level", "debug")
        page.fill("#train-epochs", "1")
        page.fill("#train-seed", "5")
        page.wait_for_function(
            "() => document.getElementById('plan-program').textContent.endsWith('(changed: edited)')"
        )
        yield loaded
    finally:
        browser.close()


def in_worker(page: Page, script: str, arg: object = None) -> object:
    return page.evaluate("([source, arg]) => window.scellis.inWorker(source, arg)", [script, arg])


def final_key(page: Page) -> str:
    """The finished run's final checkpoint, as its manifest pins it."""
    with page.expect_download() as download:
        page.click("#run-manifest")
    return json.loads(Path(download.value.path()).read_text())["final"]


# Presses a button and records each phase the run panel goes through from then on.
PRESS = """(button) => {
  const run = document.getElementById('run');
  window.phases = [];
  window.phaseWatch?.disconnect();
  window.phaseWatch = new MutationObserver(() => window.phases.push(run.dataset.phase));
  window.phaseWatch.observe(run, { attributes: true, attributeFilter: ['data-phase'] });
  document.getElementById(button).click();
}"""


def press_until(page: Page, button: str, phases: tuple[str, ...]) -> str:
    """Presses `button`; the first of `phases` the run panel reaches after that."""
    page.evaluate(PRESS, button)
    found = page.wait_for_function(
        "(phases) => window.phases.find((p) => phases.includes(p))", arg=list(phases), timeout=RUN_MS
    )
    return str(found.json_value())


def test_a_lost_device_is_named_and_the_run_resumes_to_the_same_key(app: LoadedApp, fault_log) -> None:
    page = app.page
    in_worker(page, ARM, 0)
    assert press_until(page, "train-button", ENDS) == "done", page.inner_text("#train-status")
    final = final_key(page)
    passes = in_worker(page, PASSES)
    assert isinstance(passes, int) and passes > EVERY + 2
    faults = random.Random(FAULT_SEED)
    survived = same = stored_from_lost = named = 0
    for trial in range(TRIALS):
        # after the first checkpoint (init's pass, then one a step) and before evaluation's passes
        in_worker(page, ARM, faults.randint(EVERY + 2, 22))
        assert press_until(page, "train-button", ENDS) == "failed", f"trial {trial}: the device was not lost"
        page.wait_for_selector("#run-lost[data-state=offered]")
        said = page.inner_text("#run-lost-text")
        status = page.inner_text("#train-status")
        named += "the GPU was lost (destroyed: " in status and "AbortError" not in status + said
        assert "could not be saved: it was on the GPU that was lost" in said, said
        size = LOST_PROBE + trial
        probed = in_worker(page, PROBE_LOST, size)
        assert probed["error"] == "GpuLostError" and probed["lost"]["reason"] == "destroyed", probed
        stored_from_lost += sum(1 for a in page.evaluate(STORED) if a["bytes"] == size)
        if press_until(page, "run-reopen", ENDS) != "done":
            continue
        survived += 1
        same += final_key(page) == final
        assert page.inner_text("#run-lost-status").startswith("Reopened "), "the device in use was not named"
    fault_log(
        "device-loss",
        trials=TRIALS,
        faults_survived=survived,
        resumed_to_same_key=same,
        losses_named=named,
        probe_answers_stored_from_lost_devices=stored_from_lost,
    )
    assert (survived, same, named, stored_from_lost) == (TRIALS, TRIALS, TRIALS, 0)
