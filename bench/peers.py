"""Peer benchmark: Scellis's training step against TensorFlow.js (WebGL, WebGPU) and jax-js (WebGPU,
WebAssembly) on the same MLPs, in one headless Chromium: ms per step with (a) the loss read back after
every step and (b) the steps submitted back to back, the loss read after the last; medians over rounds
that interleave the contenders, with ratios against Scellis's WebGPU path and its CPU path.

    .venv/bin/python bench/peers.py [--rounds 5] [--steps 20] [--workloads digits,mnist] [--wide]

Every contender trains the same model from the same point: float32, plain SGD at one learning rate,
softmax cross-entropy averaged over the batch, bench/timing.py's fixed random batch (written from the host
every step, as Scellis's step writes it), and Scellis's initial parameters (uniform in +-1/sqrt(fan-in),
drawn by its CPU path here in CPython) handed to the peers; so the first losses agree, and each
contender's loss must fall over its steps (the bench fails otherwise). A mode is one warm-up step from
the initial parameters (compiling; its loss is the first loss), then `--steps` timed steps.

Scellis runs in the test build (dist-test/) through bench/timing.py's STEP_TIMING, as bench/step.py runs
it; (b) is its `time_steps`. The peers run on bench/peers/, bundled by esbuild into a temporary folder
with the workloads' data. Each page is served on 127.0.0.1 by its own server, every other request
blocked; the rounds rotate the contenders' order.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "e2e"), str(ROOT / "py"), str(ROOT / "bench")]

from appdriver import LoadedApp, launch, open_app  # noqa: E402
from playwright.sync_api import Browser, sync_playwright  # noqa: E402
from timing import PAGE_DEVICES, STEP_TIMING  # noqa: E402

from scellis.examples import digits_mlp, mlp  # noqa: E402
from scellis.serve import Handler, is_test_build, make_server  # noqa: E402

LR = 0.1
PEERS = ["@tensorflow/tfjs-core", "@tensorflow/tfjs-backend-webgl", "@tensorflow/tfjs-backend-webgpu", "@jax-js/jax"]
SEED = 1  # time_steps's
MODES = {"synced": "(a)", "batched": "(b)"}  # the loss read after every step; after the last only
# Scellis's paths in the page (timing.PAGE_DEVICES's labels) and the names the tables give them.
SCELLIS = {"Chromium: WebGPU (SwiftShader)": "Scellis WebGPU", "Chromium: CPU path (WebAssembly)": "Scellis CPU (Wasm)"}
# bench/timing.py's batch (features, then labels, from random.Random(0)), here and in the page alike.
BATCH = """
import random, struct

def fixed_batch(batch, width):
    rnd = random.Random(0)
    x = struct.pack(f"<{batch * width}f", *(rnd.random() for _ in range(batch * width)))
    return x, struct.pack(f"<{batch}i", *(rnd.randrange(10) for _ in range(batch)))
"""
# Scellis's side in the page, after STEP_TIMING, PAGE_DEVICES and BATCH: `scellis_run(label, key, steps)`
# times both modes on a fresh session each, (a) by `time_synced` (time_steps's session and batch, the loss
# read after every step) and (b) by `time_steps` itself (whose warm-up starts from the same parameters, so
# its first loss is (a)'s).
PAGE_SCELLIS = """
async def time_synced(device, program, width, level, steps):
    session = Session(program, device, seed=1, level=level, eval_batch=8)
    await session.start()
    x, y = fixed_batch(session.batch, width)
    writes = {session.features: x, session.labels: y}
    first = struct.unpack("<f", (await session.step.step(writes, ["loss"]))["loss"])[0]
    start = time.perf_counter()
    for _ in range(steps):
        last = struct.unpack("<f", (await session.step.step(writes, ["loss"]))["loss"])[0]
    wall = time.perf_counter() - start
    return {"ms_per_step": wall / steps * 1000, "first": first, "last": last}

