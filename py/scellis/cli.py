"""The `scellis` command: `info` (devices here), `check` (the correctness matrix on them), `examples` (the
example programs), `compile` (a program's stages), `plan` (its memory on a device), `run` (train it, or run
a simulation or analysis, and pin the run in a manifest), `verify` (re-run a manifest and compare),
`fsck` and `gc` (check a checkpoint store, collect its garbage), `export torch` and `import torch` (hand a
run to PyTorch and take it back: scellis.torchexport), `serve` (the app)."""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from scellis.levels import Level
from scellis.lower.merge import MAX_BINDINGS, MOST_BINDINGS
from scellis.models.commands import finetune_parser, model_files, text_arguments, texts
from scellis.runtime.device import lowering_features
from scellis.torchexport.command import parsers as export_parsers

if TYPE_CHECKING:
    from scellis.datasets import Split
    from scellis.manifest import Manifest
    from scellis.pipeline import Compiled
    from scellis.session import EpochResult, Progress, Session

CHECKOUT = Path(__file__).resolve().parents[2]


def info(args: argparse.Namespace) -> int:
    """This environment's devices (and with --check, the self-check on them: exit 1 when one disagrees)."""
    from scellis.runtime.report import environment_report

    report = asyncio.run(environment_report(check=args.check))
    checks = [c for c in (report.get("cpu_check"), report.get("webgpu_check")) if c]
    if args.json:
        print(json.dumps(report, indent=1))
    else:
        _print_info(report, checks)
    return 0 if all(c["ok"] for c in checks) else 1


def _print_info(report: dict, checks: list[dict]) -> None:
    where = f"{report['environment']}, {report['python']}"
    print(f"scellis {report['package_version']}  engine {report['engine_version']}  ({where})")
    print("devices:")
    for line in report["device_lines"]:
        print(f"  - {line}")
    selected = report["selected"]
    chosen = selected["device"]
    name = "CPU path (WebAssembly)" if chosen["kind"] == "cpu" else f"WebGPU {chosen['name']}"
    print(f"selected: {name} — {selected['reason']}")
    for check in checks:
        verdict = "agrees with float64" if check["ok"] else "DISAGREES with float64"
        errors = ", ".join(f"{c['output']} {c['error']:.2g} (tolerance {c['tolerance']:.2g})" for c in check["checks"])
        print(f"self-check on {check['device']} ({check['level']}: {' + '.join(check['kernels'])}): {verdict}")
        print(f"  outputs {check['outputs_sha256'][:16]}, error {errors}")


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
        from scellis.runtime.webgpu.native import WgpuDevice

        return WgpuDevice()
    from scellis.runtime.cpu.device import CpuDevice

    return asyncio.run(CpuDevice.open())


def _read_program_json(path: str, command: str) -> dict[str, Any] | None:
    """The program file's JSON, validated (for what it reads; compiled later, for its data), or None after
    saying what is wrong."""
    from scellis.graph import ProgramError, validate
    from scellis.jsontext import JsonTextError

    try:
        data = _read_json(path)
        validate(data)
    except (OSError, JsonTextError, ProgramError) as err:
        print(f"scellis {command}: cannot read {path}: {err}", file=sys.stderr)
        return None
    return data


def _read_json(path: str) -> Any:
    """The JSON value of the file at `path`, read as untrusted text (scellis.jsontext: depth-bounded, named
    JsonTextError on anything that is not JSON); OSError when it cannot be read."""
    from scellis.jsontext import parse

    return parse(Path(path).read_bytes(), what=f"the JSON file {path}")


