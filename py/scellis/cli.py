"""The `scellis` command: `info` (devices here), `check` (the correctness matrix on them), `compile` (a
program's stages), `plan` (its memory on a device), `serve` (the app)."""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scellis.levels import Level

if TYPE_CHECKING:
    from scellis.pipeline import Compiled

CHECKOUT = Path(__file__).resolve().parents[2]


def info(args: argparse.Namespace) -> int:
    from scellis.runtime.report import environment_report

    report = asyncio.run(environment_report(check=args.check))
    if args.json:
        print(json.dumps(report, indent=1))
        return 0
    where = f"{report['environment']}, {report['python']}"
    print(f"scellis {report['package_version']}  engine {report['engine_version']}  ({where})")
    print("devices:")
    for line in report["device_lines"]:
        print(f"  - {line}")
    selected = report["selected"]
    print(f"selected: {selected['reason']}")
    if args.check:
        check = report["cpu_check"]
        add = check["add_sha256"][:16]
        print(f"cpu check ({check['host']}, n={check['n']}): add {add}, sum {check['sum']!r}")
    return 0


def check(args: argparse.Namespace) -> int:
    """Run the correctness matrix on one of this machine's devices and say how it went (exit 1 on a
    broken promise)."""
    from scellis.checks.cases import CASES, unsupported
    from scellis.checks.measure import check_case, failures, summary

    device = _device(args.device)
    features = ", ".join(sorted(device.features)) or "none"  # type: ignore[attr-defined]
    print(f"correctness matrix on {device.name} (optional features: {features})")  # type: ignore[attr-defined]
    skipped = {case.name: unsupported(case, device.features) for case in CASES}  # type: ignore[attr-defined]
    rows = [row for case in CASES if not skipped[case.name] for row in check_case(device, case)]
    for line in summary(rows):
        print(f"  {line}")
    for name, reason in skipped.items():
        if reason:
            print(f"  skipped {name}: {reason}")
    broken = failures(rows)
    for line in broken:
        print(f"  FAILED {line}")
    return 1 if broken else 0


EXAMPLES_HELP = "training examples, for a program that keeps its data set on the device (memory.data resident)"


def _device(kind: str) -> object:
    """This machine's WebGPU adapter through wgpu-py, or the CPU path under wasmtime."""
    if kind == "webgpu":
        from scellis.runtime.wgpu_native import WgpuDevice

        return WgpuDevice()
    from scellis.runtime.cpu_device import CpuDevice

    return asyncio.run(CpuDevice.open())


