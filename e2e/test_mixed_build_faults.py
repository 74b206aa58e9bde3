"""Fault suite: every file of the build, in turn, replaced by another build's version of it (the same file
with a few bytes more, as a half-finished upload or a stale cache would mix in). Each mixed copy must be
refused before the engine starts, naming exactly that file; a lazy file (app/src/lazy.js: the pretrained
model and the texts, which start-up does not fetch) must be refused, by name, when the Fine-tune card reads
it; the figures go to the fault log."""

from __future__ import annotations

import json
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from appdriver import launch, open_app
from playwright.sync_api import Browser, Page, Playwright

from scellis.serve import make_server

LAZY = ("models/", "texts/")  # app/src/lazy.js


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
            outcomes[name] = read_lazy(app.page, name) if name.startswith(LAZY) else at_start(app.page, name)
            app.context.close()
            (copy / name).write_bytes(original)
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
    assert len(names) >= 20 and sum(n.startswith(LAZY) for n in names) == 4


def at_start(page: Page, name: str) -> str:
    """ "refused" when the page refused to start, naming `name`, and started no engine."""
    shown = page.evaluate(
        """() => [document.body.dataset.state, document.body.dataset.mismatch ?? "",
                  window.scellis === undefined]"""
    )
    started = bool(page.workers)
    if shown == ["error", name, True] and not started:
        return "refused"
    return f"state {shown[0]}, named {shown[1]!r}, engine started: {started}"


def read_lazy(page: Page, name: str) -> str:
    """ "refused" when the page started and reading the bundled model and texts was refused, naming `name`."""
    if page.evaluate("() => document.body.dataset.state") != "ready":
        return f"state {page.evaluate('() => document.body.dataset.state')} before the file was read"
    page.wait_for_selector("#finetune", state="visible")
    page.click("#ft-read")
    page.wait_for_selector("#finetune[data-state=error], #finetune[data-state=read]")
    said = page.text_content("#ft-error") or ""
    return "refused" if f"mixes files of different builds: {name} (" in said else f"read it, saying {said!r}"
