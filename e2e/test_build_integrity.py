"""A mixed build is refused: served a copy of the build with one file from another build (the page's
main.js, the engine wheel, the CPU path's module) or a build.json naming another engine, the page names
the file, starts nothing (no engine calls, no training) and offers a repair that, once the files are
whole again, starts the app. The service worker keeps no copy of a build whose files differ."""

from __future__ import annotations

import io
import json
import shutil
import threading
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from appdriver import LoadedApp, launch, open_app, wait_ready, wait_until
from playwright.sync_api import Browser, Playwright

from scellis.serve import make_server


@pytest.fixture(scope="module")
def browser(playwright: Playwright) -> Iterator[Browser]:
    browser = launch(playwright, webgpu=False)
    yield browser
    browser.close()


@pytest.fixture
def copy(dist: Path, tmp_path: Path) -> Path:
    """A copy of the build for one test to mix."""
    return Path(shutil.copytree(dist, tmp_path / "dist"))


@pytest.fixture
def url(copy: Path) -> Iterator[str]:
    httpd = make_server(copy, port=0, quiet=True)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    httpd.shutdown()
    httpd.server_close()


def another_wheel(wheel: bytes) -> bytes:
    """The wheel as another build of the engine makes it: one Python source differs."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(wheel)) as old, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as new:
        for info in old.infolist():
            data = old.read(info)
            if info.filename == "scellis/__init__.py":
                data += b"\n# another build\n"
            new.writestr(info, data)
    return out.getvalue()


def another_module(module: bytes) -> bytes:
    """The CPU path's module as another build makes it: valid WebAssembly, one custom section more."""
    name = b"build"
    payload = bytes([len(name)]) + name + b"another"
    return module + bytes([0, len(payload)]) + payload


def refused(app: LoadedApp) -> dict:
    page = app.page
    assert page.get_attribute("body", "data-state") == "error", page.inner_text("body")[:500]
    return page.evaluate(
        """() => ({
          mismatch: document.body.dataset.mismatch,
          error: document.getElementById("error").textContent,
          repair: document.getElementById("repair")?.textContent ?? null,
          started: window.scellis !== undefined,
          train: !document.getElementById("train").hidden,
        })"""
    )


@pytest.mark.parametrize(
    ("name", "mix"),
    [
        ("main.js", lambda data: data + b"\n// another build\n"),
        ("scellis_cpu.wasm", another_module),
    ],
    ids=["main.js", "wasm"],
)
def test_a_file_of_another_build_is_named_and_nothing_starts(
    browser: Browser, copy: Path, url: str, name: str, mix
) -> None:
    (copy / name).write_bytes(mix((copy / name).read_bytes()))
    app = open_app(browser, url)
    shown = refused(app)
    assert shown["mismatch"] == name
    assert name in shown["error"] and "mixes files of different builds" in shown["error"]
    assert "Repair" in shown["repair"] and name in shown["repair"]
    assert not shown["started"] and not shown["train"]
    assert app.page.workers == []


def test_another_builds_wheel_is_refused_before_it_is_installed(browser: Browser, copy: Path, url: str) -> None:
    wheel = json.loads((copy / "build.json").read_text())["wheel"]
    (copy / wheel).write_bytes(another_wheel((copy / wheel).read_bytes()))
    app = open_app(browser, url)
    shown = refused(app)
    assert shown["mismatch"] == wheel and wheel in shown["error"]
    assert not shown["started"] and not shown["train"]
    assert app.page.workers == []  # the engine never started: Pyodide never saw the wheel


def test_a_build_json_naming_another_engine_is_refused(browser: Browser, copy: Path, url: str) -> None:
    """Every file matches build.json, but the engine the wheel installs is not the one it names: the wheel
    is named (the worker reports the engine it installed; the page compares)."""
    build = json.loads((copy / "build.json").read_text())
    claimed = build["package_version"] + "+000000000000"
    (copy / "build.json").write_text(json.dumps({**build, "engine_version": claimed}))
    shown = refused(open_app(browser, url))
    assert shown["mismatch"] == build["wheel"]
    assert claimed in shown["error"] and build["engine_version"] in shown["error"]
    assert not shown["started"] and not shown["train"]


def test_repair_starts_the_app_once_its_files_are_whole(browser: Browser, copy: Path, url: str) -> None:
    original = (copy / "main.css").read_bytes()
    (copy / "main.css").write_bytes(original + b"\n/* another build */\n")
    app = open_app(browser, url)
    assert refused(app)["mismatch"] == "main.css"
    (copy / "main.css").write_bytes(original)
    with app.page.expect_navigation():
        app.page.click("#repair-button")
    wait_ready(app.page)
    assert app.page.get_attribute("body", "data-state") == "ready"
    assert app.page.query_selector("#repair") is None


def test_the_service_worker_keeps_no_copy_of_a_mixed_build(browser: Browser, copy: Path, url: str) -> None:
    app = open_app(browser, url)
    page = app.page
    assert page.get_attribute("body", "data-state") == "ready"
    page.wait_for_selector("body[data-offline=yes]")
    build = json.loads((copy / "build.json").read_text())
    doctored = json.dumps({**build, "files": {**build["files"], "style.css": {"sha256": "0" * 64, "bytes": 1}}})
    answer = page.evaluate(
        """async (text) => {
          const worker = (await navigator.serviceWorker.ready).active;
          return await new Promise((resolve) => {
            const channel = new MessageChannel();
            channel.port1.onmessage = (event) => resolve(event.data);
            worker.postMessage({ type: "remember", build: text }, [channel.port2]);
          });
        }""",
        doctored,
    )
    assert answer["ok"] is False
    assert [m["name"] for m in answer["mismatched"]] == ["style.css"]
    # the whole build's cache stays the only one
    complete = wait_until(
        page,
        """async () => { const names = (await caches.keys()).filter((n) => n.startsWith("scellis-build-"));
                         return names.length === 1 && names; }""",
    )
    assert len(complete) == 1


def test_a_damaged_saved_copy_is_named_offline_not_served(browser: Browser, copy: Path) -> None:
    """Offline, the service worker checks each saved file against its build.json again: a copy damaged in
    the browser's cache is answered as an error naming it, and the page refuses to start, naming it."""
    httpd = make_server(copy, port=0, quiet=True)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{httpd.server_address[1]}/"
    try:
        app = open_app(browser, url)
        app.page.wait_for_selector("body[data-offline=yes]")
        app.page.evaluate(
            """async () => {
              const name = (await caches.keys()).find((n) => n.startsWith("scellis-build-"));
              await (await caches.open(name)).put("style.css", new Response("body { color: red }"));
            }"""
        )
    finally:
        httpd.shutdown()
        httpd.server_close()
    app.page.reload()
    wait_ready(app.page)
    shown = refused(app)
    assert shown["mismatch"] == "style.css" and "style.css (HTTP 500 saved copy damaged)" in shown["error"]
    assert not shown["started"] and not shown["train"]