PROGRAMS = json.loads(PROGRAMS_JSON)
DEVICES = dict(await page_devices())

async def scellis_run(label, key, steps):
    program, width = PROGRAMS[key]
    synced = await time_synced(DEVICES[label], program, width, Level.PROD, steps)
    timed = await time_steps(DEVICES[label], program, width, Level.PROD, steps)
    batched = {"ms_per_step": timed["ms_per_step"], "first": synced["first"], "last": timed["loss"]}
    return json.dumps({"synced": synced, "batched": batched})
"""
PYTHON = """async ([code, values]) => window.scellis.python(code, values, "webgpu")"""
# The peer page's policy: as the app's pages, but jax-js compiles WebAssembly and runs its CPU workers
# from blob: URLs.
PEER_CSP = (
    "default-src 'none'; script-src 'self' 'wasm-unsafe-eval'; connect-src 'self'; worker-src 'self' blob:; "
    "img-src data:; base-uri 'none'; form-action 'none'; object-src 'none'; frame-ancestors 'none'"
)


@dataclass(frozen=True)
class Workload:
    key: str
    label: str
    program: dict[str, Any]  # with plain SGD at LR

    @property
    def sizes(self) -> list[int]:
        nodes = self.program["nodes"]
        (width,) = next(n["params"]["shape"] for n in nodes if n["op"] == "input" and n["params"]["role"] == "features")
        return [width, *(n["params"]["features"] for n in nodes if n["op"] == "linear")]

    @property
    def batch(self) -> int:
        return self.program["loop"]["batch_size"]


def sgd(program: dict[str, Any]) -> dict[str, Any]:
    return {**program, "optimizer": {"kind": "sgd", "lr": LR}}


WORKLOADS = {
    "digits": ("digits MLP 64-128-10, batch 64", digits_mlp),
    "mnist": ("MLP 784-512-512-10, batch 256", lambda: mlp(784, [512, 512], 10, 256)),
    "wide": ("MLP 4096-4096-4096-10, batch 1024", lambda: mlp(4096, [4096, 4096], 10, 1024)),
}


def workload(key: str) -> Workload:
    label, make = WORKLOADS[key]
    return Workload(key, label, sgd(make()))


def fixed_batch(batch: int, width: int) -> bytes:
    scope: dict = {}
    exec(BATCH, scope)  # the same text the page runs
    return b"".join(scope["fixed_batch"](batch, width))


async def initial_parameters(w: Workload) -> bytes:
    """Scellis's initial parameters for `w` at SEED (its CPU path under wasmtime), each linear layer's
    weight ([in, out]) then bias, in the program's order."""
    from scellis.levels import Level
    from scellis.runtime.cpu.device import CpuDevice
    from scellis.session import Session

    session = Session(w.program, await CpuDevice.open(), seed=SEED, level=Level.PROD)
    await session.start()
    layers = [n["id"] for n in w.program["nodes"] if n["op"] == "linear"]
    names = [f"{layer}.{part}" for layer in layers for part in ("weight", "bias")]
    tensors = await session.tensors(names)
    return b"".join(tensors[name].data for name in names)


def build_site(site: Path, workloads: list[Workload]) -> None:
    """The peer page bundled, and each workload's spec and bytes (as bench/peers/peers.js reads them)."""
    esbuild = ROOT / "node_modules" / ".bin" / "esbuild"
    entry = ROOT / "bench" / "peers" / "peers.js"
    command = [str(esbuild), str(entry), "--bundle", "--format=esm", "--target=es2022", "--log-level=warning"]
    subprocess.run([*command, f"--outfile={site / 'peers.js'}"], cwd=ROOT, check=True)
    shutil.copy(ROOT / "bench" / "peers" / "index.html", site / "index.html")
    for w in workloads:
        (site / f"{w.key}.json").write_text(json.dumps({"sizes": w.sizes, "batch": w.batch, "lr": LR}))
        data = fixed_batch(w.batch, w.sizes[0]) + asyncio.run(initial_parameters(w))
        (site / f"{w.key}.bin").write_bytes(data)