def _load_program(
    path: str, batch: int | None, command: str, examples: int | None = None
) -> tuple[Any, Compiled] | None:
    """The program's JSON and the compiled program, or None after saying what is wrong with the file."""
    from scellis.graph import ProgramError
    from scellis.jsontext import JsonTextError
    from scellis.pipeline import compile_program

    try:
        data = _read_json(path)
    except (OSError, JsonTextError) as err:
        print(f"scellis {command}: cannot read {path}: {err}", file=sys.stderr)
        return None
    try:
        if batch is not None:  # validated by apply: the file's problems are named as the file has them
            from scellis.plan.remedies import apply

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
    from scellis.pipeline import plan_report
    from scellis.plan.budget import Budget

    loaded = _load_program(args.program, args.batch, "plan", args.examples)
    if loaded is None:
        return 2
    data, compiled = loaded
    device: Any = _device(args.device)
    given = None if args.budget is None else Budget(args.budget, f"given: {args.budget:,} bytes")
    try:
        at = compiled.at(parse_level(args.level), device.features)
        report = asyncio.run(plan_report(data, at, device, {"examples": args.examples}, given))
    except StorageUnsupported as err:  # float16 storage on a device without shader-f16
        print(f"scellis plan: {args.program}: {err}", file=sys.stderr)
        return 2
    print("\n".join(report.lines()))
    return 1 if report.verdict.color == "red" else 0


def compile_cmd(args: argparse.Namespace) -> int:
    """Print the artifacts of a program's stages (what the app's Guide shows)."""
    from scellis import guide
    from scellis.levels import parse_level
    from scellis.optim.storage import StorageUnsupported

    loaded = _load_program(args.program, args.batch, "compile", args.examples)
    if loaded is None:
        return 2
    compiled = loaded[1]
    level = parse_level(args.level)
    if args.bindings < MAX_BINDINGS:
        print(f"scellis compile: --bindings {args.bindings}: every WebGPU device binds {MAX_BINDINGS}", file=sys.stderr)
        return 2
    enabled = frozenset(f for f in args.features.split(",") if f)
    features = lowering_features(enabled, args.bindings, args.software)
    try:
        at = compiled.at(level, features)
        stages = guide.stages(at)
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
    print(f"training-step key {at.key}")
    return 0


DATA_HELP = (
    "'digits' (scikit-learn's digits, split as the app ships them), 'breast-cancer' (scikit-learn's copy, every "
    "row in both splits), or a folder of the app's data files: digits-train-x.f32, digits-train-y.i32, "
    "digits-test-x.f32, digits-test-y.i32 (float32 pixels, int32 labels), or 'texts:FILE.csv' (labelled texts for "
    "a pretrained model's program: tokenized by --model's tokenizer at the program's window, split by the fixed "
    "seed); leave it out for a program without input nodes (a simulation)"
)
VERIFY_EXITS = (
    "Re-runs the pinned run and compares every claim it can recompute: program key, settings, data versions, "
    "each checkpoint key in order, final key, metrics, decision log, plan bytes, engine; names each difference "
    "and lists what it cannot check. exit 0: verified; 1: the data, a claim or a pinned checkpoint object "
    "differs from the pinned; 2: cannot be verified here"
)


def _data_for(
    source: str | None, program: dict[str, Any], command: str, name: str, args: argparse.Namespace | None = None
) -> tuple[Split, Split] | None:
    """(train, test) from --data for `program` (empty splits for a program without input nodes), or None
    after saying what is wrong."""
    from scellis.datasets import Split
    from scellis.manifest.record import reads_data

    if not reads_data(program):
        if source is not None:
            print(
                f"scellis {command}: {name} has no input node, so it reads no data: leave out --data", file=sys.stderr
            )
            return None
        return Split.empty(), Split.empty()
    if source is None:
        inputs = ", ".join(n["id"] for n in program["nodes"] if n["op"] == "input")
        print(f"scellis {command}: {name} reads data (input nodes {inputs}): give --data", file=sys.stderr)
        return None
    if source.startswith("texts:") and args is not None:
        return texts(source.removeprefix("texts:"), program, args, command)
    return _read_data(source, command)


