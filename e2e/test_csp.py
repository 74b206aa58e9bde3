"""The build the site ships (dist/) under its Content-Security-Policy: every page and the engine's worker
run with no violation on both paths, a short training run included; the test hooks are absent and the
worker refuses them.

The server here is scellis.serve's with `report-uri` added to each policy, so the browser reports every
violation (of pages, the engine's worker and the service worker alike) to it; the pages' own
`securitypolicyviolation` events and console are watched as well.
"""

from __future__ import annotations

import functools
import http.server
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from appdriver import RUN_MS, WAIT_MS, LoadedApp, launch, open_app, start_over, wait_ready, wait_until
from playwright.sync_api import BrowserContext, Page, Playwright

from scellis.serve import PAGE_CSP, WORKER_CSP, Handler, make_server

REPORTS = "/csp-report"
WATCH = """
window.__violations = [];
document.addEventListener("securitypolicyviolation", (e) =>
  window.__violations.push(`${e.violatedDirective} ${e.blockedURI} ${e.sourceFile}:${e.lineNumber}`));
"""


class ReportingHandler(Handler):
    """scellis.serve's answers, each policy reporting its violations here (`reports`, one per POST)."""

    reports: list[str]

    def policy(self) -> str:
        return f"{super().policy()}; report-uri {REPORTS}"

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", 0))).decode(errors="replace")
        if self.path == REPORTS:
            self.reports.append(body)
        self.send_response(204)
        self.end_headers()


