"""Checkpoint throughput: writing (encode + put) and reading (get, which verifies the hash, + decode) a
checkpoint of three float32 tensors (parameters and Adam's two moments) in CPython (DirectoryStore) and
in Chromium (IndexedDB through the page's store), with the safetensors package's own numpy save/load
beside the encode/decode in the same run.

    .venv/bin/python bench/checkpoint.py [--sizes 1 16 64] [--runs 5] [--dir PATH] [--no-chromium] [--every 10 50 200]

And the step overhead of checkpointing every N steps: the digits MLP trained on the CPU path (wasmtime)
with no checkpoint rule and with one every N steps, writing to a DirectoryStore.

Sizes are MiB of tensor data; each row is the median of `--runs` runs after a warm-up. The tensors are
random bytes (Chromium compresses what IndexedDB holds, and weights compress little). Between runs the
object is deleted, so every put writes it. DirectoryStore syncs each object to disk (fsync), as a
checkpoint must survive a crash; IndexedDB writes with strict durability.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from safetensors.numpy import load, save

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "e2e"), str(ROOT / "py")]

from scellis.store import DirectoryStore  # noqa: E402

MiB = 1 << 20

# Runs alike in CPython and in the page (sent there as text).
TIMING = """
import os, statistics, time
from scellis.levels import Level
from scellis.rng import RngState
from scellis.store import Checkpoint, Tensor, settle

NAMES = ("param/w", "opt.m/w", "opt.v/w")