def _read_data(source: str, command: str) -> tuple[Split, Split] | None:
    """(train, test) from --data, or None after saying what is wrong with it."""
    from scellis.datasets import (
        DATA_FILES,
        breast_cancer_csv,
        cancer_from_files,
        digits_csv,
        from_files,
        read_breast_cancer,
        read_digits,
    )

    if source == "digits":
        return read_digits(digits_csv().read_bytes())
    if source == "breast-cancer":
        return cancer_from_files(read_breast_cancer(breast_cancer_csv().read_bytes()))
    try:
        train, test = from_files({name: (Path(source) / name).read_bytes() for name in DATA_FILES})
    except OSError as err:
        print(
            f"scellis {command}: --data {source}: {err}; a data folder holds {', '.join(DATA_FILES)}", file=sys.stderr
        )
        return None
    except ValueError as err:
        print(f"scellis {command}: --data {source}: {err}", file=sys.stderr)
        return None
    return train, test


def _seed(text: str) -> int:
    seed = int(text)
    if not 0 <= seed < 2**64:
        raise argparse.ArgumentTypeError(f"a seed is an integer from 0 to 2**64 - 1, not {seed}")
    return seed


def _epochs(text: str) -> int:
    epochs = int(text)
    if epochs < 1:
        raise argparse.ArgumentTypeError(f"epochs must be at least 1, not {epochs}")
    return epochs


def _progress_printer(session: Session) -> Callable[[EpochResult], None]:
    """Print each finished epoch with the session's latest progress: steps/s, time left, metrics."""
    latest: list[Progress] = []

    def note(progress: Progress) -> None:
        latest[:] = [progress]

    def report(result: EpochResult) -> None:
        print(f"  {latest[-1] if latest else f'epoch {result.epoch + 1}'}", flush=True)

    session.progress = note
    return report


BAR_WIDTH = 28
BAR_CHUNK_S = 0.25  # on a terminal the run goes in chunks of about this long, the bar redrawn after each


def progress_bar(step: int, total: int, rate: float | None, eta: float | None, width: int = BAR_WIDTH) -> str:
    """One line: a bar of `width` cells, steps of the total, steps/s and the time left (once measured)."""
    filled = min(width, round(width * step / total)) if total else 0
    line = f"[{'#' * filled}{'.' * (width - filled)}] step {step}/{total}"
    if rate is not None:
        line += f", {rate:.1f} steps/s"
    if eta is not None:
        line += f", {eta:.0f} s left"
    return line


async def _drive(session: Session, train: Split, test: Split, epochs: int, bar: TextIO | None) -> None:
    """Run the session's loop program for `epochs` (already started), each finished epoch printed; on a
    terminal (`bar`) in chunks of about BAR_CHUNK_S, with a progress bar redrawn after each. Chunks change
    no bit: a run paused and continued is the same run (Session.run)."""
    report = _progress_printer(session)
    if bar is None:
        await session.run(train, test, epochs=epochs, report=report)
        return
    total, chunk, began, first = epochs * session.steps_per_epoch(train), 1, time.perf_counter(), session.steps

    def printed(result: EpochResult) -> None:
        bar.write("\r\033[K")  # the bar's line, cleared for the epoch's own
        report(result)

    while session.epoch < epochs and not session.loop.stopped:
        start, before = time.perf_counter(), session.steps
        await session.run(train, test, epochs=epochs, steps=chunk, report=printed)
        took, done = time.perf_counter() - start, session.steps - before
        if done == 0:
            break
        chunk = max(1, min(chunk * 4, round(done / took * BAR_CHUNK_S) if took > 0 else chunk * 4))
        rate = (session.steps - first) / (time.perf_counter() - began)
        bar.write("\r\033[K" + progress_bar(session.steps, total, rate, (total - session.steps) / rate))
        bar.flush()
    bar.write("\r\033[K")
    bar.flush()


def _print_log(manifest: Manifest) -> None:
    print(f"decisions ({len(manifest.events)}):" if manifest.events else "decisions: none")
    for event in manifest.events:
        print(f"  {event}")


