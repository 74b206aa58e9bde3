"""Driving the app in Debian's Chromium: launch flags, start-up, a record of every request, and a run
started and paused at once.

Every request to another origin than the app's is blocked and recorded.
"""

from __future__ import annotations

import json
import shutil
import threading
from collections.abc import Callable, Iterator
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
# Bounds on waiting for a state, not speeds any test expects: every wait ends on the state it checks, and
# these only say when to give up. On a 2-core machine a start, a plan or a short run takes seconds; the
# bounds leave room for a machine many times slower (one core, shared with other work).
WAIT_MS = 300_000  # every wait and action unless it says otherwise (contexts take it as their default)
RUN_MS = 1_200_000  # a whole training run


def launch(playwright: Playwright, webgpu: bool) -> Browser:
    chromium = shutil.which("chromium")
    assert chromium, "Debian's chromium is required for e2e tests: run scripts/setup"
    return playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_FLAGS + ([WEBGPU_FLAG] if webgpu else []))


def patient(context: BrowserContext) -> BrowserContext:
    """`context` with WAIT_MS as the bound of every wait and action of its pages."""
    context.set_default_timeout(WAIT_MS)
    context.set_default_navigation_timeout(WAIT_MS)
    return context


# Page-side helpers for reading IndexedDB as the page's own modules would, for a test's `evaluate` script:
# exists(name) (without creating the database), opened(name) (a connection), answer(request) (its result).
IDB = """
const exists = async (name) => (await indexedDB.databases()).some((d) => d.name === name);
const opened = (name) => new Promise((resolve, reject) => {
  const request = indexedDB.open(name);
  request.onsuccess = () => resolve(request.result);
  request.onerror = () => reject(request.error);
});
const answer = (request) => new Promise((resolve, reject) => {
  request.onsuccess = () => resolve(request.result);
  request.onerror = () => reject(request.error);
});
"""


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
    page.wait_for_selector("body[data-state=ready], body[data-state=error]")


def open_app(
    browser: Browser,
    base_url: str,
    device: str | None = "webgpu",
    prepare: Callable[[BrowserContext], None] | None = None,
) -> LoadedApp:
    """A new browser context (no cache, no service worker yet) with the app started in it. `device`: the
    device choice the context starts with, as a user's earlier visit would have kept it. The page trains
    on a software adapter (SwiftShader, the only WebGPU here) only when the user chose it, so the WebGPU
    variant chooses it; without an adapter the choice names none and the page takes the CPU path. None:
    no choice kept, the page's own default. `prepare` (when given) sets the context up before the page opens."""
    context = patient(browser.new_context())
    if prepare is not None:
        prepare(context)
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
    """A test build (`python build.py --test` writes dist-test/: it has the `python` and `script` calls
    benchmarks use) served on 127.0.0.1 and the app started in a fresh Chromium."""
    try:
        variant = json.loads((dist / "build.json").read_text()).get("variant")
    except (OSError, ValueError):
        variant = None
    if variant != "test":
        raise SystemExit(f"{dist} is not a test build: run `.venv/bin/python build.py --test` first")
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


def start_over(page: Page, level: str | None = None) -> None:
    """The run setup of a first visit, whatever earlier tests changed on this page: the example program as
    shipped (no edits, no remedies), this site's digits, no memory limit; then `level` chosen, if given.
    Work under way (a remedy being applied) ends first; then each change replans at once (the plan panel
    says "planning" before this returns), so a wait for a shown plan after it waits for this setup's plan."""
    page.wait_for_selector("#plan:not([aria-busy=true])", state="attached")
    site = "input[name=data-source][value=site]"
    if not page.is_checked(site):
        page.check(site)
        page.wait_for_function("() => document.querySelector('#data-facts dd').textContent === 'digits (this site)'")
    if page.input_value("#plan-cap"):
        page.click("#plan-cap-clear")
    if page.is_enabled("#plan-reset"):
        page.click("#plan-reset")
    if level is not None:
        page.select_option("#train-level", level)


def wait_until(page: Page, predicate: str, arg: object = None, timeout_ms: int = WAIT_MS) -> object:
    """Waits for `predicate(arg)`, an async JS function, to resolve to a truthy value; returns that value.
    (Playwright's wait_for_function takes the promise an async function returns for the truthy value
    itself, and returns at once.) Fails after `timeout_ms`."""
    script = f"""async (arg) => {{
      const predicate = {predicate};
      const end = performance.now() + {timeout_ms};
      for (;;) {{
        const value = await predicate(arg);
        if (value) return value;
        if (performance.now() > end) throw new Error("still not so after {timeout_ms} ms");
        await new Promise((resolve) => setTimeout(resolve, 50));
      }}
    }}"""
    return page.evaluate(script, arg)
