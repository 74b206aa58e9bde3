"""The app shell in headless Chromium: offline start, the device named, the CPU path equal to CPython's."""

from __future__ import annotations

import asyncio
import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from appdriver import LoadedApp, open_app, wait_ready

from scellis.assets import WASM_NAME, read_asset
from scellis.runtime.cpu.device import CpuDevice
from scellis.runtime.cpu.module import CpuPath
from scellis.runtime.cpu.wasm import WasmtimeInstance
from scellis.runtime.devices import CPU_BANNER
from scellis.runtime.selfcheck import self_check


def variant(app: LoadedApp) -> str:
    return app.page.evaluate("() => document.body.dataset.device")


def test_starts_from_localhost_alone(loaded: LoadedApp) -> None:
    assert loaded.page.evaluate("() => document.body.dataset.state") == "ready", loaded.page.inner_text("main")
    assert loaded.blocked == []
    assert any(url.endswith(".whl") for url in loaded.requests)
    assert any(url.endswith("pyodide.asm.wasm") for url in loaded.requests)
    assert loaded.errors == []


def test_start_up_shows_its_stages(loaded: LoadedApp) -> None:
    stages = loaded.session()["stages"]
    assert [s["label"].split(" ")[0] for s in stages] == ["Reading", "Starting", "Installing", "Finding"]
    assert [s["atMs"] for s in stages] == sorted(s["atMs"] for s in stages)
    assert loaded.page.locator("#loading").is_hidden()


def test_python_starts_from_the_builds_snapshot_with_the_engine_imported(loaded: LoadedApp, base_url: str) -> None:
    """The worker's Pyodide is the build's snapshot (scripts/python-snapshot.mjs): said on the page, the
    engine's modules already imported, sys.executable a page's; and `random`, seeded once for every copy
    of the snapshot, seeded again by each page (a second page draws another state)."""
    assert loaded.session()["report"]["python_start"] == "started from the build's snapshot"
    assert "started from the build's snapshot" in loaded.page.inner_text("#engine")
    code = "import sys, json, random\njson.dumps([sys.executable, 'scellis.calls' in sys.modules, random.random()])"
    executable, imported, draw = json.loads(loaded.page.evaluate("(code) => window.scellis.python(code)", code))
    assert executable == "/home/pyodide/this.program" and imported
    browser = loaded.context.browser
    assert browser is not None
    other = open_app(browser, base_url)
    try:
        _, _, other_draw = json.loads(other.page.evaluate("(code) => window.scellis.python(code)", code))
    finally:
        other.context.close()
    assert other_draw != draw


def test_engine_version_is_the_builds(loaded: LoadedApp, dist: Path) -> None:
    build = json.loads((dist / "build.json").read_text())
    session = loaded.session()
    assert session["report"]["engine_version"] == build["engine_version"]
    assert build["engine_version"] in loaded.page.inner_text("#engine")
    assert "matches the installed engine" in loaded.page.inner_text("#engine")


def test_device_is_named(loaded: LoadedApp) -> None:
    device_text = loaded.page.inner_text("#device")
    banner = loaded.page.locator("#banner")
    report = loaded.session()["report"]
    selected = report["selected"]
    if variant(loaded) == "webgpu":  # SwiftShader, chosen for this run (appdriver keeps the choice)
        assert "swiftshader" in device_text.lower()
        assert "Max buffer size" in device_text and "Max storage binding" in device_text
        assert report["devices"][0]["software"] is True
        assert selected["cpu_fallback"] is True and selected["reason"].startswith("google swiftshader is a software")
        assert "your choice" in device_text
        assert banner.is_hidden()
    else:
        assert selected["cpu_fallback"] is True
        assert banner.is_visible()
        assert banner.inner_text().startswith(CPU_BANNER)
        assert "CPU path (WebAssembly)" in device_text


def test_each_variant_is_what_its_flags_say(loaded: LoadedApp, request) -> None:
    assert variant(loaded) == request.node.callspec.params["loaded"]


def test_cpu_path_in_the_page_equals_cpython(loaded: LoadedApp) -> None:
    """The self-check's schedule on the CPU path gives the page the same bytes as CPython (debug)."""
    report = loaded.session()["report"]
    in_page = report["cpu_check"]
    device = CpuDevice(CpuPath(WasmtimeInstance(read_asset(WASM_NAME))))
    with ThreadPoolExecutor(1) as thread:  # asyncio.run needs a thread of its own: Playwright's loop runs here
        here = thread.submit(asyncio.run, self_check(device)).result()
    assert in_page["host"] == "browser WebAssembly" and in_page["ok"] and report["webgpu_check"] is None
    for key in ("level", "kernels", "inputs_sha256", "outputs_sha256", "total"):
        assert in_page[key] == here[key], key
    # the errors are against each environment's own float64 tanh, which may differ in the last bit
    assert [{**c, "error": 0} for c in in_page["checks"]] == [{**c, "error": 0} for c in here["checks"]]
    assert "matmul [dot] + reduce at debug: agrees with float64" in loaded.page.inner_text("#engine")


def test_banner_links_to_honest_limits(loaded: LoadedApp, base_url: str) -> None:
    if variant(loaded) != "cpu":
        assert loaded.page.locator("#banner").is_hidden()
        return
    app = open_app(loaded.context.browser, base_url)
    try:
        page = app.page
        page.click("#banner a")
        page.wait_for_url("**/limits.html#cpu-path")
        assert page.locator("h1").inner_text() == "Honest limits"
        assert "4 GiB" in page.inner_text("#cpu-path")
    finally:
        app.context.close()


def test_a_software_adapter_is_used_only_when_chosen(loaded: LoadedApp, base_url: str) -> None:
    """Without a choice kept, a page offered only a software adapter trains on the CPU path and says why;
    choosing the adapter moves the plan to it, and the choice is kept for the next visit."""
    if variant(loaded) != "webgpu":
        return
    app = open_app(loaded.context.browser, base_url, device=None)
    page = app.page
    try:
        page.wait_for_selector("#train-device-choice option", state="attached")
        assert page.evaluate("() => document.body.dataset.device") == "cpu"
        assert page.inner_text("#train-device") == "Runs on: CPU path (WebAssembly)"
        why = page.inner_text("#train-device-why")
        assert why.startswith("google swiftshader is a software adapter (a CPU rasteriser), slower here")
        assert page.inner_text("#banner").startswith("CPU path (WebAssembly) — google swiftshader is a software")
        options = page.locator("#train-device-choice option").all_inner_texts()
        assert options == ["WebGPU — google swiftshader (software adapter)", "CPU path (WebAssembly)"]
        page.select_option("#train-level", "prod")
        page.wait_for_selector("#plan[data-state=shown]")
        assert (page.get_attribute("#plan", "data-device") or "").startswith("CPU path (WebAssembly)")
        page.select_option("#train-device-choice", "webgpu")
        assert page.evaluate("() => document.body.dataset.device") == "webgpu"
        assert page.locator("#banner").is_hidden()
        page.wait_for_function("() => (document.getElementById('plan').dataset.device ?? '').includes('swiftshader')")
        page.reload()
        wait_ready(page)
        page.wait_for_selector("#train-device-choice option", state="attached")
        assert page.evaluate("() => document.body.dataset.device") == "webgpu"
        assert page.inner_text("#train-device-why") == "your choice, kept from an earlier visit"
    finally:
        app.context.close()