def _run_inputs(
    args: argparse.Namespace,
) -> tuple[dict[str, bytes], tuple[Split, Split], tuple[dict[str, Any], Compiled]] | None:
    """What `run` trains: the --model files ({} without), the data and the compiled program; None after
    saying what is wrong (an --export the program cannot give among it, before anything trains)."""
    raw = _read_program_json(args.program, "run")
    model = None if raw is None else model_files(args, raw, "run")
    data = None if raw is None or model is None else _data_for(args.data, raw, "run", args.program, args)
    loaded = None if data is None else _load_program(args.program, None, "run", data[0].n)
    if model is None or data is None or loaded is None:
        return None
    program = loaded[0]
    if args.export and "weights" not in program:
        print(f"scellis run: --export: {args.program} starts from no pretrained model", file=sys.stderr)
        return None
    if "adapter" in args.export and not any(n["id"].endswith("-lora-a") for n in program["nodes"]):
        print(f"scellis run: --export adapter: {args.program} has no LoRA adapters (export the model)", file=sys.stderr)
        return None
    return model, data, loaded


async def _export(session: Session, args: argparse.Namespace, model: dict[str, bytes]) -> None:
    """Each --export of the trained session as <program>-<what>.zip beside the manifest."""
    from scellis.models.finetune import exported

    out = Path(args.manifest or f"{Path(args.program).stem}.manifest.json")
    for what in args.export:
        where = out.with_name(f"{Path(args.program).stem}-{what}.zip")
        where.write_bytes(await exported(session, what, model))
        print(f"exported the {'LoRA adapter (PEFT)' if what == 'adapter' else 'model'}: {where}")


def run_cmd(args: argparse.Namespace) -> int:
    """Train a program with its loop program on a device here, its checkpoints in a store, then pin the
    run in a manifest (exit 1 when the memory plan is red, 2 when the program or data cannot be read)."""
    from scellis.levels import parse_level
    from scellis.manifest import build_manifest, installed_engine, to_json
    from scellis.manifest.replay import NotedDevice, new_session
    from scellis.ops.indices import IndexRangeError
    from scellis.session import PlanRefused, checkpoints_to
    from scellis.store import DirectoryStore, ResumeError, StoreError, load, save

    inputs = _run_inputs(args)
    if inputs is None:
        return 2
    model, (train, test), (program, compiled) = inputs
    epochs = compiled.program.loop.epochs if args.epochs is None else args.epochs
    device = NotedDevice(_device(args.device))  # type: ignore[arg-type]
    level = parse_level(args.determinism)
    try:
        weights = model.get("model.safetensors") if "weights" in program else None
        session = new_session(program, device, level=level, seed=args.seed, train=train, test=test, weights=weights)
    except ValueError as err:  # float16 storage on a device without shader-f16, a split smaller than a batch
        # (or weights other than the program pins)
        print(f"scellis run: {args.program}: {err}", file=sys.stderr)
        return 2
    store = DirectoryStore(args.store)
    session.checkpointer = checkpoints_to(store, args.keep_checkpoints)
    doing = "training" if compiled.program.trains else "running"
    print(f"{doing} {compiled.program.name} on {device.name} at level {level.value}, seed {args.seed}, {epochs} epochs")

    async def train_and_save() -> str:
        if args.resume is None:
            await session.start(train)
        else:
            key = session.at.key
            await session.resume(await load(store, args.resume, expect_program=key, expect_level=level), train)
        await _drive(session, train, test, epochs, sys.stderr if sys.stderr.isatty() else None)
        await _export(session, args, model)
        return await save(store, await session.checkpoint())

    try:
        final = asyncio.run(train_and_save())
    except PlanRefused as refused:
        print(f"scellis run: {refused}", file=sys.stderr)
        return 1
    except IndexRangeError as err:  # an index the data fit check could not see (e.g. one the program computes)
        print(f"scellis run: {args.program}: {err}", file=sys.stderr)
        return 2
    except (ResumeError, StoreError) as err:
        print(f"scellis run: {err}", file=sys.stderr)
        return 2
    engine = installed_engine(CHECKOUT / "dist" / "build.json")
    manifest = build_manifest(
        session, train, test, device_kind=args.device, epochs=epochs, final=final, engine=engine, budget=device.noted
    )
    out = Path(args.manifest or f"{Path(args.program).stem}.manifest.json")
    out.write_text(to_json(manifest))
    _print_log(manifest)
    print(f"final checkpoint {final} in {args.store}\nmanifest {out}")
    return 0


