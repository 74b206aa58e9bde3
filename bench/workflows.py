"""Throughput of the workflows beyond training (py/scellis/examples.py) on each device, next to a vectorised
numpy implementation of the same computation timed in the same run, with the results of both checked.

    .venv/bin/python bench/workflows.py [--runs 3] [--levels prod,debug] [--devices webgpu,cpu] [--json PATH]
    python3 bench/workflows.py --devices webgpu --levels prod --paths 2**20,2**24 --ising 64x32,256x64
        --resamples 2000 --profile 5   (one line; on the lent H200 after the default run: the GPU at large
                                        sizes, where the CPU path would take minutes a run)

Workflows, each run through scellis.session.Session exactly as training runs (a fresh session a run):
- option pricing: `option_pricing(paths, steps)`, European and arithmetic Asian calls under GBM, one time
  step per loop step. Rate: paths/s = paths / wall time of the whole run (every step, then the results:
  both prices and their standard errors, read back).
- Ising: `ising(temperature, size, chains, sweeps=...)`, checkerboard Metropolis, one sweep per loop step.
  Rate: spin-flips/s = chains * size^2 * sweeps / wall time (attempted single-spin updates).
- bootstrap: `logistic_bootstrap(resamples)` on the breast cancer data, 8 Newton (IRLS) steps of the fit
  and of every resample side by side, then standard errors and percentile intervals (each Newton step is
  an epoch of the example, so the session computes these results after every step). Rate: resamples
  refitted per second. At the first of --levels only (--resamples 0 leaves it out).

Devices: WebGPU through wgpu-py (lavapipe here, the real GPU on a machine that has one) and the CPU path
(the .wasm kernels under wasmtime, one thread), at each of --levels. The peer is numpy in float32 (the
engine's dtype) with its default generator (PCG64; the engine draws Philox4x32-10), doing what the program
does: exact log-normal steps and a running sum for the Asian average; for Ising the same checkerboard
half-sweeps, np.roll neighbours, one uniform a site a sweep and exp acceptance; for the bootstrap the
resampled rows gathered once, batched matmuls and np.linalg.solve. numpy runs one thread for all of these
except the bootstrap's small BLAS calls.

Each figure is the median over --runs; the implementations take turns within each run, so drift in the
machine's load falls on all alike. `start s` is the session's construction (compile, plan) plus its start
(device compile, initial state), excluded from the rate. Checks, printed under the table: European prices
within 4 standard errors of Black-Scholes, engine against numpy (Asian price, |m| and energy) within 4
combined standard errors, the Ising figures beside Onsager's, the fit against a float64 numpy IRLS and
the bootstrap intervals against a float64 numpy refit of the engine's very resamples, and every engine
run of a row giving the same numbers (both levels promise run-to-run determinism). The exit status is 1
when a check fails. --profile N adds, for WebGPU at the first level, a step's time replayed back to back,
session.results() (which copies the carried states on the device) next to what reading those states back
to the host takes, and the N slowest kernels of the step and of the results (each dispatched alone,
repeated), to find one that dominates.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "py"), str(ROOT / "bench")]

import gpuprofile  # noqa: E402

from scellis import examples  # noqa: E402
from scellis.levels import Level  # noqa: E402
from scellis.session import Session  # noqa: E402

OPTION = {"spot": 100.0, "strike": 100.0, "rate": 0.05, "volatility": 0.2, "years": 1.0}
SEED = 7
NEWTON_STEPS = 8  # logistic_bootstrap's default iterations
Z = 4.0  # standard errors a Monte Carlo figure may stray


@dataclass(eq=False)
class Case:
    """One workflow at one size: its program, the work a run does (for the rate) and its numpy twin."""

    workflow: str
    size: str
    unit: str
    work: float
    program: Callable[[], dict[str, Any]]
    peer: Callable[[], dict[str, float]]
    levels: list[Level]
    data: Any = None


@dataclass
class Timing:
    start_s: float
    run_s: float
    metrics: dict[str, float]
    kernels: int = 0


@dataclass
class Row:
    """Every run of one implementation (numpy, or a device at a level) on one case."""

    case: Case
    device: str
    level: str
    timings: list[Timing] = field(default_factory=list)

    def rate(self) -> float:
        return self.case.work / statistics.median(t.run_s for t in self.timings)

    def start(self) -> float:
        return statistics.median(t.start_s for t in self.timings)

    def metrics(self) -> dict[str, float]:
        return self.timings[0].metrics


# -- numpy peers: the same computation, vectorised, float32 ---------------------------------------------


def numpy_options(paths: int, steps: int, seed: int = SEED) -> dict[str, float]:
    spot, strike, rate, volatility, years = (OPTION[k] for k in ("spot", "strike", "rate", "volatility", "years"))
    rng = np.random.default_rng(seed)
    dt = years / steps
    drift, diffusion = np.float32((rate - volatility**2 / 2) * dt), np.float32(volatility * math.sqrt(dt))
    price = np.full(paths, spot, np.float32)
    total = np.zeros(paths, np.float32)
    growth = np.empty(paths, np.float32)
    for _ in range(steps):
        rng.standard_normal(out=growth, dtype=np.float32)
        growth *= diffusion
        growth += drift
        np.exp(growth, out=growth)
        price *= growth
        total += price
    discount = np.float32(math.exp(-rate * years))
    out = {}
    for name, final in (("european", price), ("asian", total * np.float32(1 / steps))):
        payoff = np.maximum(final - np.float32(strike), np.float32(0)) * discount
        out[name] = float(payoff.mean())
        out[f"{name}_se"] = float(payoff.std(ddof=1) / math.sqrt(paths))
    return out


def numpy_ising(temperature: float, size: int, chains: int, sweeps: int, seed: int = SEED) -> dict[str, float]:
    rng = np.random.default_rng(seed)
    spins = np.ones((chains, size, size), np.float32)
    i, j = np.indices((size, size))
    boards = [(i + j) % 2 == parity for parity in (0, 1)]  # black (row + column even), then white
    minus_2_beta = np.float32(-2 / temperature)
    u = np.empty_like(spins)
    for _ in range(sweeps):
        rng.random(out=u, dtype=np.float32)  # one uniform a site a sweep: each half-sweep reads its own sites'
        for board in boards:
            near = np.roll(spins, 1, 1) + np.roll(spins, -1, 1) + np.roll(spins, 1, 2) + np.roll(spins, -1, 2)
            chance = np.exp(spins * near * minus_2_beta)  # exp(-dE / T), dE = 2 s * neighbours
            spins = np.where((u < chance) & board, -spins, spins)
    magnetisation = np.abs(spins.mean(axis=(1, 2)))
    energy = -(spins * (np.roll(spins, 1, 1) + np.roll(spins, 1, 2))).mean(axis=(1, 2))
    root = math.sqrt(chains)
    return {
        "abs_magnetisation": float(magnetisation.mean()),
        "abs_magnetisation_se": float(magnetisation.std(ddof=1) / root),
        "energy_per_site": float(energy.mean()),
        "energy_per_site_se": float(energy.std(ddof=1) / root),
    }


def cancer_design(split: Any, dtype: type = np.float32) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(design with intercept and standardised features, diagnosis, mean radius) as the program builds them."""
    x = np.frombuffer(split.features, "<f4").reshape(-1, 30).astype(dtype)
    y = np.frombuffer(split.labels, "<i4").astype(dtype)
    chosen = x[:, [column for _, column in examples.CANCER_COLUMNS]]
    standard = (chosen - chosen.mean(0)) / chosen.std(0)
    return np.column_stack([np.ones(len(y), dtype), standard]).astype(dtype), y, x[:, 0]