def checkpoint_of(nbytes):
    third = nbytes // 12 * 4
    tensors = {name: Tensor("F32", (third // 4,), os.urandom(third)) for name in NAMES}
    rng = RngState(1, {"shuffle": 3, "dropout": 1000})
    return Checkpoint("sha256:" + "0" * 64, Level.PROD, "bench", 1000, 3, 40, rng, {"lr": 0.001}, tensors)

async def time_checkpoints(store, nbytes, runs):
    checkpoint = checkpoint_of(nbytes)
    times = []
    for _ in range(runs + 1):
        t0 = time.perf_counter()
        data = checkpoint.to_bytes()
        t1 = time.perf_counter()
        key = await settle(store.put(data))
        t2 = time.perf_counter()
        got = await settle(store.get(key))
        t3 = time.perf_counter()
        back = Checkpoint.from_bytes(got)
        t4 = time.perf_counter()
        assert back == checkpoint
        await settle(store.delete(key))
        times.append((t1 - t0, t2 - t1, t3 - t2, t4 - t3))
    medians = [statistics.median(column) for column in zip(*times[1:])]
    return {"bytes": len(data), "encode": medians[0], "put": medians[1], "get": medians[2], "decode": medians[3]}
"""

PAGE = """
import json
from scellis.runtime.browser_store import BrowserStore
store = await BrowserStore.open("bench-checkpoint")
json.dumps([await time_checkpoints(store, size * MiB, RUNS) for size in SIZES])
"""


def cpython_rows(sizes: list[int], runs: int, folder: Path) -> list[dict]:
    namespace: dict = {}
    exec(TIMING, namespace)
    store = DirectoryStore(folder)
    return [asyncio.run(namespace["time_checkpoints"](store, size * MiB, runs)) for size in sizes]


def chromium_rows(sizes: list[int], runs: int) -> list[dict]:
    from appdriver import served_app

    code = f"MiB = {MiB}\nSIZES = {sizes}\nRUNS = {runs}\n{TIMING}\n{PAGE}"
    with served_app(ROOT / "dist-test", webgpu=False) as app:
        return json.loads(app.page.evaluate("(code) => window.scellis.python(code)", code))


def safetensors_row(nbytes: int, runs: int) -> dict:
    """The safetensors package's numpy save and load of the same tensors, in memory (no store)."""
    rng = np.random.default_rng(0)
    arrays = {n: rng.standard_normal(nbytes // 12).astype("<f4") for n in ("param/w", "opt.m/w", "opt.v/w")}
    encode, decode = [], []
    for _ in range(runs + 1):
        t0 = time.perf_counter()
        data = save(arrays, {"lr": "0.001"})
        t1 = time.perf_counter()
        load(data)
        decode.append(time.perf_counter() - t1)
        encode.append(t1 - t0)
    return {"bytes": len(data), "encode": statistics.median(encode[1:]), "decode": statistics.median(decode[1:])}


def ms(seconds: float | None) -> str:
    return "—" if seconds is None else f"{seconds * 1000:,.1f}"


def rate(nbytes: int, *seconds: float | None) -> str:
    if any(s is None for s in seconds):
        return "—"
    return f"{nbytes / MiB / sum(s for s in seconds if s is not None):,.0f}"


def step_overhead(every: list[int], runs: int, folder: Path) -> list[tuple[str, float, float]]:
    """Training time per step of the digits MLP on the CPU path (wasmtime) with no checkpoints, and with a
    checkpoint rule every N steps writing to a DirectoryStore: (label, ms per step, overhead)."""
    from scellis.datasets import digits_csv, read_digits
    from scellis.examples import digits_mlp
    from scellis.levels import Level
    from scellis.runtime.cpu.device import CpuDevice
    from scellis.session import Session, checkpoints_to

    train, test = read_digits(digits_csv().read_bytes())
    device = asyncio.run(CpuDevice.open())

    def once(n: int | None, run: str) -> float:
        program = digits_mlp()
        rules = [{"on": "step", "if": {"every": n}, "then": ["checkpoint"]}] if n else []
        program["loop"] = {**program["loop"], "epochs": 4, "rules": rules}
        session = Session(program, device, seed=1, level=Level.PROD, eval_rows=test.n)
        session.checkpointer = checkpoints_to(DirectoryStore(folder / f"every-{n}-{run}"))
        asyncio.run(session.start(train))
        start = time.perf_counter()
        asyncio.run(session.run(train, test))
        return (time.perf_counter() - start) / session.steps

    # round robin, after a warm-up of each: drift in the machine's load falls on every setting alike
    settings: list[int | None] = [None, *every]
    times: dict[int | None, list[float]] = {n: [] for n in settings}
    for run in range(runs + 1):
        for n in settings:
            seconds = once(n, str(run))
            if run:
                times[n].append(seconds)
    base = statistics.median(times[None])
    rows = [("no checkpoints", base * 1000, 0.0)]
    rows += [
        (f"a checkpoint every {n} steps", t * 1000, t / base - 1) for n in every for t in [statistics.median(times[n])]
    ]
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 16, 64], help="MiB of tensors")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--dir", type=Path, help="where DirectoryStore writes (default: a temporary folder)")
    parser.add_argument("--no-chromium", action="store_true")
    parser.add_argument("--every", type=int, nargs="+", default=[10, 50, 200], help="steps between checkpoints")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as folder:
        rows = {"CPython: DirectoryStore": cpython_rows(args.sizes, args.runs, Path(folder))}
        overhead = step_overhead(args.every, args.runs, Path(folder))
    if not args.no_chromium:
        rows["Chromium: IndexedDB"] = chromium_rows(args.sizes, args.runs)
    rows["CPython: safetensors.numpy save/load, in memory"] = [safetensors_row(s * MiB, args.runs) for s in args.sizes]
    print(f"Checkpoint write (encode + put) and read (get + verify + decode), median of {args.runs} runs\n")
    print("| where | MiB | encode ms | put ms | get ms | decode ms | write MiB/s | read MiB/s |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for label, results in rows.items():
        for size, row in zip(args.sizes, results, strict=True):
            put, get = row.get("put"), row.get("get")
            cells = [ms(row["encode"]), ms(put), ms(get), ms(row["decode"])]
            write, read = rate(row["bytes"], row["encode"], put), rate(row["bytes"], get, row["decode"])
            print(f"| {label} | {size} | {' | '.join(cells)} | {write} | {read} |")
    where = "digits MLP (batch 64, 4 epochs) on the CPU path under wasmtime, level prod"
    print(f"\nStep overhead: {where}, median of {args.runs}\n")
    print("| checkpoints | ms per step | overhead |")
    print("| --- | --- | --- |")
    for label, per_step, extra in overhead:
        print(f"| {label} | {per_step:.2f} | {extra:+.1%} |")


if __name__ == "__main__":
    main()
