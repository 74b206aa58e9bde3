"""A static server for the built app (dist/), on 127.0.0.1 by default.

It sends the cross-origin isolation headers (COOP/COEP) that let the CPU path share one
WebAssembly memory between workers, and WebAssembly's MIME type for streaming compilation.
"""

from __future__ import annotations

import functools
import http.server
import os
import sys
from pathlib import Path
from typing import ClassVar

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


class Handler(http.server.SimpleHTTPRequestHandler):
    def guess_type(self, path: str | os.PathLike[str]) -> str:
        return TYPES.get(os.path.splitext(path)[1], super().guess_type(path))

    def end_headers(self) -> None:
        for name, value in HEADERS.items():
            self.send_header(name, value)
        super().end_headers()

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - base signature
        if self.quiet:
            return
        super().log_message(format, *args)

    quiet: ClassVar[bool] = False


class DistServer(http.server.ThreadingHTTPServer):
    """Threaded server that treats a browser closing mid-download as normal, not as an error."""

    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        if isinstance(sys.exc_info()[1], ConnectionResetError | BrokenPipeError):
            return
        super().handle_error(request, client_address)  # type: ignore[arg-type]


def make_server(
    dist: Path, host: str = "127.0.0.1", port: int = 8000, quiet: bool = False
) -> http.server.ThreadingHTTPServer:
    """A server for `dist` (not yet serving); port 0 picks a free port."""
    if not (dist / "index.html").is_file():
        raise FileNotFoundError(f"{dist} holds no built app (no index.html): run `python build.py` first")
    handler = functools.partial(type("DistHandler", (Handler,), {"quiet": quiet}), directory=str(dist))
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