def export_cmd(args: argparse.Namespace) -> int:
    """`export torch`: the program, its data and model files read as `run` reads them, then the export folder
    written (scellis.torchexport.command); exit 2 when anything cannot be read or exported."""
    from scellis.torchexport.command import export_folder

    raw = _read_program_json(args.program, "export")
    model = None if raw is None else model_files(args, raw, "export")
    data = None if raw is None or model is None else _data_for(args.data, raw, "export", args.program, args)
    loaded = None if data is None else _load_program(args.program, None, "export", data[0].n)
    if model is None or data is None or loaded is None:
        return 2
    args.open_device = lambda: _device(args.device)
    return export_folder(args, loaded, data, model)


def _read_pinned(source: str) -> Any:
    """The run a `verify` argument pins: a share link (text with '#run='), or a manifest file's path."""
    from scellis.manifest import read_manifest, read_share_link
    from scellis.manifest.replay import Pins

    if "#run=" in source:
        return Pins.of(read_share_link(source))
    return Pins.of(read_manifest(Path(source).read_bytes()))


def verify_cmd(args: argparse.Namespace) -> int:
    """Check a manifest (or a share link) and the data against its pins, re-run its program at the pinned
    level, seed and device kind, and compare the final checkpoint with the pinned one (VERIFY_EXITS)."""
    from scellis.manifest import ManifestError, check_data, installed_engine
    from scellis.manifest.record import reads_data
    from scellis.manifest.replay import check_store, compare, replay, replay_session
    from scellis.session import PlanRefused
    from scellis.store import DirectoryStore

    shown = args.manifest if "#run=" not in args.manifest else "the share link"
    try:
        pins = _read_pinned(args.manifest)
    except (OSError, ManifestError, ValueError) as err:
        print(f"scellis verify: {shown}: {err}", file=sys.stderr)
        return 2
    model = model_files(args, pins.program, "verify")
    data = None if model is None else _data_for(args.data, pins.program, "verify", shown, args)
    if model is None or data is None:
        return 2
    differ = check_data(pins.settings.data, *data)
    for line in differ:
        print(f"scellis verify: {line}", file=sys.stderr)
    if differ:
        print("scellis verify: nothing was run: give the data the run pins", file=sys.stderr)
        return 1
    pinned = pins.settings
    device: Any = _device(pinned.device)
    if pinned.data:
        print(f"data matches the pinned versions: {'; '.join(str(v) for v in pinned.data)}")
    elif not reads_data(pins.program):
        print("the program reads no data")
    else:
        print("the link pins no data versions: the data given is taken as it is")
    stored = None
    if args.store is not None:  # read before the re-run adds its own checkpoints there
        stored, said = asyncio.run(check_store(DirectoryStore(args.store), pins))
        print(f"store {args.store}: {said}")
    else:
        print("not checked: the checkpoint objects the run pins (give --store to read them)")
    print(f"re-running at level {pinned.level.value}, seed {pinned.seed}, on {device.name}: {pinned.steps} steps")
    with tempfile.TemporaryDirectory(prefix="scellis-verify-") as scratch:
        try:
            weights = model.get("model.safetensors") if "weights" in pins.program else None
            session = replay_session(pins, device, *data, DirectoryStore(args.store or scratch), weights=weights)
            outcome = asyncio.run(replay(session, pins, *data, report=_progress_printer(session)))
        except (PlanRefused, ValueError) as err:
            print(f"scellis verify: cannot re-run it here: {err}", file=sys.stderr)
            return 2
    ok, lines = compare(pins, outcome, installed_engine(CHECKOUT / "dist" / "build.json"), stored)
    print("\n".join(lines), file=sys.stdout if ok else sys.stderr)
    return 0 if ok else 1


