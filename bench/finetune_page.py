"""Fine-tuning in the page, headless Chromium: the bundled all-MiniLM-L6-v2 and SpamAssassin mails read cold,
the three ways planned, and QLoRA trained through the Train card, on the CPU path and on WebGPU
(SwiftShader).

    .venv/bin/python bench/finetune_page.py [--runs 3] [--length 128] [--batch 8] [--steps 3]
        [--devices cpu,webgpu]

Each run is a fresh browser (no HTTP cache, nothing in IndexedDB) on dist/. Timed from the page's own
state changes (a MutationObserver on the cards' `data-state` / `data-step`, `performance.now()`):
- read: pressing Read on the Fine-tune card until it plans (fetching the 91 MB model and the corpus,
  checking their digests, parsing config, tokenizer and safetensors, tokenising 6,046 mails; the card's
  own tokenising time is shown apart);
- plan: the three ways (full, LoRA, QLoRA) planned on the page's device;
- start: pressing Train on the QLoRA program until its first step is done (compiling, uploading the
  weights, quantising every encoder linear to NF4 on the device, one step); the panel reports steps in
  groups, so the steps after the first in its first report are taken off at the run's rate;
- steps/s: the run panel's own rate once `--steps` steps are done; sequences/s = steps/s x batch.
The runs of the two devices interleave. Reported: medians, min and max.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
from pathlib import Path

from playwright.sync_api import Page, sync_playwright

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "e2e"), str(ROOT / "py")]

from appdriver import RUN_MS, launch, open_app  # noqa: E402

from scellis.serve import make_server  # noqa: E402

WATCH = """() => {
  window.__marks = [];
  const mark = (what) => window.__marks.push([what, performance.now()]);
  const card = document.getElementById('finetune');
  const run = document.getElementById('run');
  new MutationObserver(() => mark('ft:' + card.dataset.state)).observe(card, { attributeFilter: ['data-state'] });
  new MutationObserver(() => mark('step:' + run.dataset.step)).observe(run, { attributeFilter: ['data-step'] });
  window.__mark = mark;
}"""


def first(marks: list[tuple[str, float]], what: str) -> float:
    """When the page first showed `what` ("step:" for the first step done, whichever the panel showed)."""
    for name, at in marks:
        if name == what or (what == "step:" and name.startswith("step:") and int(name[5:]) > 0):
            return at
    raise AssertionError(f"the page never showed {what!r}: {[m for m, _ in marks]}")


def one_run(page: Page, length: int, batch: int, steps: int) -> dict[str, float]:
    page.evaluate(WATCH)
    page.check("input[name=ft-model][value=bundled]")
    page.check("input[name=ft-texts][value=bundled]")
    page.fill("#ft-length", str(length))
    page.fill("#ft-batch", str(batch))
    page.fill("#ft-epochs", "1")
    page.select_option("#ft-level", "prod")
    page.evaluate("() => window.__mark('read')")
    page.click("#ft-read")
    page.wait_for_selector("#finetune[data-state=planned], #finetune[data-state=error]", timeout=RUN_MS)
    assert page.get_attribute("#finetune", "data-state") == "planned", page.text_content("#ft-error")
    tokenized_ms = page.evaluate("() => Number(document.getElementById('ft-facts').dataset.tokenizedMs)")
    page.click("#ft-plans tr[data-choice=qlora] button")
    page.wait_for_function("() => document.getElementById('data-text-choice').checked")
    page.select_option("#train-level", "prod")
    page.wait_for_selector("#plan[data-state=shown]", timeout=RUN_MS)
    page.evaluate("() => window.__mark('train')")
    page.click("#train-button")
    page.wait_for_function(
        "(n) => Number(document.getElementById('run').dataset.step) >= n"
        " && document.getElementById('run').dataset.stepsPerS !== ''"
        " || document.getElementById('run').dataset.phase === 'failed'",
        arg=steps,
        timeout=RUN_MS,
    )
    assert page.get_attribute("#run", "data-phase") != "failed", page.text_content("#train-status")
    rate = float(page.evaluate("() => document.getElementById('run').dataset.stepsPerS"))
    marks = page.evaluate("() => window.__marks")
    shown = next(int(m[5:]) for m, _ in marks if m.startswith("step:") and int(m[5:]) > 0) - 1
    return {
        "read_s": (first(marks, "ft:planning") - first(marks, "read")) / 1000,
        "tokenize_s": tokenized_ms / 1000,
        "plan_s": (first(marks, "ft:planned") - first(marks, "ft:planning")) / 1000,
        "start_s": (first(marks, "step:") - first(marks, "train")) / 1000 - shown / rate,
        "steps_per_s": rate,
        "seq_per_s": rate * batch,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--length", type=int, default=128)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--devices", default="cpu,webgpu")
    args = parser.parse_args()
    devices = args.devices.split(",")
    if not set(devices) <= {"cpu", "webgpu"}:
        parser.error(f"--devices: cpu and/or webgpu, got {args.devices!r}")
    dist = ROOT / "dist"
    if not (dist / "models" / "all-MiniLM-L6-v2" / "model.safetensors").is_file():
        sys.exit("dist/ has no bundled model: run `.venv/bin/python build.py` first")
    httpd = make_server(dist, port=0, quiet=True)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{httpd.server_address[1]}/"
    results: dict[str, list[dict[str, float]]] = {d: [] for d in devices}
    with sync_playwright() as playwright:
        for _ in range(args.runs):
            for device in devices:
                browser = launch(playwright, webgpu=device == "webgpu")
                app = open_app(browser, url)
                assert app.page.evaluate("() => document.body.dataset.device") == device
                results[device].append(one_run(app.page, args.length, args.batch, args.steps))
                browser.close()
    httpd.shutdown()
    columns = ["read_s", "tokenize_s", "plan_s", "start_s", "steps_per_s", "seq_per_s"]
    print(
        f"all-MiniLM-L6-v2 + SpamAssassin in headless Chromium, QLoRA at length {args.length}, batch "
        f"{args.batch}, prod; {args.runs} cold runs each: median (min-max)\n"
    )
    print("| device | read (s) | of it tokenising (s) | plan 3 ways (s) | Train → first step (s) | steps/s | seq/s |")
    print("| --- " * 7 + "|")
    for device, rows in results.items():
        cells = []
        for key in columns:
            values = [r[key] for r in rows]
            cells.append(f"{statistics.median(values):.3g} ({min(values):.3g}-{max(values):.3g})")
        print(f"| {device} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
