"""End-to-end fixtures: the test build (dist-test/) served on 127.0.0.1, Debian's Chromium driven by Playwright."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from appdriver import LoadedApp, launch, open_app
from playwright.sync_api import Playwright, sync_playwright

from scellis.serve import make_server


@pytest.fixture(scope="session")
def dist(test_dist: Path) -> Path:
    """The e2e suite drives the test build (dist-test/: window.scellis.python and .inWorker answer); a test
    of the build the site ships takes `production_dist`."""
    return test_dist


@pytest.fixture(scope="session")
def base_url(dist: Path) -> Iterator[str]:
    httpd = make_server(dist, port=0, quiet=True)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture(scope="module")
def playwright() -> Iterator[Playwright]:
    """Per module: Playwright's sync API runs an event loop, which must not outlive the e2e modules."""
    with sync_playwright() as p:
        yield p


@pytest.fixture(scope="module", params=["webgpu", "cpu"])
def loaded(request: pytest.FixtureRequest, playwright: Playwright, base_url: str) -> Iterator[LoadedApp]:
    """The app started once per variant: Chromium with WebGPU (SwiftShader), and without (CPU path)."""
    browser = launch(playwright, webgpu=request.param == "webgpu")
    try:
        yield open_app(browser, base_url)
    finally:
        browser.close()