@pytest.fixture(scope="module")
def served(production_dist: Path) -> Iterator[tuple[str, list[str]]]:
    reports: list[str] = []
    handler = type("Reporting", (ReportingHandler,), {"reports": reports})
    httpd = make_server(production_dist, port=0, quiet=True, handler_class=handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/", reports
    httpd.shutdown()
    httpd.server_close()


@dataclass
class Watched:
    """The shipped app started under its policy, with what its pages said on the console."""

    app: LoadedApp
    console: list[str] = field(default_factory=list)

    def violations(self, reports: list[str]) -> list[str]:
        seen = list(self.app.page.evaluate("() => window.__violations"))
        # the engine's worker's console reaches the context's too (Chromium words it "Content Security policy")
        seen += [line for line in self.console if "content security policy" in line.lower()]
        return seen + reports


@pytest.fixture(scope="module", params=["webgpu", "cpu"])
def shipped(request: pytest.FixtureRequest, playwright: Playwright, served: tuple[str, list[str]]) -> Iterator[Watched]:
    """On WebGPU (SwiftShader) and on the CPU path."""
    browser = launch(playwright, webgpu=request.param == "webgpu")
    console: list[str] = []

    def watch(context: BrowserContext) -> None:
        context.add_init_script(WATCH)
        context.on("console", lambda message: console.append(message.text))

    try:
        yield Watched(open_app(browser, served[0], prepare=watch), console)
    finally:
        browser.close()


def wait_for_report(page: Page, reports: list[str], count: int) -> None:
    """Until the server has `count` reports (the browser sends them on its own schedule)."""
    end = time.monotonic() + WAIT_MS / 1000
    while len(reports) < count:
        assert time.monotonic() < end, f"no report after {WAIT_MS} ms"
        page.wait_for_timeout(50)


def test_the_app_starts_and_trains_with_no_violation(shipped: Watched, served: tuple[str, list[str]]) -> None:
    page = shipped.app.page
    assert page.get_attribute("body", "data-state") == "ready", page.inner_text("body")
    start_over(page, "debug")
    page.fill("#train-epochs", "1")
    page.click("#train-button")
    page.wait_for_selector("#train[data-state=done], #train[data-state=error]", timeout=RUN_MS)
    assert page.get_attribute("#train", "data-state") == "done", page.inner_text("#train-status")
    page.wait_for_selector("body[data-offline]")  # the service worker has kept (or refused) its copy
    assert shipped.violations(served[1]) == []
    assert shipped.app.errors == []


# what each page shows once its script has run
SHOWN = {
    "start.html": "main",
    "limits.html": "#storage-live[data-state=ready]",
    "correctness.html": "body[data-state=ready], body[data-state=error]",
}


@pytest.mark.parametrize("name", sorted(SHOWN))
def test_every_other_page_shows_with_no_violation(shipped: Watched, served: tuple[str, list[str]], name: str) -> None:
    page = shipped.app.page.context.new_page()
    try:
        page.goto(served[0] + name)
        page.wait_for_selector(SHOWN[name])
        seen = page.evaluate("() => window.__violations")
    finally:
        page.close()
    assert seen == [] and shipped.violations(served[1]) == []


def test_the_watch_sees_a_violation_when_there_is_one(shipped: Watched, served: tuple[str, list[str]]) -> None:
    """An inline script (what the policy forbids) is refused, and both the page's event and the server's
    report say so: "no violation" above proves something."""
    page, before = shipped.app.page, len(served[1])
    ran = page.evaluate(
        """() => { const s = document.createElement("script"); s.textContent = "window.__ran = 1";
                   document.head.append(s); return window.__ran !== undefined; }"""
    )
    assert not ran
    wait_until(page, "async () => window.__violations.length > 0")
    assert any(v.startswith("script-src") for v in page.evaluate("() => window.__violations"))
    wait_for_report(page, served[1], before + 1)
    assert "script-src" in served[1][-1]
    page.evaluate("() => { window.__violations = []; }")
    del served[1][before:]
    shipped.console.clear()


def test_the_shipped_page_and_worker_have_no_test_hooks(shipped: Watched, production_dist: Path) -> None:
    page = shipped.app.page
    assert page.evaluate("() => [typeof window.scellis.python, typeof window.scellis.inWorker]") == [
        "undefined",
        "undefined",
    ]
    # the shipped worker asked directly, as the page's own rpc.js would: both calls are unknown to it
    answers = page.evaluate(
        """async () => {
          const worker = new Worker("engine_worker.js", { type: "module" });
          const ask = (id, name, args) => new Promise((resolve) => {
            worker.addEventListener("message", (e) => { if (e.data.id === id) resolve(e.data); });
            worker.postMessage({ id, name, args });
          });
          const answers = [await ask(1, "python", ["1 + 1"]), await ask(2, "script", ["() => 2", null])];
          worker.terminate();
          return answers;
        }"""
    )
    assert [a["ok"] for a in answers] == [False, False]
    assert [a["error"]["message"] for a in answers] == [
        'the engine has no call named "python"',
        'the engine has no call named "script"',
    ]
    assert json.loads((production_dist / "build.json").read_text())["variant"] == "production"


class PlainHandler(Handler):
    """A static host that sends no policy and no isolation headers (the service worker adds them)."""

    def end_headers(self) -> None:
        http.server.SimpleHTTPRequestHandler.end_headers(self)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - base signature
        pass


def test_the_service_worker_sets_the_policy_on_a_plain_static_host(
    playwright: Playwright, production_dist: Path
) -> None:
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(PlainHandler, directory=str(production_dist))
    )
    threading.Thread(target=server.serve_forever, daemon=True).start()
    browser = launch(playwright, webgpu=False)
    try:
        app = open_app(browser, f"http://127.0.0.1:{server.server_address[1]}/")
        app.page.wait_for_selector("body[data-offline=yes]")
        app.page.reload()
        wait_ready(app.page)
        policies = app.page.evaluate(
            """async () => {
              const policy = async (name) => (await fetch(name)).headers.get("Content-Security-Policy");
              return [navigator.serviceWorker.controller !== null, await policy("index.html"),
                      await policy("engine_worker.js")];
            }"""
        )
        assert policies == [True, f"{PAGE_CSP}; frame-ancestors 'none'", f"{WORKER_CSP}; frame-ancestors 'none'"]
        assert app.page.get_attribute("body", "data-state") == "ready"
    finally:
        browser.close()
        server.shutdown()
        server.server_close()