def _load_program(
    path: str, batch: int | None, command: str, examples: int | None = None
) -> tuple[Any, Compiled] | None:
    """The program's JSON and the compiled program, or None after saying what is wrong with the file."""
    from scellis.graph import ProgramError
    from scellis.pipeline import compile_program

    try:
        data = json.loads(Path(path).read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        print(f"scellis {command}: cannot read {path}: {err}", file=sys.stderr)
        return None
    try:
        if batch is not None:  # validated by apply: the file's problems are named as the file has them
            from scellis.remedies import apply

            data = apply(data, {"batch": batch})
        return data, compile_program(data, examples=examples)
    except (ProgramError, ValueError) as err:
        print(f"scellis {command}: {path}: {err}", file=sys.stderr)
        return None


def plan_cmd(args: argparse.Namespace) -> int:
    """Print the memory a session of the program holds on a device of this machine, the verdict, and
    when it is not green the remedies (exit 1 on red)."""
    from scellis.levels import parse_level
    from scellis.optim.storage import StorageUnsupported
    from scellis.planning import plan

    loaded = _load_program(args.program, args.batch, "plan", args.examples)
    if loaded is None:
        return 2
    data, _ = loaded
    device: Any = _device(args.device)
    try:
        report = plan(data, device, parse_level(args.level), examples=args.examples, budget=args.budget)
    except StorageUnsupported as err:  # float16 storage on a device without shader-f16
        print(f"scellis plan: {args.program}: {err}", file=sys.stderr)
        return 2
    print("\n".join(report.lines()))
    return 1 if report.verdict.color == "red" else 0


def compile_cmd(args: argparse.Namespace) -> int:
    """Print the artifacts of a program's stages (what the app's Guide shows)."""
    from scellis.levels import parse_level
    from scellis.optim.storage import StorageUnsupported

    loaded = _load_program(args.program, args.batch, "compile", args.examples)
    if loaded is None:
        return 2
    compiled = loaded[1]
    level = parse_level(args.level)
    features = frozenset(f for f in args.features.split(",") if f)
    try:
        stages = compiled.stages(level, features)
    except StorageUnsupported as err:
        print(f"scellis compile: {args.program}: {err}", file=sys.stderr)
        return 2
    chosen = [s for s in stages if args.stage in (None, s[0])]
    if not chosen:
        names = ", ".join(repr(title) for title, _ in stages)
        print(f"scellis compile: no stage {args.stage!r}; stages: {names}", file=sys.stderr)
        return 2
    for title, text in chosen:
        print(f"== {title} ==\n{text}\n")
    print(f"training-step key {compiled.key(level, features)}")
    return 0


def serve(args: argparse.Namespace) -> int:
    from scellis.serve import serve as serve_dist

    dist = args.dist
    if dist is None:
        script = CHECKOUT / "build.py"
        if not script.is_file():
            print("scellis serve: not in a source checkout; pass --dist DIR (a built dist/ folder)", file=sys.stderr)
            return 2
        built = subprocess.run([sys.executable, str(script)], cwd=CHECKOUT, check=False)
        if built.returncode != 0:
            return built.returncode
        dist = CHECKOUT / "dist"
    serve_dist(Path(dist), host=args.host, port=args.port)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="scellis", description="Scellis: training in the browser, on WebGPU or the CPU path."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    p_info = sub.add_parser("info", help="list the devices this environment can use")
    p_info.add_argument("--json", action="store_true", help="print the full report as JSON")
    p_info.add_argument("--check", action="store_true", help="also run the CPU path's first kernels")
    p_info.set_defaults(func=info)
    p_check = sub.add_parser("check", help="run the correctness matrix on a device here, against the reference")
    p_check.add_argument("--device", required=True, choices=["webgpu", "cpu"], help="wgpu-py's adapter, or wasmtime")
    p_check.set_defaults(func=check)
    p_compile = sub.add_parser("compile", help="validate a program JSON file and print every stage's artifact")
    p_compile.add_argument("program", help="program JSON (format scellis.program/1)")
    p_compile.add_argument("--stage", default=None, help="print only this stage, e.g. 'typed IR'")
    p_compile.add_argument(
        "--level", required=True, choices=[level.value for level in Level], help="determinism level of the kernels"
    )
    p_compile.add_argument("--batch", type=int, default=None, help="batch size (default: the program's loop setting)")
    p_compile.add_argument("--examples", type=int, default=None, help=EXAMPLES_HELP)
    p_compile.add_argument(
        "--features",
        default="",
        choices=["", "shader-f16"],
        help="optional device features to compile for (fast uses shader-f16); default: none",
    )
    p_compile.set_defaults(func=compile_cmd)
    p_plan = sub.add_parser("plan", help="the memory a session of a program holds on a device here")
    p_plan.add_argument("program", help="program JSON (format scellis.program/1)")
    p_plan.add_argument("--device", required=True, choices=["webgpu", "cpu"], help="wgpu-py's adapter, or wasmtime")
    p_plan.add_argument("--level", required=True, choices=[level.value for level in Level], help="determinism level")
    p_plan.add_argument("--batch", type=int, default=None, help="batch size (default: the program's loop setting)")
    p_plan.add_argument("--budget", type=int, default=None, help="bytes the device may use, instead of measuring it")
    p_plan.add_argument("--examples", type=int, default=None, help=EXAMPLES_HELP)
    p_plan.set_defaults(func=plan_cmd)
    p_serve = sub.add_parser("serve", help="build when stale (in a checkout) and serve the app")
    p_serve.add_argument("--host", default="127.0.0.1")
    p_serve.add_argument("--port", type=int, default=8000, help="0 picks a free port")
    p_serve.add_argument("--dist", type=Path, default=None, help="serve this built dist/ instead of building")
    p_serve.set_defaults(func=serve)
    args = parser.parse_args(argv)
    status: int = args.func(args)
    return status


if __name__ == "__main__":
    sys.exit(main())
