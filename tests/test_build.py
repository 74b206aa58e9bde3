"""build.py: dist/ is complete, described by build.json, reproducible and incremental."""

from __future__ import annotations

import gzip
import hashlib
import json
import re
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

from scellis.engine import installed_engine_version

ROOT = Path(__file__).resolve().parents[1]


def manifest(dist: Path) -> dict:
    return json.loads((dist / "build.json").read_text())


def test_build_json_lists_every_shipped_file_with_its_hash(dist: Path) -> None:
    files = manifest(dist)["files"]
    on_disk = {str(p.relative_to(dist)) for p in dist.rglob("*") if p.is_file()} - {"build.json"}
    assert set(files) == on_disk
    for name, entry in files.items():
        data = (dist / name).read_bytes()
        assert entry == {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}, name


def test_dist_holds_the_app_pyodide_wheel_and_cpu_module(dist: Path) -> None:
    data = manifest(dist)
    for name in [
        "index.html",
        "main.js",
        "sw.js",
        "limits.html",
        "limits_page.js",
        "start.html",
        "theme.js",
        "scellis_cpu.wasm",
        "pyodide/pyodide.mjs",
        data["wheel"],
    ]:
        assert name in data["files"], name
    assert data["tools"]["pyodide"] == "314.0.7"
    assert set(data["tools"]) == {"python", "zig", "hatchling", "esbuild", "pyodide", "scikit-learn"}


def test_the_python_snapshot_holds_the_builds_wheel(dist: Path) -> None:
    """build.json names the snapshot (scripts/python-snapshot.mjs) and the wheel it was made from, which is
    the one it ships; the snapshot is gzipped, in Pyodide's snapshot format (its magic, then the
    interpreter's memory). That the same sources make the same bytes: test_clean_build_reproduces_build_json."""
    data = manifest(dist)
    wheel = data["wheel"]
    held = {"file": "python-snapshot.gz", "wheel": wheel, "wheel_sha256": data["files"][wheel]["sha256"]}
    assert data["snapshot"] == held
    memory = gzip.decompress((dist / "python-snapshot.gz").read_bytes())
    assert memory[:4] == b"\x00snp" and len(memory) > 16 << 20


def test_wheel_carries_the_same_cpu_module_and_wgsl(dist: Path) -> None:
    data = manifest(dist)
    with zipfile.ZipFile(dist / data["wheel"]) as wheel:
        names = wheel.namelist()
        shipped = wheel.read("scellis/_assets/scellis_cpu.wasm")
    assert hashlib.sha256(shipped).hexdigest() == data["files"]["scellis_cpu.wasm"]["sha256"]
    wgsl = sorted(n.removeprefix("scellis/_assets/") for n in names if n.endswith(".wgsl"))
    assert wgsl == sorted(f"wgsl/{p.name}" for p in (ROOT / "wgsl").glob("*.wgsl"))
    assert not [n for n in names if "__pycache__" in n]


def test_engine_version_agrees_with_the_installed_package(dist: Path) -> None:
    data = manifest(dist)
    assert data["engine_version"] == installed_engine_version()
    assert data["engine_version"].startswith(data["package_version"] + "+")


def test_second_build_does_nothing(build_script: ModuleType, dist: Path) -> None:
    build_script.build()  # brings in what this session's tests measured since dist/ was built (correctness)
    assert build_script.build() == []


