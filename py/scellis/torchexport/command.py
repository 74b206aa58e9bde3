"""`scellis export torch` (a program, from the init of a seed or from a checkpoint, as a folder PyTorch runs)
and `scellis import torch` (a checkpoint that folder's train.py wrote, into a store, to resume in Scellis)."""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scellis.levels import Level

if TYPE_CHECKING:
    from scellis.pipeline import Compiled
    from scellis.store.tensorfile import Tensor
    from scellis.torchexport.bundle import Start

CHECKOUT = Path(__file__).resolve().parents[3]


async def _from_checkpoint(args: argparse.Namespace, compiled: Compiled) -> tuple[Level, dict[str, Tensor], Start]:
    from scellis.store import DirectoryStore, load
    from scellis.store.checkpoint import Checkpoint
    from scellis.store.objects import settle
    from scellis.torchexport.bundle import start_of

    store = DirectoryStore(args.store)
    level = Checkpoint.from_bytes(await settle(store.get(args.checkpoint))).level
    checkpoint = await load(
        store, args.checkpoint, expect_program=compiled.at(level, frozenset()).key, expect_level=level
    )
    return level, dict(checkpoint.tensors), start_of(checkpoint, args.checkpoint)


async def _from_init(
    args: argparse.Namespace, device: Any, program: dict[str, Any], data: tuple[Any, Any], model: dict[str, bytes]
) -> tuple[dict[str, Tensor], Start]:
    """The parameters and states a fresh run of `program` starts from with --seed, initialised on `device`."""
    from scellis.session import Session
    from scellis.torchexport.bundle import Start

    level, (train, test) = Level(args.determinism), data
    weights = model.get("model.safetensors") if "weights" in program else None
    session = Session(program, device, seed=args.seed, level=level, eval_rows=test.n, examples=train.n, weights=weights)
    await session.start(train)
    forward = session.compiled.forward
    names = [s.name for s in forward.params] + [s.name for s in forward.states]  # NF4 ones as their words
    return await session.tensors(names), Start(seed=args.seed)


def export_folder(
    args: argparse.Namespace, loaded: tuple[dict[str, Any], Compiled], data: tuple[Any, Any], model: dict[str, bytes]
) -> int:
    """Write the export folder of the read program, data and model files (exit 2 when the checkpoint cannot
    be read or the program cannot be exported)."""
    from scellis.manifest import installed_engine
    from scellis.store import ResumeError, StoreError
    from scellis.torchexport.bundle import ExportError, export_files, pretrained_tensors

    (program, compiled), (train, test) = loaded, data
    try:
        if args.checkpoint is not None:
            level, tensors, start = asyncio.run(_from_checkpoint(args, compiled))
            tensors = {**pretrained_tensors(compiled, model.get("model.safetensors")), **tensors}
        else:
            level = Level(args.determinism)
            tensors, start = asyncio.run(_from_init(args, args.open_device(), program, (train, test), model))
        files = export_files(
            program, compiled, level=level, tensors=tensors, start=start, train=train, test=test,
            engine=installed_engine(CHECKOUT / "dist" / "build.json"),
        )  # fmt: skip
    except (ResumeError, StoreError, ExportError, ValueError) as err:
        print(f"scellis export: {args.program}: {err}", file=sys.stderr)
        return 2
    out = Path(args.out)
    for name, content in files.items():
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        (out / name).write_bytes(content)
    source = f"checkpoint {args.checkpoint}" if args.checkpoint else f"the init of seed {args.seed}"
    print(f"exported {compiled.program.name} ({source}, level {level.value}) to {out}/")
    if compiled.program.trains:
        print(f"  python {out}/train.py    or    torchrun --nproc_per_node=N {out}/train.py --strategy ddp|fsdp")
    else:
        print(f"  python {out}/train.py    (in one process: the program has no loss, so no gradients to average)")
    return 0


def import_cmd(args: argparse.Namespace) -> int:
    """Store a train.py checkpoint as a Scellis checkpoint; print its key (exit 2 when it does not fit)."""
    from scellis.jsontext import JsonTextError, parse
    from scellis.pipeline import compile_program
    from scellis.store import DirectoryStore, save
    from scellis.torchexport.imported import TorchCheckpointError, take_back

    try:
        where = Path(args.export) / "manifest.json"
        manifest = parse(where.read_bytes(), what=str(where))
        program = manifest["program"]
        level = Level(program["level"])
        compiled = compile_program(program["json"])
        if compiled.at(level, frozenset()).key != program["key"]:
            print(f"scellis import: {args.export}: this engine compiles the program to another key", file=sys.stderr)
            return 2
        checkpoint = take_back(Path(args.checkpoint).read_bytes(), compiled, level)
    except (OSError, JsonTextError, KeyError, TypeError, ValueError) as err:
        kind = "" if isinstance(err, TorchCheckpointError) else f"{type(err).__name__}: "
        print(f"scellis import: {args.checkpoint}: {kind}{err}", file=sys.stderr)
        return 2
    key = asyncio.run(save(DirectoryStore(args.store), checkpoint))
    print(f"imported step {checkpoint.step} of {compiled.program.name} as checkpoint {key} in {args.store}")
    print(f"  scellis run PROGRAM --resume {key} --store {args.store} --determinism {level.value} ...")
    return 0


def parsers(sub: Any, export: Callable[[argparse.Namespace], int], data_help: str) -> None:
    """The `export` and `import` commands; `export`: the command reading the program, its data and model
    files the way `run` does, then calling export_folder."""
    from scellis.models.commands import text_arguments

    p = sub.add_parser("export", help="hand a program to PyTorch: model.py, train.py, weights, data, orders")
    p.add_argument("target", choices=["torch"], help="what to export for")
    p.add_argument("program", help="program JSON (format scellis.program/1)")
    p.add_argument("-o", "--out", required=True, help="the folder to write")
    p.add_argument("--data", default=None, help=data_help)
    p.add_argument("--checkpoint", default=None, help="start from this checkpoint (its key in --store)")
    p.add_argument("--store", default="scellis-store", help="object store folder of --checkpoint")
    p.add_argument("--seed", type=int, default=0, help="without --checkpoint: the seed of the init (default 0)")
    levels = [level.value for level in Level]
    why = "without --checkpoint: the level a resumed Scellis run continues at (default prod)"
    p.add_argument("--determinism", choices=levels, default=Level.PROD.value, help=why)
    p.add_argument("--device", choices=["cpu", "webgpu"], default="cpu", help="where the init is computed")
    text_arguments(p)
    p.set_defaults(func=export)
    q = sub.add_parser("import", help="store a checkpoint an exported train.py wrote, to resume it in Scellis")
    q.add_argument("target", choices=["torch"], help="what the checkpoint comes from")
    q.add_argument("checkpoint", help="the .safetensors file train.py wrote")
    q.add_argument("--export", required=True, help="the export folder (its manifest.json names the program)")
    q.add_argument("--store", default="scellis-store", help="object store folder to put it in")
    q.set_defaults(func=import_cmd)
