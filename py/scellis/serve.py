"""A static server for the built app (dist/), on 127.0.0.1 by default.

It sends the cross-origin isolation headers (COOP/COEP) that let the CPU path share one
WebAssembly memory between workers, WebAssembly's MIME type for streaming compilation, and a strict
Content-Security-Policy (the pages carry the same policy as a <meta>; the service worker sets it where a
static host sends none).
"""

from __future__ import annotations

import functools
import http.server
import json
import os
import sys
from pathlib import Path
from typing import ClassVar

# Every page: scripts, styles, fetches and workers from this origin only; no inline script or style, no
# eval, no WebAssembly compilation (the page compiles none: the engine's worker does), no plugins, no
# <base>, no form posting anywhere. `data:` images: the pages' empty icon (`<link rel=icon href="data:,">`).
PAGE_CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; worker-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'none'; "
    "object-src 'none'"
)
# The engine's worker (engine_worker.js; a worker is held to the policy its own script is served with):
# as the pages, plus 'wasm-unsafe-eval', which WebAssembly.instantiate needs to compile Pyodide's module and
# the CPU path's. Nothing it runs needs JavaScript eval: Pyodide's eval sites (EM_ASM in side modules, and
# emscripten_run_script) are not reached by loading Python and installing the pure-Python scellis wheel.
WORKER_CSP = PAGE_CSP.replace("script-src 'self'", "script-src 'self' 'wasm-unsafe-eval'")
# The test build's worker (its build.json says "variant": "test") runs a test's JavaScript with eval (the
# `script` hook): only there is eval allowed.
TEST_WORKER_CSP = WORKER_CSP.replace("'wasm-unsafe-eval'", "'wasm-unsafe-eval' 'unsafe-eval'")
WORKER_SCRIPT = "engine_worker.js"
# Sent with every response, not in a <meta> (a page's policy cannot say who may frame it).
FRAMING = "frame-ancestors 'none'"

HEADERS = {
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Embedder-Policy": "require-corp",
    "Cross-Origin-Resource-Policy": "same-origin",
    "X-Content-Type-Options": "nosniff",
    # Revalidate every load, so a rebuilt dist/ is never mixed with cached files.
    "Cache-Control": "no-cache",
}
TYPES = {
    ".wasm": "application/wasm",
    ".mjs": "text/javascript",
    ".js": "text/javascript",
    ".json": "application/json",
    ".whl": "application/zip",
    ".zip": "application/zip",
}


def policy_for(path: str, test_build: bool) -> str:
    """The Content-Security-Policy header for the file at URL path `path`."""
    name = path.split("?", 1)[0].rsplit("/", 1)[-1]
    if name == WORKER_SCRIPT:
        return f"{TEST_WORKER_CSP if test_build else WORKER_CSP}; {FRAMING}"
    return f"{PAGE_CSP}; {FRAMING}"


def is_test_build(dist: Path) -> bool:
    """Whether `dist` is the test variant (its build.json says so); an unreadable build.json is not."""
    try:
        return json.loads((dist / "build.json").read_text()).get("variant") == "test"
    except (OSError, ValueError, AttributeError):
        return False


class Handler(http.server.SimpleHTTPRequestHandler):
    def guess_type(self, path: str | os.PathLike[str]) -> str:
        return TYPES.get(os.path.splitext(path)[1], super().guess_type(path))

    def policy(self) -> str:
        return policy_for(self.path, self.test_build)

    def end_headers(self) -> None:
        for name, value in HEADERS.items():
            self.send_header(name, value)
        self.send_header("Content-Security-Policy", self.policy())
        super().end_headers()

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - base signature
        if self.quiet:
            return
        super().log_message(format, *args)

    quiet: ClassVar[bool] = False
    test_build: ClassVar[bool] = False


class DistServer(http.server.ThreadingHTTPServer):
    """Threaded server that treats a browser closing mid-download as normal, not as an error."""

    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        if isinstance(sys.exc_info()[1], ConnectionResetError | BrokenPipeError):
            return
        super().handle_error(request, client_address)  # type: ignore[arg-type]


def make_server(
    dist: Path,
    host: str = "127.0.0.1",
    port: int = 8000,
    quiet: bool = False,
    handler_class: type[Handler] = Handler,
) -> http.server.ThreadingHTTPServer:
    """A server for `dist` (not yet serving) with `handler_class`'s answers; port 0 picks a free port."""
    if not (dist / "index.html").is_file():
        raise FileNotFoundError(f"{dist} holds no built app (no index.html): run `python build.py` first")
    fields = {"quiet": quiet, "test_build": is_test_build(dist)}
    handler = functools.partial(type("DistHandler", (handler_class,), fields), directory=str(dist))
    try:
        return DistServer((host, port), handler)
    except OSError as err:
        raise OSError(
            f"cannot listen on {host}:{port} ({err.strerror}); pass --port N, or --port 0 for a free port"
        ) from err


def serve(dist: Path, host: str = "127.0.0.1", port: int = 8000) -> None:
    """Serve `dist` until interrupted, printing the URL."""
    server = make_server(dist, host, port)
    url = f"http://{host}:{server.server_address[1]}/"
    print(f"Scellis is served at {url}  (Ctrl+C stops)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        print("stopped", flush=True)
    finally:
        server.server_close()