@pytest.fixture(scope="module")
def clean_build(tmp_path_factory: pytest.TempPathFactory, dist: Path) -> Path:
    """The tracked source, as a clean clone would have it, built from scratch (never changed: tests that
    change a build take a fresh_copy of it)."""
    root = tmp_path_factory.mktemp("clone")
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for name in tracked.decode().split("\0"):
        if name and (ROOT / name).is_file():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, root / name)
    (root / "node_modules").symlink_to(ROOT / "node_modules")
    (root / ".venv").symlink_to(ROOT / ".venv")  # what scripts/setup installs: tools and the data packages
    done = subprocess.run([sys.executable, "build.py"], cwd=root, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return root


@pytest.fixture
def fresh_copy(clean_build: Path, tmp_path: Path) -> Path:
    """A copy of the clean build for one test to change."""
    return Path(shutil.copytree(clean_build, tmp_path / "clone", symlinks=True))


def test_clean_build_reproduces_build_json(clean_build: Path, dist: Path) -> None:
    """Every file built from sources is the same; correctness.json is not one of them: it carries what
    this checkout's test runs measured (a clean copy has measured nothing yet)."""
    ours, theirs = manifest(dist), manifest(clean_build / "dist")
    for data in (ours, theirs):
        data["files"].pop("correctness.json")
    assert theirs == ours
    assert json.loads((clean_build / "dist" / "correctness.json").read_text())["records"] == []


def test_changed_kernel_source_rebuilds_only_what_depends_on_it(
    fresh_copy: Path, load_build_script: Callable[[Path], ModuleType]
) -> None:
    build = load_build_script(fresh_copy)
    assert build.build() == []
    source = fresh_copy / "wasm" / "cpu_views.c"
    source.write_text(source.read_text() + "\n/* changed */\n")
    before = manifest(fresh_copy / "dist")["engine_version"]
    # A comment compiles to the same module: nothing downstream reruns, the engine version stays.
    assert build.build() == ["wasm", "manifest"]
    assert manifest(fresh_copy / "dist")["engine_version"] == before
    copy = "((sc_u32 *)dst)[i] = ((const sc_u32 *)src)[i];"
    assert copy in source.read_text()
    source.write_text(source.read_text().replace(copy, copy.replace("[i];", "[i] + 1u;")))
    assert build.build() == ["wasm", "wheel", "snapshot", "app", "manifest"]
    assert manifest(fresh_copy / "dist")["engine_version"] != before


def test_missing_npm_package_names_the_fix(build_script: ModuleType, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(build_script, "NODE_MODULES", tmp_path)
    with pytest.raises(SystemExit, match=r"'pyodide' is missing .* run `npm ci`"):
        build_script.npm_version("pyodide")


def test_missing_python_tool_names_the_fix(build_script: ModuleType) -> None:
    with pytest.raises(SystemExit, match=r"no-such-tool is not installed .*`scripts/setup`"):
        build_script.python_tool("no_such_tool_module", "no-such-tool")


def test_compiler_error_is_reported_with_its_output(
    fresh_copy: Path, load_build_script: Callable[[Path], ModuleType]
) -> None:
    build = load_build_script(fresh_copy)
    (fresh_copy / "wasm" / "broken.c").write_text("int broken(void) { return undeclared; }\n")
    try:
        with pytest.raises(SystemExit, match=r"zig cc failed[\s\S]*undeclared"):
            build.build()
    finally:
        (fresh_copy / "wasm" / "broken.c").unlink()


def test_modified_output_is_rebuilt_and_strays_are_removed(
    fresh_copy: Path, load_build_script: Callable[[Path], ModuleType]
) -> None:
    build = load_build_script(fresh_copy)
    assert build.build() == []
    dist = fresh_copy / "dist"
    original = (dist / "index.html").read_bytes()
    (dist / "index.html").write_bytes(original + b"<!-- edited -->")
    (dist / "leftover.js").write_text("old")
    assert build.build() == ["app", "strays", "manifest"]
    assert (dist / "index.html").read_bytes() == original
    assert not (dist / "leftover.js").exists()
    assert "leftover.js" not in manifest(dist)["files"]


def test_unpacked_wheel_is_self_contained(dist: Path, tmp_path: Path) -> None:
    """What Pyodide installs works alone: assets from the wheel, the engine version of build.json."""
    data = manifest(dist)
    with zipfile.ZipFile(dist / data["wheel"]) as wheel:
        wheel.extractall(tmp_path)
    script = (
        "import sys, asyncio, json; sys.path.insert(0, sys.argv[1]); import scellis;"
        "assert scellis.__file__.startswith(sys.argv[1]), scellis.__file__;"
        "from scellis.runtime.report import environment_report;"
        "print(json.dumps(asyncio.run(environment_report(check=True))))"
    )
    done = subprocess.run(
        [sys.executable, "-P", "-c", script, str(tmp_path)], capture_output=True, text=True, check=False, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["engine_version"] == data["engine_version"]
    assert report["cpu_check"]["ok"] and report["webgpu_check"]["ok"]  # the wheel's own templates and module


EVAL = re.compile(r"(?<![-\w])eval\b")  # a call of eval; not 'unsafe-eval' in a policy, nor 'evaluated'
HOOKS = re.compile(r"inWorker|testHooks|\bpython:|\bscript:|SCELLIS_TEST_HOOKS")


def test_the_shipped_bundles_hold_no_test_hook_and_no_eval(dist: Path, test_dist: Path) -> None:
    shipped = {p.name: p.read_text() for p in dist.glob("*.js")}
    assert {"main.js", "engine_worker.js", "sw.js"} <= set(shipped)
    for name, text in shipped.items():
        assert not EVAL.search(text), f"{name} calls eval"
        assert not HOOKS.search(text), f"{name} carries a test hook: {HOOKS.search(text)}"
    # the same search finds them in the test build, so it would find them in dist/
    assert EVAL.search((test_dist / "engine_worker.js").read_text())
    assert (
        HOOKS.search((test_dist / "engine_worker.js").read_text()) and "inWorker" in (test_dist / "main.js").read_text()
    )


def test_the_test_build_is_dist_with_other_bundles(build_script: ModuleType, dist: Path, test_dist: Path) -> None:
    ours, theirs = manifest(dist), manifest(test_dist)
    assert (ours["variant"], theirs["variant"]) == ("production", "test")
    assert set(theirs["files"]) == set(ours["files"])
    differ = {name for name in ours["files"] if ours["files"][name] != theirs["files"][name]}
    assert differ <= set(build_script.APP_BUNDLES) and {"main.js", "engine_worker.js"} <= differ
    for name, entry in theirs["files"].items():
        assert hashlib.sha256((test_dist / name).read_bytes()).hexdigest() == entry["sha256"], name
    assert {k: v for k, v in theirs.items() if k not in ("variant", "files")} == {
        k: v for k, v in ours.items() if k not in ("variant", "files")
    }


def test_second_test_build_does_nothing(build_script: ModuleType, test_dist: Path) -> None:
    build_script.build_test()
    assert build_script.build_test() == []


def test_the_service_worker_carries_the_servers_policies(dist: Path) -> None:
    from scellis.serve import PAGE_CSP, TEST_WORKER_CSP, WORKER_CSP

    worker = (dist / "sw.js").read_text()
    assert PAGE_CSP in worker and WORKER_CSP in worker
    assert TEST_WORKER_CSP not in worker  # the production service worker never allows eval
