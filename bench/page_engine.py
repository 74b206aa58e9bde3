"""The page's engine on a real GPU through Deno: ms per training step of three MLPs in CPython through
wgpu-py and in the page's own engine (the built worker bundle, Pyodide, the wheel and executor.js, run by
Deno's WebGPU: bench/deno_host/host.js), rounds interleaved, on one machine in one run; then the digits
example trained to its end in Deno as the page's run panel trains it.

    .venv/bin/python bench/page_engine.py [--site dist-test] [--rounds 5] [--steps 20] [--workloads ...]
    .venv/bin/python bench/page_engine.py --trim .page-site   # the site's files the engine reads, copied

Workloads: the digits MLP 64-128-10 (batch 64), an MLP 784-512-512-10 (batch 256) and an MLP
4096-4096-4096-10 (batch 1024), Adam, level prod. Each is timed two ways: "read every step" (each step's
loss read back before the next step is submitted) and "back to back" (`--steps` steps submitted, the last
one's loss read). A cell is the median over `--rounds` rounds of ms/step (wall time over the steps); each
round times both sides, which goes first alternating. Both sides run the engine of the site's wheel:
CPython imports it unpacked, the worker installs it; the same Python text (TIMING) times both. The last
losses of the two should agree closely (same program, seed and batch).

Deno 2.9.6 comes from .deno/: its binary .deno/package/deno, unpacked there when missing from the npm
package's tarball .deno/deno-linux-x64-glibc-2.9.6.tgz (get it with `mkdir -p .deno && cd .deno && npm pack
@deno/linux-x64-glibc@2.9.6`) or from a .txz of the same (30 MB instead of 42, for carrying to a machine).
`--site` must be a test build (build.py --test): the host uses its `python` and `script` calls. `--trim DIR`
copies what the engine's worker reads of it (14 MB of 109: no fine-tuning model and texts) to DIR.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import socket
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
HOST = ROOT / "bench" / "deno_host" / "host.js"
DENO_DIR = ROOT / ".deno"
DENO_PACKAGE = "@deno/linux-x64-glibc@2.9.6"
# what the worker reads of a site besides the wheel; the fine-tuning model and texts only when fine-tuning
ENGINE_FILES = ("build.json", "engine_worker.js", "pyodide", "data")

WORKLOADS = {
    "digits": "digits MLP 64-128-10, batch 64",
    "784": "MLP 784-512-512-10, batch 256",
    "4096": "MLP 4096-4096-4096-10, batch 1024",
}
MODES = {True: "read every step", False: "back to back"}

# The timing, as Python text run alike in CPython and in the page's engine (sent as text to Pyodide).
TIMING = """
import json, random, struct, time
from scellis.examples import digits_mlp, mlp
from scellis.levels import Level
from scellis.session import Session

WORKLOADS = {
    "digits MLP 64-128-10, batch 64": (digits_mlp, 64),
    "MLP 784-512-512-10, batch 256": (lambda: mlp(784, [512, 512], 10, 256), 784),
    "MLP 4096-4096-4096-10, batch 1024": (lambda: mlp(4096, [4096, 4096], 10, 1024), 4096),
}
OPEN = {}

async def prepare(device, name):
    build, width = WORKLOADS[name]
    session = Session(build(), device, seed=1, level=Level.PROD, eval_batch=8)
    await session.start()
    rnd = random.Random(0)
    rows = [struct.pack(f"<{width}f", *(rnd.random() for _ in range(width))) for _ in range(16)]
    x = b"".join(rows[i % 16] for i in range(session.batch))  # 16 rows repeated: cheap to make in Pyodide
    y = struct.pack(f"<{session.batch}i", *(rnd.randrange(10) for _ in range(session.batch)))
    writes = {session.features: x, session.labels: y}
    await session.step.step(writes, ["loss"])  # warm-up: pipelines made, buffers touched
    OPEN[name] = (session, writes)
    return len(session.plan.functions[0].schedule.kernels)

