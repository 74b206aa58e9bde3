"""`scellis info` in CPython: lavapipe through wgpu-py and the CPU path through wasmtime."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request

from scellis.engine import installed_engine_version


def run_info(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "scellis", "info", *args], capture_output=True, text=True, check=True, timeout=120
    )


def test_info_lists_lavapipe_and_the_cpu_path() -> None:
    out = run_info().stdout
    assert f"engine {installed_engine_version()}" in out
    assert "via wgpu-py 0.32.0 (Vulkan)" in out and "llvmpipe" in out and "software adapter" in out
    assert "CPU path (WebAssembly) via wasmtime 50.0.1; memory ceiling 4 GiB" in out
    assert "selected: CPU path (WebAssembly) — llvmpipe" in out and "is a software adapter (a CPU rasteriser)" in out


def test_info_json_with_check_reports_the_self_check_on_both_devices() -> None:
    report = json.loads(run_info("--json", "--check").stdout)
    kinds = [d["kind"] for d in report["devices"]]
    assert kinds[0] == "webgpu" and kinds[-1] == "cpu"
    assert report["devices"][0]["host"].endswith("(Vulkan)")
    cpu, gpu = report["cpu_check"], report["webgpu_check"]
    assert cpu["host"] == "wasmtime 50.0.1" and cpu["device"].startswith("CPU path (WebAssembly)")
    assert "llvmpipe" in gpu["device"] and cpu["inputs_sha256"] == gpu["inputs_sha256"]
    for check in (cpu, gpu):
        assert check["ok"] and check["kernels"] == ["matmul [dot]", "reduce"] and len(check["outputs_sha256"]) == 64


def test_info_with_check_says_what_agreed() -> None:
    out = run_info("--check").stdout
    assert "self-check on CPU path (WebAssembly) via wasmtime 50.0.1 (debug: matmul [dot] + reduce): agrees" in out
    assert "self-check on llvmpipe" in out and "DISAGREES" not in out


def test_serve_outside_a_checkout_asks_for_dist(tmp_path, monkeypatch) -> None:
    from scellis import cli

    monkeypatch.setattr(cli, "CHECKOUT", tmp_path)
    assert cli.main(["serve"]) == 2


def test_scellis_serve_builds_and_serves_on_loopback() -> None:
    with subprocess.Popen(
        [sys.executable, "-m", "scellis", "serve", "--port", "0"], stdout=subprocess.PIPE, text=True
    ) as server:
        try:
            lines = []
            assert server.stdout is not None
            for line in server.stdout:
                lines.append(line)
                if "served at" in line:
                    break
            url = lines[-1].split("served at ")[1].split()[0]
            assert url.startswith("http://127.0.0.1:")
            assert any("[build] dist/ is up to date" in line for line in lines)
            with urllib.request.urlopen(url + "build.json", timeout=10) as response:
                assert json.loads(response.read())["engine_version"] == installed_engine_version()
        finally:
            server.terminate()
