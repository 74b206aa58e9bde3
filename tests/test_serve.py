"""The static server: loopback, cross-origin isolation headers, WebAssembly MIME type, clear errors."""

from __future__ import annotations

import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from email.message import Message
from pathlib import Path

import pytest

from scellis.serve import make_server


@pytest.fixture
def server(dist: Path) -> Iterator[str]:
    httpd = make_server(dist, port=0, quiet=True)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    httpd.shutdown()
    httpd.server_close()


def get(url: str) -> tuple[int, Message, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, response.headers, response.read()
    except urllib.error.HTTPError as err:
        return err.code, err.headers, b""


def test_serves_the_app_with_isolation_headers(server: str, dist: Path) -> None:
    status, headers, body = get(server)
    assert status == 200 and body == (dist / "index.html").read_bytes()
    assert headers["Cross-Origin-Opener-Policy"] == "same-origin"
    assert headers["Cross-Origin-Embedder-Policy"] == "require-corp"


@pytest.mark.parametrize(
    ("name", "mime"),
    [
        ("scellis_cpu.wasm", "application/wasm"),
        ("pyodide/pyodide.mjs", "text/javascript"),
        ("build.json", "application/json"),
    ],
)
def test_content_types(server: str, name: str, mime: str) -> None:
    status, headers, _ = get(server + name)
    assert status == 200 and headers["Content-Type"] == mime


def test_missing_file_is_404(server: str) -> None:
    assert get(server + "no-such-file.js")[0] == 404


def test_binds_loopback_only(dist: Path) -> None:
    httpd = make_server(dist, port=0, quiet=True)
    try:
        assert httpd.server_address[0] == "127.0.0.1"
    finally:
        httpd.server_close()


def test_unbuilt_dist_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"no built app .* run `python build.py` first"):
        make_server(tmp_path)


def test_busy_port_names_the_remedy(dist: Path) -> None:
    first = make_server(dist, port=0, quiet=True)
    try:
        with pytest.raises(OSError, match=r"cannot listen on 127.0.0.1:\d+ .*--port 0"):
            make_server(dist, port=first.server_address[1])
    finally:
        first.server_close()