def examples_cmd(args: argparse.Namespace) -> int:
    """List the example programs (name, what data they read, summary), or print one's program JSON."""
    from scellis.examples import catalogue

    found = catalogue()
    if args.name is None:
        for name, (data, summary, _) in found.items():
            print(f"{name}  [data: {data}]\n    {summary}")
        return 0
    if args.name not in found:
        print(f"scellis examples: no example {args.name!r}; examples: {', '.join(found)}", file=sys.stderr)
        return 2
    print(json.dumps(found[args.name][2](), indent=1))
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


KEEP_HELP = (3, "loop-program checkpoints kept: the last N (default 3), the best by held-out loss, the final")


def _keep(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"keep at least 1 checkpoint, not {text!r}")
    return int(text)


def fsck_cmd(args: argparse.Namespace) -> int:
    """Verify every object of a store; list the damage (exit 1 when there is any)."""
    from scellis.store import DirectoryStore
    from scellis.store.fsck import check

    store = DirectoryStore(args.store)
    if not store.objects.is_dir():
        print(f"scellis fsck: {args.store} is not an object store (it has no objects/ folder)", file=sys.stderr)
        return 2
    whole, damage = check(store)
    for item in damage:
        print(item)
    print(f"{whole} objects whole, {len(damage)} damaged" + ("" if damage else f": {args.store} is sound"))
    if damage and args.delete_damaged:
        for item in damage:
            _remove(item.path)
        print(f"deleted the {len(damage)} damaged entries")
    return 1 if damage else 0


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        import shutil

        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)


def gc_cmd(args: argparse.Namespace) -> int:
    """Delete what no checkpoint keeps (store.fsck.collect) and stale temporaries; say what and how much."""
    from scellis.store import DirectoryStore
    from scellis.store.fsck import collect

    store = DirectoryStore(args.store)
    if not store.objects.is_dir():
        print(f"scellis gc: {args.store} is not an object store (it has no objects/ folder)", file=sys.stderr)
        return 2
    removed = collect(store, dry_run=args.dry_run, min_age_s=args.older_than)
    verb = "would remove" if args.dry_run else "removed"
    for item in removed:
        print(f"{verb} {item.kind} {item.path} ({item.size:,} bytes)")
    freed = sum(item.size for item in removed)
    print(f"{verb} {len(removed)} entries, {freed:,} bytes {'to free' if args.dry_run else 'freed'}")
    return 0


def _store_commands(sub: Any, p_run: argparse.ArgumentParser) -> None:
    """`run`'s store options, and the `fsck` and `gc` commands."""
    p_run.add_argument("--resume", default=None, help="go on from this checkpoint (its key) in the store")
    p_run.add_argument("--keep-checkpoints", type=_keep, default=KEEP_HELP[0], help=KEEP_HELP[1])
    p_run.set_defaults(func=run_cmd)
    p_fsck = sub.add_parser("fsck", help="verify every object in a checkpoint store and list any damage")
    p_fsck.add_argument("store", nargs="?", default="scellis-store", help="the store folder (default scellis-store)")
    p_fsck.add_argument("--delete-damaged", action="store_true", help="also delete every damaged entry found")
    p_fsck.set_defaults(func=fsck_cmd)
    p_gc = sub.add_parser("gc", help="delete objects no checkpoint keeps, and temporaries of cut-short writes")
    p_gc.add_argument("store", nargs="?", default="scellis-store", help="the store folder (default scellis-store)")
    p_gc.add_argument("--dry-run", action="store_true", help="only list what would be removed")
    p_gc.add_argument(
        "--older-than", type=float, default=600.0, help="seconds a temporary must be old to count as stale (600)"
    )
    p_gc.set_defaults(func=gc_cmd)