class PeerHandler(Handler):
    def policy(self) -> str:
        return PEER_CSP


@contextmanager
def serving(folder: Path, handler: type[Handler] = Handler) -> Iterator[str]:
    """`folder` served on 127.0.0.1 (scellis.serve's headers: cross-origin isolated); yields its URL."""
    server = make_server(folder, port=0, quiet=True, handler_class=handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


@dataclass
class Pages:
    app: LoadedApp
    peers: LoadedApp

    def run(self, name: str, key: str, steps: int) -> dict:
        if name in SCELLIS.values():
            label = next(label for label, shown in SCELLIS.items() if shown == name)
            code = f"await scellis_run({label!r}, {key!r}, {steps})"
            return json.loads(self.app.page.evaluate(PYTHON, [code, {}]))
        script = "([name, key, steps]) => window.peers.run(name, key, steps)"
        return self.peers.page.evaluate(script, [name, key, steps])


def measure(pages: Pages, names: list[str], workloads: list[Workload], rounds: int, steps: int) -> dict:
    """results[workload key][contender] = each round's result, the contenders' order rotated by round."""
    results: dict[str, dict[str, list[dict]]] = {w.key: {name: [] for name in names} for w in workloads}
    for r in range(rounds):
        order = names[r % len(names) :] + names[: r % len(names)]
        for w in workloads:
            for name in order:
                result = pages.run(name, w.key, steps)
                results[w.key][name].append(result)
                ms = ", ".join(f"{result[mode]['ms_per_step']:.2f}" for mode in MODES)
                print(f"round {r + 1}/{rounds}, {w.key}, {name}: {ms} ms/step", file=sys.stderr, flush=True)
    return results


def table(head: list[str], rows: list[list[str]]) -> None:
    print("| " + " | ".join(head) + " |")
    print("| --- " * len(head) + "|")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    print()


def speed_table(results: dict[str, list[dict]]) -> None:
    """One workload's median ms/step per contender and mode, and its ratio to each Scellis path's."""
    medians = {
        name: {mode: statistics.median(r[mode]["ms_per_step"] for r in runs) for mode in MODES}
        for name, runs in results.items()
    }
    base = {shown: medians[shown] for shown in SCELLIS.values()}
    head = ["contender"]
    for short in MODES.values():
        head += [f"{short} ms/step", *(f"{short} / {shown}" for shown in base)]
    rows = []
    for name, ms in medians.items():
        rows.append([name])
        for mode in MODES:
            rows[-1] += [f"{ms[mode]:.2f}", *(f"{ms[mode] / b[mode]:.2f}" for b in base.values())]
    table(head, rows)


def loss_table(workloads: list[Workload], results: dict) -> bool:
    """Each contender's first and last losses (the last round's); whether each fell in every round and mode."""
    rows, ok = [], True
    for w in workloads:
        for name, runs in results[w.key].items():
            falls = all(r[mode]["last"] < r[mode]["first"] for r in runs for mode in MODES)
            ok = ok and falls
            last = runs[-1]
            losses = [f"{last[mode]['last']:.5f}" for mode in MODES]
            rows.append([w.label, name, f"{last['synced']['first']:.5f}", *losses, "yes" if falls else "NO"])
    table(["workload", "contender", "first loss", "(a) last loss", "(b) last loss", "falls every round"], rows)
    return ok


def report(workloads: list[Workload], results: dict, rounds: int, steps: int) -> bool:
    """Prints the tables; whether every contender's loss fell in every round and mode."""
    print(f"ms per training step: median of {rounds} rounds of {steps} steps, each mode after a warm-up step.")
    print("(a): the loss read back after every step; (b): the steps submitted back to back, the loss read after")
    print(f"the last. float32, plain SGD (lr {LR}). '/ Scellis ...': the contender's ms over that Scellis path's")
    print("(above 1: Scellis is faster).\n")
    for w in workloads:
        print(f"**{w.label}**\n")
        speed_table(results[w.key])
    print(f"Losses: the warm-up step's (at the initial parameters) and the last timed step's ({steps} updates on).\n")
    return loss_table(workloads, results)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--workloads", default="digits,mnist", help=f"comma-separated, of: {', '.join(WORKLOADS)}")
    parser.add_argument("--wide", action="store_true", help="add the wide workload (4096-4096-4096-10, batch 1024)")
    args = parser.parse_args()
    keys = list(dict.fromkeys(args.workloads.split(",") + (["wide"] if args.wide else [])))
    unknown = [k for k in keys if k not in WORKLOADS]
    if unknown:
        parser.error(f"unknown workloads {unknown}: choose from {', '.join(WORKLOADS)}")
    dist = ROOT / "dist-test"
    if not is_test_build(dist):
        raise SystemExit(f"{dist} is not a test build: run `.venv/bin/python build.py --test` first")
    workloads = [workload(k) for k in keys]
    with tempfile.TemporaryDirectory(prefix="scellis-peers-") as folder:
        site = Path(folder)
        build_site(site, workloads)
        with serving(dist) as app_url, serving(site, PeerHandler) as peers_url, sync_playwright() as playwright:
            browser = launch(playwright, webgpu=True)
            try:
                print(f"Chromium {browser.version}; {versions()}\n")
                ok = bench(open_pages(browser, app_url, peers_url, workloads), workloads, args.rounds, args.steps)
            finally:
                browser.close()
    if not ok:
        raise SystemExit("a contender's loss did not fall: see the loss table")


def versions() -> str:
    """The peers' versions, as installed (package.json pins them)."""
    found = [json.loads((ROOT / "node_modules" / n / "package.json").read_text())["version"] for n in PEERS]
    return ", ".join(f"{name} {version}" for name, version in zip(PEERS, found, strict=True))


def open_pages(browser: Browser, app_url: str, peers_url: str, workloads: list[Workload]) -> Pages:
    """The app (Scellis's side set up in its engine) and the peer page, started in `browser`."""
    app = open_app(browser, app_url)
    peers = open_app(browser, peers_url, device=None)
    for loaded in (app, peers):
        if loaded.errors or loaded.page.evaluate("() => document.body.dataset.state") != "ready":
            raise SystemExit(f"{loaded.page.url} did not start: {loaded.errors}")
    programs = {w.key: [w.program, w.sizes[0]] for w in workloads}
    setup = f"{STEP_TIMING}\n{PAGE_DEVICES}\n{BATCH}\n{PAGE_SCELLIS}"
    app.page.evaluate(PYTHON, [setup, {"PROGRAMS_JSON": json.dumps(programs)}])
    return Pages(app, peers)


def bench(pages: Pages, workloads: list[Workload], rounds: int, steps: int) -> bool:
    """The rounds run on `pages` and the tables printed; whether every loss fell."""
    contenders = pages.peers.page.evaluate("() => window.peers.contenders")
    names = [*SCELLIS.values(), *(c["name"] for c in contenders if not c["why"])]
    ok = report(workloads, measure(pages, names, workloads, rounds, steps), rounds, steps)
    for c in contenders:
        if c["why"]:
            print(f"- not run: {c['name']}: {c['why']}")
    page = pages.peers.page.evaluate("() => ({...window.peers.adapters, isolated: crossOriginIsolated})")
    print(f"- peer page: WebGL on {page['webgl']}; WebGPU on {page['webgpu']}; cross-origin isolated ", end="")
    print(f"(jax-js Wasm runs a worker pool when so): {page['isolated']}")
    for loaded in (pages.app, pages.peers):
        if loaded.blocked or loaded.errors:
            print(f"- {loaded.page.url}: requests blocked {loaded.blocked}; page errors {loaded.errors}")
    return ok


if __name__ == "__main__":
    main()