async def time_steps(name, every, steps):
    session, writes = OPEN[name]
    start = time.perf_counter()
    calls = 0.0  # seconds inside the submit calls: Python, the crossing into the executor and the executor
    if every:
        for _ in range(steps):
            loss = (await session.step.step(writes, ["loss"]))["loss"]
    else:
        for i in range(steps):
            began = time.perf_counter()
            pending = session.step.submit(writes, ["loss"] if i == steps - 1 else [])
            calls += time.perf_counter() - began
        loss = (await pending)["loss"]
    ms = (time.perf_counter() - start) / steps * 1000
    cost = session.step.host_cost()  # the executor's own part, over every step so far
    return {"ms": ms, "loss": struct.unpack("<f", loss)[0], "submit_ms": 1000 * calls / steps,
            "executor_ms": cost["ms_per_step"] if cost else None}
"""

# The adapter the worker gets, as the engine asks for it (enginehost.js prepareDevice), described.
ADAPTER = """async () => {
  const adapter = await navigator.gpu.requestAdapter();
  const { vendor, architecture, device, description } = adapter.info;
  const { maxBufferSize, maxStorageBufferBindingSize } = adapter.limits;
  const features = [...adapter.features].sort();
  return { vendor, architecture, device, description, features, maxBufferSize, maxStorageBufferBindingSize };
}"""


def trim(site: Path, to: Path) -> None:
    """What the engine's worker reads of the site (ENGINE_FILES and the wheel), copied to `to` (replaced)."""
    shutil.rmtree(to, ignore_errors=True)
    to.mkdir(parents=True)
    for name in (*ENGINE_FILES, json.loads((site / "build.json").read_text())["wheel"]):
        copy = shutil.copytree if (site / name).is_dir() else shutil.copy2
        copy(site / name, to / name)


def deno_binary() -> Path:
    """Deno from .deno/, unpacked from the npm package's tarball there when needed."""
    binary = DENO_DIR / "package" / "deno"
    if binary.is_file():
        return binary
    tarballs = sorted([*DENO_DIR.glob("deno-linux-x64-glibc-*.tgz"), *DENO_DIR.glob("deno-linux-x64-glibc-*.txz")])
    if not tarballs:
        raise SystemExit(f"no Deno in {DENO_DIR}: mkdir -p .deno && cd .deno && npm pack {DENO_PACKAGE}")
    with tarfile.open(tarballs[-1]) as tar:
        tar.extractall(DENO_DIR, filter="data")
    binary.chmod(0o755)
    return binary


