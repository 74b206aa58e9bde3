"""The static server: loopback, cross-origin isolation headers, the Content-Security-Policy (header and each
page's <meta>), WebAssembly MIME type, clear errors."""

from __future__ import annotations

import re
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from email.message import Message
from pathlib import Path

import pytest

from scellis.serve import PAGE_CSP, TEST_WORKER_CSP, WORKER_CSP, is_test_build, make_server, policy_for


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


def test_every_response_carries_the_strict_policy(server: str, dist: Path) -> None:
    """Pages: the page policy (and no framing); the engine's worker: the same plus WebAssembly compilation
    only; nothing anywhere allows eval, inline script or another origin."""
    for name in ["", "index.html", "start.html", "main.js", "sw.js", "build.json", "pyodide/pyodide.mjs"]:
        _, headers, _ = get(server + name)
        assert headers["Content-Security-Policy"] == f"{PAGE_CSP}; frame-ancestors 'none'", name
        assert headers["Cross-Origin-Embedder-Policy"] == "require-corp", name
    _, headers, _ = get(server + "engine_worker.js")
    assert headers["Content-Security-Policy"] == f"{WORKER_CSP}; frame-ancestors 'none'"
    assert PAGE_CSP.replace("script-src 'self'", "script-src 'self' 'wasm-unsafe-eval'") == WORKER_CSP
    directives = dict(d.strip().split(" ", 1) for d in PAGE_CSP.split(";"))
    assert directives["default-src"] == "'none'" and directives["script-src"] == "'self'"
    assert directives["worker-src"] == directives["connect-src"] == "'self'"
    assert directives["object-src"] == directives["base-uri"] == "'none'"
    assert "unsafe" not in PAGE_CSP and "'unsafe-eval'" not in WORKER_CSP


def test_every_page_carries_the_policy_as_a_meta_before_anything_loads(dist: Path) -> None:
    pages = sorted(dist.glob("*.html"))
    assert {p.name for p in pages} == {"index.html", "start.html", "limits.html", "correctness.html"}
    for page in pages:
        head = page.read_text().split("</head>")[0]
        metas = re.findall(r'<meta http-equiv="Content-Security-Policy" content="([^"]*)">', head)
        assert metas == [PAGE_CSP], page.name
        assert head.index("Content-Security-Policy") < min(head.index("<script"), head.index("<link")), page.name
        assert not re.search(r"<script(?![^>]*\ssrc=)[^>]*>", head + page.read_text()), f"{page.name}: inline script"
        assert " style=" not in page.read_text() and "<style" not in page.read_text(), page.name


def test_only_the_test_builds_worker_may_evaluate_javascript(test_dist: Path) -> None:
    httpd = make_server(test_dist, port=0, quiet=True)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{httpd.server_address[1]}/"
        assert (
            get(url + "engine_worker.js")[1]["Content-Security-Policy"] == f"{TEST_WORKER_CSP}; frame-ancestors 'none'"
        )
        assert get(url + "index.html")[1]["Content-Security-Policy"] == f"{PAGE_CSP}; frame-ancestors 'none'"
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert WORKER_CSP.replace("'wasm-unsafe-eval'", "'wasm-unsafe-eval' 'unsafe-eval'") == TEST_WORKER_CSP


@pytest.mark.parametrize("text", ["", "{", "[]", '{"variant": "test"', '{"variant": 1}'])
def test_an_unreadable_build_json_gets_the_strict_policy(tmp_path: Path, text: str) -> None:
    (tmp_path / "build.json").write_text(text)
    assert not is_test_build(tmp_path)
    assert policy_for("/engine_worker.js?x=1", is_test_build(tmp_path)).startswith(WORKER_CSP + ";")
