"""Training in the page: the digits MLP (64-128-10, Adam, batch 64, 20 epochs) reaches >= 95 % held-out
accuracy, on the device the page names."""

from __future__ import annotations

import json

import pytest
from appdriver import RUN_MS, LoadedApp

from scellis.levels import PROMISES, Level


def train(app: LoadedApp, level: str) -> dict:
    assert app.page.is_disabled("#train-button")  # no level, no training
    app.page.select_option("#train-level", level)
    assert app.page.inner_text("#level-promise").startswith(PROMISES[Level(level)])
    link = app.page.locator("#level-promise a")
    assert link.get_attribute("href") == f"correctness.html#level-{level}"
    app.page.click("#train-button")
    app.page.wait_for_selector("#train[data-state=done], #train[data-state=error]", timeout=RUN_MS)
    return json.loads(
        app.page.evaluate(
            "() => JSON.stringify({state: document.getElementById('train').dataset.state,"
            " accuracy: document.getElementById('train').dataset.accuracy,"
            " device: document.getElementById('train-device').textContent,"
            " status: document.getElementById('train-status').textContent,"
            " rows: document.querySelectorAll('#train-log tbody tr').length,"
            " memory: document.getElementById('train-memory').textContent,"
            " scales: [...document.querySelectorAll('#train-log tbody tr td:last-child')].map((td) => td.textContent)})"
        )
    )


DEVICE_LINES = {
    "webgpu": "Runs on: WebGPU — google swiftshader (software adapter)",
    "cpu": "Runs on: CPU path (WebAssembly)",
}


def test_digits_mlp_trains_to_95_percent(loaded: LoadedApp, request: pytest.FixtureRequest) -> None:
    kind = request.node.callspec.params["loaded"]
    assert loaded.page.evaluate("() => document.body.dataset.device") == kind
    level = {"webgpu": "prod", "cpu": "fast"}[kind]  # debug runs in the correctness matrix on both
    result = train(loaded, level)
    assert result["state"] == "done", result["status"]
    assert result["device"] == DEVICE_LINES[kind]
    assert result["rows"] == 20
    assert float(result["accuracy"]) >= 0.95
    assert result["status"].startswith("done: test accuracy") and result["status"].endswith(f"level {level}")
    # the page's WebGPU budget comes from its allocation probe, the CPU path's from the wasm32 memory left
    probe = "the allocation probe" if kind == "webgpu" else "wasm32 memory"
    assert result["memory"].startswith("Memory: ") and "verdict green" in result["memory"], result["memory"]
    assert probe in result["memory"]
    # the digits MLP's matmuls are too small for float16 tiles (and the CPU path has none): no level scales
    assert set(result["scales"]) == {"—"}, result["scales"]
