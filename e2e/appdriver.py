"""Driving the app in Debian's Chromium: launch flags, start-up, a record of every request, and a run
started and paused at once.

Every request to another origin than the app's is blocked and recorded.
"""

from __future__ import annotations

import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from playwright.sync_api import Browser, BrowserContext, Page, Playwright, Route, sync_playwright

from scellis.serve import make_server

# Flags that work on these machines (DESIGN.md §9); WebGPU is added per variant.
CHROMIUM_FLAGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
WEBGPU_FLAG = "--enable-unsafe-webgpu"
READY_TIMEOUT_MS = 180_000  # Pyodide's first start on a loaded 2-core machine


def launch(playwright: Playwright, webgpu: bool) -> Browser:
    chromium = shutil.which("chromium")
    assert chromium, "Debian's chromium is required for e2e tests: run scripts/setup"
    return playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_FLAGS + ([WEBGPU_FLAG] if webgpu else []))


@dataclass
class LoadedApp:
    """A page after start-up, with everything it asked the network for."""

    context: BrowserContext
    page: Page
    requests: list[str] = field(default_factory=list)
    blocked: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def session(self) -> dict:
        return self.page.evaluate(
            "() => ({report: window.scellis.report, build: window.scellis.build,"
            " readyMs: window.scellis.readyMs, stages: window.scellis.stages})"
        )


def wait_ready(page: Page) -> None:
    page.wait_for_selector("body[data-state=ready], body[data-state=error]", timeout=READY_TIMEOUT_MS)


def open_app(browser: Browser, base_url: str, device: str | None = "webgpu") -> LoadedApp:
    """A new browser context (no cache, no service worker yet) with the app started in it. `device`: the
    device choice the context starts with, as a user's earlier visit would have kept it. The page trains
    on a software adapter (SwiftShader, the only WebGPU here) only when the user chose it, so the WebGPU
    variant chooses it; without an adapter the choice names none and the page takes the CPU path. None:
    no choice kept, the page's own default."""
    context = browser.new_context()
    if device is not None:
        context.add_init_script(
            f"if (localStorage.getItem('scellis.device') === null) localStorage.setItem('scellis.device', '{device}')"
        )
    app = LoadedApp(context, context.new_page())
    origin = urlsplit(base_url).netloc

    def route(route_obj: Route) -> None:
        url = route_obj.request.url
        app.requests.append(url)
        if urlsplit(url).netloc != origin:
            app.blocked.append(url)
            route_obj.abort()
        else:
            route_obj.continue_()

    # On the context, so the service worker's own requests are seen (and blocked) too.
    context.route("**/*", route)
    app.page.on("pageerror", lambda err: app.errors.append(str(err)))
    app.page.goto(base_url)
    wait_ready(app.page)
    return app


@contextmanager
def served_app(dist: Path, webgpu: bool) -> Iterator[LoadedApp]:
    """dist/ served on 127.0.0.1 and the app started in a fresh Chromium (for benchmarks and scripts)."""
    server = make_server(dist, port=0, quiet=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with sync_playwright() as playwright:
            browser = launch(playwright, webgpu=webgpu)
            try:
                yield open_app(browser, f"http://127.0.0.1:{server.server_address[1]}/")
            finally:
                browser.close()
    finally:
        server.shutdown()
        server.server_close()


def start_and_pause(page: Page, epochs: int, seed: str) -> None:
    """Train the page's program at debug, and press Pause the moment it is enabled (as a user would, but
    however fast the run is): it takes effect after the chunk of steps under way."""
    page.select_option("#train-level", "debug")
    page.fill("#train-epochs", str(epochs))
    page.fill("#train-seed", seed)
    page.evaluate(
        """() => {
        const pause = document.getElementById('run-pause');
        new MutationObserver((_, observer) => {
          if (!pause.disabled) { observer.disconnect(); pause.click(); }
        }).observe(pause, { attributes: true });
        document.getElementById('train-button').click();
        }"""
    )
