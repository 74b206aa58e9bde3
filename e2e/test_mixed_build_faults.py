"""Fault suite: every file of the build, in turn, replaced by another build's version of it (the same file
with a few bytes more, as a half-finished upload or a stale cache would mix in). Each mixed copy must be
refused before the engine starts, naming exactly that file; the figures go to the fault log."""

from __future__ import annotations

import json
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from appdriver import launch, open_app
from playwright.sync_api import Browser, Playwright

from scellis.serve import make_server

# What another build's copy of a file adds, by kind (each stays a well-formed file of its kind).
SUFFIX = {".js": b"\n// another build\n", ".mjs": b"\n// another build\n", ".css": b"\n/* another build */\n"}
SUFFIX[".html"] = b"\n<!-- another build -->\n"
WASM_SECTION = b"\x00\x0e\x05buildanother!!"  # a custom section named "build"


def another(name: str, data: bytes) -> bytes:
    if name.endswith(".wasm"):
        return data + WASM_SECTION
    return data + SUFFIX.get(Path(name).suffix, b"\n")


@pytest.fixture(scope="module")
def browser(playwright: Playwright) -> Iterator[Browser]:
    browser = launch(playwright, webgpu=False)
    yield browser
    browser.close()


def test_every_file_of_another_build_is_named_and_nothing_starts(
    browser: Browser, dist: Path, tmp_path: Path, fault_log
) -> None:
    copy = Path(shutil.copytree(dist, tmp_path / "dist"))
    names = sorted(json.loads((copy / "build.json").read_text())["files"])
    httpd = make_server(copy, port=0, quiet=True)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{httpd.server_address[1]}/"
    outcomes: dict[str, str] = {}
    try:
        for name in names:
            original = (copy / name).read_bytes()
            (copy / name).write_bytes(another(name, original))
            app = open_app(browser, url)
            page = app.page
            shown = page.evaluate(
                """() => [document.body.dataset.state, document.body.dataset.mismatch ?? "",
                          window.scellis === undefined]"""
            )
            started = bool(page.workers)
            app.context.close()
            (copy / name).write_bytes(original)
            if shown == ["error", name, True] and not started:
                outcomes[name] = "refused"
            else:
                outcomes[name] = f"state {shown[0]}, named {shown[1]!r}, engine started: {started}"
    finally:
        httpd.shutdown()
        httpd.server_close()
    refused = sum(1 for o in outcomes.values() if o == "refused")
    fault_log(
        "mixed-build",
        trials=len(names),
        refused_naming_the_file=refused,
        crashes=0,
        hangs=0,
        silent_wrong=len(names) - refused,
    )
    assert {n: o for n, o in outcomes.items() if o != "refused"} == {}
    assert len(names) >= 20