class DenoEngine:
    """The page's engine in Deno (host.js): `call(name, *args)` is the page's call, answered or raised."""

    def __init__(self, site: Path) -> None:
        flags = ["--unstable-webgpu", "--no-config", "--no-lock", "--no-npm", "--reload", "--quiet"]
        command = [str(deno_binary()), "run", "-A", *flags, str(HOST), str(site)]
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def call(self, name: str, *args: Any) -> Any:
        assert self.process.stdin and self.process.stdout
        self.process.stdin.write(json.dumps({"name": name, "args": list(args)}) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            raise RuntimeError(f"the Deno host ended (exit status {self.process.wait()}) during {name}")
        answer = json.loads(line)
        if not answer["ok"]:
            error = answer["error"]
            raise RuntimeError(f"{name}: {error.get('type') or error['name']}: {error['message']}")
        return answer["result"]

    def python(self, code: str, values: dict[str, Any] | None = None, kind: str | None = None) -> Any:
        return self.call("python", code, values or {}, *([kind] if kind else []))

    def close(self) -> None:
        assert self.process.stdin
        self.process.stdin.close()
        self.process.wait(timeout=60)


class Sides:
    """The two engines, prepared alike: CPython through wgpu-py (the wheel unpacked onto sys.path) and the
    page's engine in Deno. `failed` collects what failed on the way; a side that failed a workload is
    skipped for it."""

    def __init__(self, site: Path) -> None:
        self.site, self.failed = site, []
        self.loop = asyncio.new_event_loop()
        self.scope: dict[str, Any] = {}
        self.deno: DenoEngine | None = None
        self.ready: dict[str, set[str]] = {"wgpu-py": set(), "Deno": set()}

    def start(self) -> dict[str, Any]:
        """Both engines up: what each runs on."""
        build = json.loads((self.site / "build.json").read_text())
        unpacked = tempfile.mkdtemp(prefix="page-engine-wheel-")
        with zipfile.ZipFile(self.site / build["wheel"]) as wheel:
            wheel.extractall(unpacked)
        sys.path.insert(0, unpacked)
        about: dict[str, Any] = {"host": socket.gethostname(), "engine": build["engine_version"]}
        exec(TIMING, self.scope)  # the same text the worker runs
        about["wgpu-py"] = self.attempt("wgpu-py: opening the device", self.open_wgpu)
        self.deno = DenoEngine(self.site)
        report = self.attempt("Deno: boot", lambda: self.deno.call("boot", json.dumps(build), {}))
        if report is None:
            self.deno.close()
            self.deno = None
            return about
        about["Deno report"] = report["device_lines"]
        about["Deno adapter"] = self.attempt("Deno: requestAdapter", lambda: self.deno.call("script", ADAPTER, None))
        opening = TIMING + OPEN_PAGE_DEVICE  # the timing defined, the engine's device opened as a run's is
        opened = self.attempt("Deno: the engine's device", lambda: self.deno.python(opening, kind="webgpu"))
        if opened is None:
            self.deno.close()
            self.deno = None
        return about

    def open_wgpu(self) -> dict[str, Any]:
        from scellis.runtime.webgpu.native import WgpuDevice

        device = WgpuDevice()
        self.scope["DEVICE"] = device
        return {"info": dict(device.adapter.info), "features": sorted(device.adapter.features)}

    def attempt(self, what: str, work: Any) -> Any:
        try:
            return work()
        except Exception as error:  # a bench reports what failed and goes on
            self.failed.append(f"{what}: {type(error).__name__}: {error}")
            print(f"failed: {self.failed[-1]}", file=sys.stderr)
            return None

    def prepare(self, name: str) -> dict[str, Any]:
        kernels: dict[str, Any] = {}
        if "DEVICE" in self.scope:
            prepared = self.scope["prepare"](self.scope["DEVICE"], name)
            kernels["wgpu-py"] = self.attempt(f"wgpu-py: {name}", lambda: self.loop.run_until_complete(prepared))
        if self.deno:
            code = "await prepare(DEVICE, NAME)"
            kernels["Deno"] = self.attempt(f"Deno: {name}", lambda: self.deno.python(code, {"NAME": name}))
        for side, count in kernels.items():
            if count is not None:
                self.ready[side].add(name)
        return kernels

    def time(self, side: str, name: str, every: bool, steps: int) -> dict[str, float] | None:
        if name not in self.ready[side]:
            return None
        if side == "wgpu-py":
            work = self.scope["time_steps"](name, every, steps)
            return self.attempt(f"wgpu-py: {name}, {MODES[every]}", lambda: self.loop.run_until_complete(work))
        code = "json.dumps(await time_steps(NAME, EVERY, STEPS))"
        values = {"NAME": name, "EVERY": every, "STEPS": steps}
        answer = self.attempt(f"Deno: {name}, {MODES[every]}", lambda: self.deno.python(code, values))
        return None if answer is None else json.loads(answer)


OPEN_PAGE_DEVICE = """
from scellis.runtime.webgpu.browser import BrowserWebGPU
DEVICE = BrowserWebGPU()
DEVICE.name
"""


def measure(sides: Sides, names: list[str], rounds: int, steps: int) -> list[dict[str, Any]]:
    """Per workload and mode: each side's ms/step per round and last loss; sides alternate going first."""
    rows = []
    for name in names:
        kernels = sides.prepare(name)
        for every, mode in MODES.items():
            rows.append({"workload": name, "mode": mode, "every": every, "kernels": kernels})
            rows[-1].update(
                {side: {"ms": [], "loss": None, "submit": [], "executor": []} for side in ("wgpu-py", "Deno")}
            )
    for r in range(rounds):
        for row in rows:
            for side in ("wgpu-py", "Deno") if r % 2 == 0 else ("Deno", "wgpu-py"):
                timed = sides.time(side, row["workload"], row["every"], steps)
                if timed is not None:
                    row[side]["ms"].append(timed["ms"])
                    row[side]["loss"] = timed["loss"]
                    if not row["every"]:
                        row[side]["submit"].append(timed["submit_ms"])
                        row[side]["executor"].append(timed["executor_ms"] or 0.0)
    return rows


def train_digits(sides: Sides) -> dict[str, Any] | None:
    """The digits example trained to its end in Deno, as the run panel trains it (prod, 20 epochs, seed 1)."""
    if sides.deno is None:
        return None
    deno = sides.deno

    def work() -> dict[str, Any]:
        settings = {"device_kind": "webgpu", "level": "prod", "epochs": 20, "seed": "1", "cap": None, "keep": 3}
        result = deno.call("train", {"program": deno.call("example"), **settings})
        if "rows" not in result:
            raise RuntimeError(f"the run was refused: {result.get('refused')}")
        last = result["rows"][-1]
        return {"accuracy": last["test"]["metric/accuracy"], "steps": result["state"]["step"], **result}

    return sides.attempt("Deno: training the digits example", work)


def median(values: list[float]) -> str:
    return f"{statistics.median(values):.3f}" if values else "failed"


def report(about: dict[str, Any], rows: list[dict[str, Any]], trained: dict[str, Any] | None, args: Any) -> None:
    print(f"\nhost {about['host']}; engine {about['engine']}")
    print(f"wgpu-py adapter: {json.dumps(about.get('wgpu-py'))}")
    print(f"Deno adapter (requestAdapter in the worker): {json.dumps(about.get('Deno adapter'))}")
    for line in about.get("Deno report") or []:
        print(f"Deno engine's report: {line}")
    print(f"\ntraining step, level prod; median of {args.rounds} rounds of {args.steps} steps\n")
    print("| workload | mode | kernels | wgpu-py ms/step | Deno ms/step | Deno / wgpu-py | last loss (wgpu-py, Deno) |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for row in rows:
        native, page = row["wgpu-py"], row["Deno"]
        ratio = statistics.median(page["ms"]) / statistics.median(native["ms"]) if native["ms"] and page["ms"] else None
        losses = f"{native['loss']}, {page['loss']}"
        kernels = row["kernels"].get("wgpu-py") or row["kernels"].get("Deno")
        cells = [row["workload"], row["mode"], kernels, median(native["ms"]), median(page["ms"])]
        print(f"| {' | '.join(map(str, cells))} | {'failed' if ratio is None else f'{ratio:.2f}'} | {losses} |")
    if trained:
        rate = trained["steps"] / trained["seconds"]
        verdict = "at least" if trained["accuracy"] >= 0.95 else "BELOW"
        print(
            f"\ndigits example in Deno (prod, 20 epochs, seed 1): test accuracy {trained['accuracy'] * 100:.1f} % "
            f"({verdict} the 95 % the page's test asks) after {trained['steps']} steps, "
            f"{trained['seconds']:.1f} s driving the run ({rate:.0f} steps/s)"
        )
    print("\nhost per step, back to back (ms/step, medians): the submit call from Python, and the executor's part")
    print("of it (writing the inputs, recording every dispatch, submitting); the rest is Python and the crossing\n")
    print("| workload | kernels | wgpu-py submit | wgpu-py executor | Deno submit | Deno executor | Deno µs/dispatch |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for row in rows:
        native, page = row["wgpu-py"], row["Deno"]
        if row["every"] or not page["executor"]:
            continue
        kernels = row["kernels"].get("wgpu-py") or row["kernels"].get("Deno")
        per = 1000 * statistics.median(page["executor"]) / kernels
        cells = [median(native["submit"]), median(native["executor"]), median(page["submit"]), median(page["executor"])]
        print(f"| {row['workload']} | {kernels} | {' | '.join(cells)} | {per:.1f} |")
    print("\nfailed on the way: " + ("; ".join(about["failed"]) if about["failed"] else "nothing"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--site", type=Path, default=ROOT / "dist-test", help="a test build (build.py --test)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=20, help="steps timed per round, side and mode")
    parser.add_argument("--workloads", nargs="+", choices=list(WORKLOADS), default=list(WORKLOADS))
    parser.add_argument("--no-train", action="store_true", help="skip training the digits example")
    parser.add_argument("--json", type=Path, help="write every number here too")
    parser.add_argument("--trim", type=Path, metavar="DIR", help="copy the site's files the engine reads to DIR")
    args = parser.parse_args()
    if args.trim:
        trim(args.site.resolve(), args.trim.resolve())
        return
    sides = Sides(args.site.resolve())
    began = time.perf_counter()
    about = sides.start()
    rows = measure(sides, [WORKLOADS[w] for w in args.workloads], args.rounds, args.steps)
    trained = None if args.no_train else train_digits(sides)
    if sides.deno:
        sides.deno.close()
    about["failed"], about["seconds"] = sides.failed, time.perf_counter() - began
    report(about, rows, trained, args)
    if args.json:
        args.json.write_text(json.dumps({"about": about, "rows": rows, "trained": trained}, indent=1))


if __name__ == "__main__":
    main()
