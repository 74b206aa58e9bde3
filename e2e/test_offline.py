"""After one online visit the app starts with the server gone, and the service worker makes
it cross-origin isolated on a static host that sends no COOP/COEP headers."""

from __future__ import annotations

import functools
import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from appdriver import LoadedApp, launch, open_app, wait_ready, wait_until
from playwright.sync_api import Playwright

from scellis.serve import Handler, make_server

COMPLETE_CACHE = """async () => {
  for (const name of await caches.keys()) {
    if (await (await caches.open(name)).match("build.json")) return name;
  }
  return null;
}"""


class PlainHandler(Handler):
    """A static host that sends no cross-origin isolation headers."""

    def end_headers(self) -> None:
        http.server.SimpleHTTPRequestHandler.end_headers(self)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - base signature
        pass


def start(server: http.server.ThreadingHTTPServer) -> str:
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}/"


def wait_for_offline_copy(app: LoadedApp) -> str:
    """The name of the cache holding the whole build, once the page says it can start offline."""
    app.page.wait_for_selector("body[data-offline=yes]")
    name = wait_until(app.page, COMPLETE_CACHE)
    assert isinstance(name, str)
    return name


@pytest.fixture
def cpu_browser(playwright: Playwright) -> Iterator:
    browser = launch(playwright, webgpu=False)
    yield browser
    browser.close()


def test_starts_offline_after_one_visit(cpu_browser, dist: Path) -> None:
    server = make_server(dist, port=0, quiet=True)
    url = start(server)
    app = open_app(cpu_browser, url)
    wait_for_offline_copy(app)
    server.shutdown()
    server.server_close()

    page = app.context.new_page()
    page.goto(url)
    wait_ready(page)
    assert page.evaluate("() => document.body.dataset.state") == "ready", page.inner_text("main")
    build = json.loads((dist / "build.json").read_text())
    assert page.evaluate("() => window.scellis.report.engine_version") == build["engine_version"]
    assert page.evaluate("() => navigator.serviceWorker.controller !== null")


def test_service_worker_isolates_a_plain_static_host(cpu_browser, dist: Path) -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(PlainHandler, directory=str(dist)))
    url = start(server)
    try:
        app = open_app(cpu_browser, url)
        assert app.page.evaluate("() => crossOriginIsolated") is False
        wait_for_offline_copy(app)
        app.page.reload()
        wait_ready(app.page)
        assert app.page.evaluate("() => crossOriginIsolated") is True
        assert "yes (CPU-path workers" in app.page.inner_text("#engine")
    finally:
        server.shutdown()
        server.server_close()