def _run_parser(sub: Any) -> argparse.ArgumentParser:
    p_run: argparse.ArgumentParser = sub.add_parser(
        "run", help="train a program on a device here and pin the run in a manifest"
    )
    p_run.add_argument("program", help="program JSON (format scellis.program/1)")
    p_run.add_argument("--data", default=None, help=DATA_HELP)
    p_run.add_argument("--device", required=True, choices=["webgpu", "cpu"], help="wgpu-py's adapter, or wasmtime")
    p_run.add_argument(
        "--determinism", required=True, choices=[level.value for level in Level], help="determinism level"
    )
    p_run.add_argument("--seed", required=True, type=_seed, help="seed of every random draw (0 to 2**64 - 1)")
    p_run.add_argument("--store", default="scellis-store", help="object store folder for the checkpoints")
    p_run.add_argument("--manifest", default=None, help="where to write it (default: <program>.manifest.json)")
    p_run.add_argument("--epochs", type=_epochs, default=None, help="epochs (default: the program's loop setting)")
    p_run.add_argument(
        "--export",
        action="append",
        default=[],
        choices=["adapter", "model"],
        help="after training, write the fine-tuned model's files as <program>-<what>.zip beside the manifest: "
        "'adapter' (the LoRA adapter in PEFT's format and the head), 'model' (the merged model, its config and "
        "tokenizer, and the head); may repeat",
    )
    text_arguments(p_run)
    return p_run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="scellis", description="Scellis: training in the browser, on WebGPU or the CPU path."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    p_info = sub.add_parser("info", help="list the devices this environment can use")
    p_info.add_argument("--json", action="store_true", help="print the full report as JSON")
    p_info.add_argument(
        "--check",
        action="store_true",
        help="also run the self-check on each device (exit 1 if one disagrees with float64)",
    )
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
    p_compile.add_argument(
        "--bindings",
        type=int,
        default=MAX_BINDINGS,
        help=f"storage buffers a kernel may bind on the device (its maxStorageBuffersPerShaderStage; {MAX_BINDINGS} "
        f"is WebGPU's default, browsers often offer 10; merges use at most {MOST_BINDINGS}); default: {MAX_BINDINGS}",
    )
    p_compile.add_argument(
        "--software",
        action="store_true",
        help="compile for an adapter that emulates a GPU on the CPU (SwiftShader, lavapipe, a fallback adapter): "
        "its matmuls take blocks without workgroup memory, its long reductions one invocation per output",
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
    _store_commands(sub, _run_parser(sub))
    finetune_parser(sub)
    export_parsers(sub, export_cmd, DATA_HELP)
    p_verify = sub.add_parser(
        "verify", help="re-run a manifest on its data and compare the final checkpoint", description=VERIFY_EXITS
    )
    p_verify.add_argument(
        "manifest",
        help="manifest JSON (format scellis.manifest/1), as `scellis run` or the app writes it, or a share link "
        "(an address ending in '#run=...'; quote it)",
    )
    p_verify.add_argument("--data", default=None, help=DATA_HELP)
    text_arguments(p_verify)
    p_verify.add_argument(
        "--store",
        default=None,
        help="the run's object store (as `scellis run --store` wrote it): every checkpoint object the run pins is "
        "read there and checked before the re-run, whose checkpoints are then kept there (default: not checked, "
        "the re-run's discarded)",
    )
    p_verify.set_defaults(func=verify_cmd)
    p_examples = sub.add_parser("examples", help="list the example programs, or print one as program JSON")
    p_examples.add_argument("name", nargs="?", default=None, help="the example to print (default: list them)")
    p_examples.set_defaults(func=examples_cmd)
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