def newton_fit(x: np.ndarray, y: np.ndarray, steps: int = NEWTON_STEPS) -> tuple[np.ndarray, np.ndarray]:
    """(coefficients, information matrix at them) of IRLS on a stack of designs (..., rows, k)."""
    beta = np.zeros((*x.shape[:-2], x.shape[-1], 1), x.dtype)
    xt = np.swapaxes(x, -1, -2)

    def at(beta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        chance = 1 / (1 + np.exp(-(x @ beta)))
        return chance, xt @ (x * (chance * (1 - chance)))

    for _ in range(steps):
        chance, information = at(beta)
        beta = beta + np.linalg.solve(information, xt @ (y[..., None] - chance))
    return beta, at(beta)[1]


def numpy_bootstrap(split: Any, resamples: int, seed: int = SEED, rows: np.ndarray | None = None) -> dict[str, float]:
    """The program's results in numpy: float32 on resamples of its own draws (the timed peer), or float64 on
    the given `rows` (the check on the engine's own resamples)."""
    dtype = np.float32 if rows is None else np.float64
    x, y, radius = cancer_design(split, dtype)
    beta, information = newton_fit(x, y)
    se = np.sqrt(np.diag(np.linalg.inv(information)))
    if rows is None:
        rows = np.random.default_rng(seed).integers(0, len(y), (resamples, len(y)))
    boot, _ = newton_fit(x[rows], y[rows])
    means = radius[rows].mean(axis=1)
    out = {}
    for j, name in enumerate(["intercept", *(n for n, _ in examples.CANCER_COLUMNS)]):
        out[f"coef_{name}"], out[f"coef_{name}_se"] = float(beta[j, 0]), float(se[j])
    for name, values in (("coef_mean_radius", boot[:, 1, 0]), ("average_radius", means)):
        out[f"{name}_ci_low"], out[f"{name}_ci_high"] = (float(np.quantile(values, q)) for q in (0.025, 0.975))
    return out


def coef_se(metrics: dict[str, float], name: str) -> float:
    """A coefficient's standard error among the results (named `se_<name>` before `coef_<name>_se`)."""
    return metrics[f"coef_{name}_se"] if f"coef_{name}_se" in metrics else metrics[f"se_{name}"]


def engine_resamples(resamples: int, rows: int, seed: int = SEED) -> np.ndarray:
    """The resamples the program draws (the `bootstrap` substream at site 0, position 0), by the float64
    reference of the RANDOM op."""
    from scellis.ir import Function
    from scellis.ops import DType, Op, const, make
    from scellis.ops.defs import Distribution, RandomArg, Role
    from scellis.ops.node import input_node
    from scellis.rng import substream_key
    from scellis.runtime.reference import oracle as reference

    key = input_node("rng.bootstrap", Role.RNG, DType.U32, (2,))
    arg = RandomArg(Distribution.INTEGER, "bootstrap", 0, (resamples, rows), n=rows)
    fn = Function("rows", (key,), (("rows", make(Op.RANDOM, key, const(0, DType.U32), arg=arg)),))
    out = reference.run(fn, {"rng.bootstrap": np.array(substream_key(seed, "bootstrap"), dtype=np.uint32)})
    return np.asarray(out["rows"])


# -- references --------------------------------------------------------------------------------------------


def onsager_energy(temperature: float) -> float:
    """The exact energy per site of the infinite lattice (Onsager 1944); K by the arithmetic-geometric mean."""
    beta = 1 / temperature
    k = 2 * math.sinh(2 * beta) / math.cosh(2 * beta) ** 2
    a, b = 1.0, math.sqrt(1 - k * k)
    while abs(a - b) > 1e-15:
        a, b = (a + b) / 2, math.sqrt(a * b)
    elliptic = math.pi / (2 * a)
    return -1 / math.tanh(2 * beta) * (1 + 2 / math.pi * (2 * math.tanh(2 * beta) ** 2 - 1) * elliptic)


# -- engine runs -------------------------------------------------------------------------------------------


async def engine_run(device: Any, case: Case, level: Level) -> tuple[Timing, Session]:
    begin = time.perf_counter()
    session = Session(case.program(), device, seed=SEED, level=level)
    await session.start(case.data)
    started = time.perf_counter()
    results = await session.run(case.data, None)
    done = time.perf_counter()
    metrics = {k.removeprefix("metric/"): v for k, v in results[-1].metrics.items()}
    return Timing(started - begin, done - started, metrics, len(session.plan.functions[0].schedule.kernels)), session


def peer_run(case: Case) -> Timing:
    begin = time.perf_counter()
    metrics = case.peer()
    return Timing(0.0, time.perf_counter() - begin, metrics)


def open_devices(names: list[str]) -> list[tuple[str, Any]]:
    out = []
    for name in names:
        try:
            if name == "webgpu":
                from scellis.runtime.webgpu.native import WgpuDevice

                gpu = WgpuDevice()
                out.append((f"WebGPU (wgpu-py, Vulkan): {gpu.name}", gpu))
            elif name == "cpu":
                from scellis.runtime.cpu.device import CpuDevice

                cpu = asyncio.run(CpuDevice.open())
                out.append((f"{cpu.name}, 1 thread", cpu))
            else:
                raise SystemExit(f"unknown device {name!r}: webgpu or cpu")
        except (RuntimeError, ImportError, OSError) as error:  # a machine without the adapter or the module
            print(f"{name}: not available ({error}); left out", file=sys.stderr, flush=True)
    return out


def measure(cases: list[Case], devices: list[tuple[str, Any]], runs: int) -> list[Row]:
    rows = []
    for case in cases:
        peer = Row(case, f"numpy {np.__version__} float32", "-")
        engine = [(Row(case, label, level.value), device, level) for label, device in devices for level in case.levels]
        for run in range(runs):
            peer.timings.append(peer_run(case))
            note = [f"numpy {peer.timings[-1].run_s:.2f} s"]
            for row, device, level in engine:
                timing, _ = asyncio.run(engine_run(device, case, level))
                row.timings.append(timing)
                note.append(f"{row.device.split(' ')[0]} {level.value} {timing.run_s:.2f} s (+{timing.start_s:.2f})")
            print(f"{case.workflow} {case.size}, run {run + 1}/{runs}: " + ", ".join(note), file=sys.stderr, flush=True)
        rows += [peer] + [row for row, _, _ in engine]
    return rows


# -- checks ------------------------------------------------------------------------------------------------


@dataclass
class Check:
    workflow: str
    size: str
    who: str
    what: str
    ok: bool | None  # None: shown, not judged


def within(a: float, b: float, se: float, slack: float = 0.0) -> bool:
    return abs(a - b) <= Z * se + slack


def judged(row: Row, is_peer: bool, what: str, ok: bool | None) -> Check:
    """A row's check; an engine row's runs must also agree bit for bit (prod and debug promise it)."""
    if not is_peer:
        same = all(t.metrics == row.timings[0].metrics for t in row.timings)
        what += f"; runs identical: {'yes' if same else 'NO'} ({len(row.timings)})"
        ok = bool(ok) and same
    who = row.device if is_peer else f"{row.device} {row.level}"
    return Check(row.case.workflow, row.case.size, who, what, ok)


def checks(rows: list[Row], temperature: float) -> list[Check]:
    out: list[Check] = []
    for case in dict.fromkeys(row.case for row in rows):
        mine = [row for row in rows if row.case is case]
        peer, engine = mine[0], mine[1:]
        ref = peer.metrics()

        if case.workflow == "option pricing":
            exact = examples.black_scholes_call(**OPTION)
            for row in mine:
                m = row.metrics()
                z = (m["european"] - exact) / m["european_se"]
                text = (
                    f"European {m['european']:.4f} +- {m['european_se']:.4f} vs Black-Scholes {exact:.4f} (z {z:+.2f});"
                    f" Asian {m['asian']:.4f} +- {m['asian_se']:.4f}"
                )
                ok = abs(z) <= Z and m["asian"] < m["european"]
                if row is not peer:
                    se = math.hypot(m["asian_se"], ref["asian_se"])
                    ok = ok and within(m["asian"], ref["asian"], se)
                    text += f" vs numpy {ref['asian']:.4f} (z {(m['asian'] - ref['asian']) / se:+.2f})"
                out.append(judged(row, row is peer, text, ok))
        elif case.workflow == "Ising":
            exact_m, exact_e = examples.onsager_magnetisation(temperature), onsager_energy(temperature)
            for row in mine:
                m = row.metrics()
                text = (
                    f"|m| {m['abs_magnetisation']:.4f} +- {m['abs_magnetisation_se']:.4f}, energy/site "
                    f"{m['energy_per_site']:.4f} +- {m['energy_per_site_se']:.4f} (Onsager, infinite lattice: "
                    f"{exact_m:.4f}, {exact_e:.4f})"
                )
                ok = None
                if row is not peer:
                    ok = all(
                        within(m[k], ref[k], math.hypot(m[f"{k}_se"], ref[f"{k}_se"]), 0.01)
                        for k in ("abs_magnetisation", "energy_per_site")
                    )
                    text += f"; numpy {ref['abs_magnetisation']:.4f}, {ref['energy_per_site']:.4f}"
                out.append(judged(row, row is peer, text, ok))
        else:
            x, y, _ = cancer_design(case.data, np.float64)
            beta, information = newton_fit(x, y, 25)
            se = np.sqrt(np.diag(np.linalg.inv(information)))
            resamples = int(case.work)
            same = numpy_bootstrap(case.data, resamples, rows=engine_resamples(resamples, len(y)))
            intervals = [k for k in same if k.endswith(("_ci_low", "_ci_high"))]
            out.append(
                judged(
                    peer,
                    True,
                    f"mean radius coefficient {ref['coef_mean_radius']:.4f} +- {coef_se(ref, 'mean_radius'):.4f}, 95 % "
                    f"interval [{ref['coef_mean_radius_ci_low']:.3f}, {ref['coef_mean_radius_ci_high']:.3f}] "
                    "(its own resamples)",
                    None,
                )
            )
            for row in engine:
                m = row.metrics()
                fit = all(
                    math.isclose(m[f"coef_{n}"], beta[j, 0], rel_tol=1e-3, abs_tol=1e-4)
                    and math.isclose(coef_se(m, n), se[j], rel_tol=1e-3)
                    for j, n in enumerate(["intercept", *(c for c, _ in examples.CANCER_COLUMNS)])
                )
                boot = all(math.isclose(m[k], same[k], rel_tol=2e-3) for k in intervals)
                text = (
                    f"coefficients and standard errors vs float64 IRLS: {'agree' if fit else 'DIFFER'} "
                    f"(mean radius {m['coef_mean_radius']:.4f} +- {coef_se(m, 'mean_radius'):.4f}, float64 "
                    f"{beta[1, 0]:.4f} +- {se[1]:.4f}); interval [{m['coef_mean_radius_ci_low']:.3f}, "
                    f"{m['coef_mean_radius_ci_high']:.3f}] vs float64 refit of the same resamples "
                    f"[{same['coef_mean_radius_ci_low']:.3f}, {same['coef_mean_radius_ci_high']:.3f}]"
                )
                out.append(judged(row, False, text, fit and boot))
    return out


# -- profile -----------------------------------------------------------------------------------------------


def profile(cases: list[Case], gpu: Any, top: int, repeat: int = 10) -> list[dict[str, Any]]:
    """Where a WebGPU run's time goes: the step replayed `repeat` times back to back (one submission a step,
    as a run submits), `session.results()` and a read-back of the carried states beside it, and each kernel of
    the step and of the results dispatched alone `repeat` times in one submission (the slowest `top`)."""

    async def results(session: Session, data: Any) -> tuple[float, float, int]:
        begin = time.perf_counter()
        carried = await session.step.fetch(session.carried)
        fetched = time.perf_counter()
        await session.results(data)
        return (time.perf_counter() - fetched) * 1000, (fetched - begin) * 1000, sum(map(len, carried.values()))

    out = []
    for case in cases:
        level = case.levels[0]
        _, session = asyncio.run(engine_run(gpu, case, level))
        results_ms, fetch_ms, carried = asyncio.run(results(session, case.data))
        entry: dict[str, Any] = {
            "case": f"{case.workflow} {case.size}",
            "level": level.value,
            "step_ms": gpuprofile.replayed_ms(gpu, session.step.run, repeat),
            "results_ms": results_ms,
            "fetch_ms": fetch_ms,
            "carried_bytes": carried,
        }
        schedules = {"step": session.plan.functions[0].schedule, "results": session.plan.function("evaluation")}
        for part, compiled in (("step", session.step), ("results", session.eval)):
            plan = schedules[part]
            kernels = (plan if part == "step" else plan.schedule).kernels  # type: ignore[union-attr]
            times = gpuprofile.kernel_times(gpu, compiled, kernels, repeat)
            entry[part] = {"kernels": len(times), "ms": sum(t["ms"] for t in times), "top": times[:top]}
        out.append(entry)
    return out


def show_profile(entry: dict[str, Any]) -> list[str]:
    lines = [
        f"\nWebGPU, {entry['case']} at {entry['level']}: a step {entry['step_ms']:.3f} ms (replayed back to back); "
        f"session.results() {entry['results_ms']:.2f} ms (reading the carried states back, which it does not, "
        f"takes {entry['fetch_ms']:.2f} ms: {entry['carried_bytes'] / 2**20:.1f} MiB)"
    ]
    for part in ("step", "results"):
        p = entry[part]
        lines.append(f"  {part}: {p['kernels']} kernels, {p['ms']:.3f} ms dispatched one at a time; the slowest:")
        lines += [f"  {t['ms']:10.3f} ms {100 * t['ms'] / p['ms']:5.1f} %  {t['kernel']}" for t in p["top"]]
    return lines


# -- the table ---------------------------------------------------------------------------------------------


def figure(x: float) -> str:
    """`x` to three significant digits with an SI prefix (312k, 1.25M, 3.40G)."""
    for scale, prefix in ((1e9, "G"), (1e6, "M"), (1e3, "k"), (1, "")):
        if abs(x) >= scale:
            v = x / scale
            return f"{v:.{max(0, 2 - math.floor(math.log10(abs(v))))}f}{prefix}"
    return f"{x:.3g}"


def ratio(x: float) -> str:
    return f"{x:.{max(0, 2 - math.floor(math.log10(x)))}f}x" if x > 0 else "-"


def table(rows: list[Row]) -> list[str]:
    lines = [
        "| device | level | workflow | size | engine rate | numpy rate | ratio | start s |",
        "| --- " * 8 + "|",
    ]
    for case in dict.fromkeys(row.case for row in rows):
        mine = [row for row in rows if row.case is case]
        peer = mine[0].rate()
        for row in mine[1:]:
            rate = row.rate()
            lines.append(
                f"| {row.device} | {row.level} | {case.workflow} | {case.size} | {figure(rate)} {case.unit} | "
                f"{figure(peer)} {case.unit} | {ratio(rate / peer)} | {row.start():.2f} |"
            )
    return lines


def spread(rows: list[Row]) -> list[str]:
    """Seconds of each run, so the noise behind each median shows."""
    lines = ["| implementation | level | workflow | size | run s (each run) | kernels a step |", "| --- " * 6 + "|"]
    for row in rows:
        runs = ", ".join(f"{t.run_s:.3f}" for t in row.timings)
        kernels = row.timings[0].kernels or "-"
        lines.append(f"| {row.device} | {row.level} | {row.case.workflow} | {row.case.size} | {runs} | {kernels} |")
    return lines


def count(text: str) -> int:
    """An integer given as 1048576, 2**20 or 2^20."""
    for op in ("**", "^"):
        if op in text:
            base, power = text.split(op)
            return int(base) ** int(power)
    return int(text)


def power_of_two(n: int) -> str:
    return f"2^{n.bit_length() - 1}" if n > 1 and n & (n - 1) == 0 else f"{n:,}"


def build_cases(args: argparse.Namespace, levels: list[Level]) -> list[Case]:
    cases = []
    for paths in (count(p) for p in args.paths.split(",") if p):
        cases.append(
            Case(
                "option pricing",
                f"{power_of_two(paths)} paths, {args.steps} steps",
                "paths/s",
                paths,
                lambda paths=paths: examples.option_pricing(paths, args.steps, **OPTION),
                lambda paths=paths: numpy_options(paths, args.steps),
                levels,
            )
        )
    for spec in (s for s in args.ising.split(",") if s):
        chains, size = (int(v) for v in spec.lower().split("x"))
        sweeps = args.sweeps
        cases.append(
            Case(
                "Ising",
                f"{chains} chains of {size}x{size}, {sweeps} sweeps, T {args.temperature}",
                "flips/s",
                chains * size * size * sweeps,
                lambda c=chains, s=size, n=sweeps: examples.ising(args.temperature, s, c, sweeps=n, epochs=1),
                lambda c=chains, s=size, n=sweeps: numpy_ising(args.temperature, s, c, n),
                levels,
            )
        )
    if args.resamples:
        from scellis.datasets import breast_cancer_csv, cancer_from_files, read_breast_cancer

        split = cancer_from_files(read_breast_cancer(breast_cancer_csv().read_bytes()))[0]
        r = args.resamples
        cases.append(
            Case(
                "bootstrap",
                f"{r} resamples of {split.n} rows, {NEWTON_STEPS} Newton steps",
                "resamples/s",
                r,
                lambda: examples.logistic_bootstrap(r, NEWTON_STEPS, split.n),
                lambda: numpy_bootstrap(split, r),
                levels[:1],
                split,
            )
        )
    return cases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--devices", default="webgpu,cpu", help="webgpu, cpu (comma-separated)")
    parser.add_argument("--levels", default="prod,debug", help="determinism levels (comma-separated)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--paths", default="2**20", help="option pricer paths (comma-separated sizes)")
    parser.add_argument("--steps", type=int, default=64, help="option pricer time steps")
    parser.add_argument("--ising", default="64x32", help="CHAINSxSIZE lattices (comma-separated)")
    parser.add_argument("--sweeps", type=int, default=200)
    parser.add_argument("--temperature", type=float, default=2.0)
    parser.add_argument("--resamples", type=int, default=500, help="bootstrap resamples (0: no bootstrap row)")
    parser.add_argument("--profile", type=int, default=0, metavar="N", help="each WebGPU case's N slowest kernels")
    parser.add_argument("--json", type=Path, help="write every timing and check here")
    args = parser.parse_args()
    levels = [Level(name) for name in args.levels.split(",")]
    began = time.perf_counter()
    devices = open_devices(args.devices.split(","))
    cases = build_cases(args, levels)
    rows = measure(cases, devices, args.runs)
    found = checks(rows, args.temperature)
    gpus = [device for label, device in devices if label.startswith("WebGPU")]
    profiles = profile(cases, gpus[0], args.profile) if args.profile and gpus else []

    print(
        f"\n{platform.processor() or platform.machine()}, {os.cpu_count()} cores; Python {platform.python_version()}, "
        f"numpy {np.__version__}; median of {args.runs} runs, "
        f"{time.perf_counter() - began:.0f} s in all\n"
    )
    print("\n".join(table(rows)))
    print("\nRuns (wall s of session.run, each run):\n")
    print("\n".join(spread(rows)))
    print("\nChecks:\n")
    print("| workflow | size | implementation | results | ok |\n| --- | --- | --- | --- | --- |")
    for c in found:
        verdict = "-" if c.ok is None else ("yes" if c.ok else "**NO**")
        print(f"| {c.workflow} | {c.size} | {c.who} | {c.what} | {verdict} |")
    for entry in profiles:
        print("\n".join(show_profile(entry)))
    if args.json:
        record = {
            "machine": {
                "processor": platform.processor() or platform.machine(),
                "cores": os.cpu_count(),
                "python": platform.python_version(),
                "numpy": np.__version__,
            },
            "args": {k: str(v) for k, v in vars(args).items()},
            "rows": [
                {
                    "device": r.device,
                    "level": r.level,
                    "workflow": r.case.workflow,
                    "size": r.case.size,
                    "unit": r.case.unit,
                    "work": r.case.work,
                    "rate": r.rate(),
                    "start_s": r.start(),
                    "timings": [t.__dict__ for t in r.timings],
                }
                for r in rows
            ],
            "checks": [c.__dict__ for c in found],
            "profile": profiles,
        }
        args.json.write_text(json.dumps(record, indent=1))
    if any(c.ok is False for c in found):
        sys.exit(1)


if __name__ == "__main__":
    main()
