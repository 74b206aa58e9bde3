"""Beyond training: the Monte Carlo option pricer, the 2-D Ising model and the logistic regression with its
bootstrap run through the same Session as training (program, IR, plan, kernels, RNG substreams, levels,
checkpoints) on the CPU path (wasmtime) and WebGPU (lavapipe). Checked against the analytic Black-Scholes
price, a float64 numpy simulation, Onsager's exact results, statsmodels and scipy, and a float64 numpy
refit of the very same bootstrap resamples; bootstrap intervals and simulation results are bit-identical
when re-run at debug and when resumed from a checkpoint taken mid-way."""

from __future__ import annotations

import asyncio
import math
from typing import Any

import numpy as np
import pytest
import scipy.integrate
import scipy.special
import scipy.stats
import statsmodels.api as sm

from scellis import examples
from scellis.datasets import Split, breast_cancer_csv, cancer_from_files, read_breast_cancer
from scellis.ir import Function
from scellis.levels import Level
from scellis.ops import DType, Op, const, make
from scellis.ops.defs import Distribution, RandomArg, Role
from scellis.ops.node import input_node
from scellis.rng import substream_key
from scellis.runtime.cpu.device import CpuDevice
from scellis.runtime.reference import oracle as reference
from scellis.runtime.webgpu.native import WgpuDevice
from scellis.session import Session
from scellis.store import DirectoryStore
from scellis.store.checkpoint import load, save

OPTION = {"spot": 100.0, "strike": 100.0, "rate": 0.05, "volatility": 0.2, "years": 1.0}
RESAMPLES = 200  # the example's 2,000 on the CPU path in the statistics test; fewer where a test repeats runs


@pytest.fixture(scope="module")
def devices() -> dict[str, Any]:
    return {"wasmtime": asyncio.run(CpuDevice.open()), "lavapipe": WgpuDevice()}


@pytest.fixture(scope="module")
def cancer() -> Split:
    return cancer_from_files(read_breast_cancer(breast_cancer_csv().read_bytes()))[0]


def run(program: dict, device: Any, level: Level, data: Split | None = None, seed: int = 7) -> dict[str, float]:
    async def go() -> dict[str, float]:
        session = Session(program, device, seed=seed, level=level)
        await session.start(data)
        results = await session.run(data, None)
        return {k.removeprefix("metric/"): v for k, v in results[-1].metrics.items()}

    return asyncio.run(go())


# -- Monte Carlo option pricing ------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["wasmtime", "lavapipe"])
def test_the_european_call_is_within_three_standard_errors_of_black_scholes(devices: dict, name: str) -> None:
    paths = 2**17
    got = run(examples.option_pricing(paths, 64, **OPTION), devices[name], Level.PROD)
    exact = examples.black_scholes_call(**OPTION)
    assert 0 < got["european_se"] < 0.1
    assert abs(got["european"] - exact) < 3 * got["european_se"], (got, exact)


def numpy_asian(paths: int, steps: int, seed: int) -> tuple[float, float]:
    """The arithmetic Asian call by a float64 numpy simulation of its own draws: (price, standard error)."""
    rng = np.random.default_rng(seed)
    s0, k, r, v, t = (OPTION[n] for n in ("spot", "strike", "rate", "volatility", "years"))
    dt = t / steps
    payoffs = []
    for _ in range(paths // 2**16):
        z = rng.standard_normal((2**16, steps))
        prices = s0 * np.exp(np.cumsum((r - v * v / 2) * dt + v * math.sqrt(dt) * z, axis=1))
        payoffs.append(np.exp(-r * t) * np.maximum(prices.mean(axis=1) - k, 0))
    every = np.concatenate(payoffs)
    return float(every.mean()), float(every.std(ddof=1) / math.sqrt(every.size))


@pytest.mark.parametrize("name", ["wasmtime", "lavapipe"])
def test_the_asian_call_agrees_with_a_float64_numpy_simulation(devices: dict, name: str) -> None:
    got = run(examples.option_pricing(2**17, 64, **OPTION), devices[name], Level.PROD)
    price, se = numpy_asian(2**19, 64, seed=3)
    assert abs(got["asian"] - price) < 3 * math.hypot(got["asian_se"], se), (got, price, se)
    assert got["asian"] < got["european"]  # averaging damps the volatility the option pays for


def test_the_option_run_resumed_mid_way_ends_on_the_same_bits(devices: dict, tmp_path: Any) -> None:
    program = examples.option_pricing(2**12, 16, **OPTION)
    store = DirectoryStore(tmp_path)
    device = devices["wasmtime"]

    async def straight() -> tuple[str, dict[str, float]]:
        session = Session(program, device, seed=5, level=Level.DEBUG)
        await session.start()
        results = await session.run(None, None)
        return await save(store, await session.checkpoint()), results[-1].metrics

    async def in_two() -> tuple[str, dict[str, float]]:
        first = Session(program, device, seed=5, level=Level.DEBUG)
        await first.start()
        await first.run(None, None, steps=7)
        middle = await save(store, await first.checkpoint())
        second = Session(program, device, seed=5, level=Level.DEBUG)
        key = second.compiled.at(Level.DEBUG, device.features).key
        await second.resume(await load(store, middle, expect_program=key, expect_level=Level.DEBUG))
        results = await second.run(None, None)
        return await save(store, await second.checkpoint()), results[-1].metrics

    assert asyncio.run(straight()) == asyncio.run(in_two())


# -- the 2-D Ising model --------------------------------------------------------------------------------


def onsager_energy(temperature: float) -> float:
    """The exact energy per site of the infinite lattice (Onsager 1944)."""
    beta = 1 / temperature
    k = 2 * math.sinh(2 * beta) / math.cosh(2 * beta) ** 2
    elliptic = scipy.special.ellipk(k * k)
    return -1 / math.tanh(2 * beta) * (1 + 2 / math.pi * (2 * math.tanh(2 * beta) ** 2 - 1) * elliptic)


@pytest.mark.parametrize("name", ["wasmtime", "lavapipe"])
def test_below_the_critical_temperature_the_lattice_keeps_onsagers_magnetisation(devices: dict, name: str) -> None:
    temperature = 1.8
    got = run(examples.ising(temperature, 16, 32, sweeps=100, epochs=3), devices[name], Level.PROD)
    exact = examples.onsager_magnetisation(temperature)
    assert abs(got["abs_magnetisation"] - exact) < 3 * got["abs_magnetisation_se"] + 0.01, (got, exact)
    energy = onsager_energy(temperature)
    assert abs(got["energy_per_site"] - energy) < 3 * got["energy_per_site_se"] + 0.01, (got, energy)


@pytest.mark.parametrize("name", ["wasmtime", "lavapipe"])
def test_above_the_critical_temperature_the_order_melts(devices: dict, name: str) -> None:
    temperature = 3.5
    assert temperature > examples.ISING_CRITICAL
    got = run(examples.ising(temperature, 32, 32, sweeps=100, epochs=3), devices[name], Level.PROD)
    assert got["abs_magnetisation"] < 0.15, got  # from all spins up: only finite-size fluctuations are left
    energy = onsager_energy(temperature)
    assert abs(got["energy_per_site"] - energy) < 3 * got["energy_per_site_se"] + 0.01, (got, energy)


def test_the_ising_program_draws_the_same_flips_on_both_devices(devices: dict) -> None:
    """Uniform draws are exact on every device, and exp(-2 beta dE) is compared with them: at debug the two
    devices flip the same spins (a flip decided by a last-bit difference would show here)."""
    program = examples.ising(2.2, 16, 8, sweeps=20, epochs=1)
    assert run(program, devices["wasmtime"], Level.DEBUG) == run(program, devices["lavapipe"], Level.DEBUG)


# -- logistic regression, standard errors and bootstrap intervals ----------------------------------------


def design(cancer: Split) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    x = np.frombuffer(cancer.features, "<f4").reshape(-1, 30).astype(np.float64)
    y = np.frombuffer(cancer.labels, "<i4").astype(np.float64)
    chosen = x[:, [column for _, column in examples.CANCER_COLUMNS]]
    standard = (chosen - chosen.mean(0)) / chosen.std(0)
    return np.column_stack([np.ones(len(y)), standard]), y, x[:, 0]


def names() -> list[str]:
    return ["intercept", *(n for n, _ in examples.CANCER_COLUMNS)]


@pytest.mark.parametrize("name", ["wasmtime", "lavapipe"])
def test_coefficients_and_standard_errors_agree_with_statsmodels(devices: dict, cancer: Split, name: str) -> None:
    got = run(examples.logistic_bootstrap(RESAMPLES), devices[name], Level.PROD, cancer)
    x, y, _ = design(cancer)
    fit = sm.Logit(y, x).fit(disp=0)
    assert fit.mle_retvals["converged"]
    for j, column in enumerate(names()):
        assert got[f"coef_{column}"] == pytest.approx(fit.params[j], rel=1e-4, abs=1e-5), column
        assert got[f"coef_{column}_se"] == pytest.approx(fit.bse[j], rel=1e-4), column


def bootstrap_rows(resamples: int, rows: int, seed: int) -> np.ndarray:
    """The resamples the program draws: integers of the `bootstrap` substream at site 0, position 0 (the
    same at every step), computed by the float64 reference of the RANDOM op."""
    key = input_node("rng.bootstrap", Role.RNG, DType.U32, (2,))
    arg = RandomArg(Distribution.INTEGER, "bootstrap", 0, (resamples, rows), n=rows)
    fn = Function("rows", (key,), (("rows", make(Op.RANDOM, key, const(0, DType.U32), arg=arg)),))
    out = reference.run(fn, {"rng.bootstrap": np.array(substream_key(seed, "bootstrap"), dtype=np.uint32)})
    return np.asarray(out["rows"])


def numpy_bootstrap(cancer: Split, resamples: int, seed: int, iterations: int = 8) -> dict[str, float]:
    """The same resamples refitted by the same Newton steps in float64; numpy's linear percentiles."""
    x, y, radius = design(cancer)
    rows = bootstrap_rows(resamples, len(y), seed)
    xs, ys = x[rows], y[rows][..., None]
    beta = np.zeros((resamples, x.shape[1], 1))
    for _ in range(iterations):
        chance = 1 / (1 + np.exp(-(xs @ beta)))
        information = np.swapaxes(xs, 1, 2) @ (xs * chance * (1 - chance))
        beta = beta + np.linalg.solve(information, np.swapaxes(xs, 1, 2) @ (ys - chance))
    means = radius[rows].mean(axis=1)
    return {
        "coef_mean_radius_ci_low": float(np.quantile(beta[:, 1, 0], 0.025)),
        "coef_mean_radius_ci_high": float(np.quantile(beta[:, 1, 0], 0.975)),
        "average_radius_ci_low": float(np.quantile(means, 0.025)),
        "average_radius_ci_high": float(np.quantile(means, 0.975)),
    }


def test_bootstrap_intervals_agree_with_numpy_on_the_same_resamples_and_with_scipy(
    devices: dict, cancer: Split
) -> None:
    resamples = 2000  # the example's own
    got = run(examples.logistic_bootstrap(resamples), devices["wasmtime"], Level.PROD, cancer, seed=7)
    same = numpy_bootstrap(cancer, resamples, seed=7)
    for name, value in same.items():
        assert got[name] == pytest.approx(value, rel=2e-4), name
    _, _, radius = design(cancer)
    assert got["average_radius"] == pytest.approx(radius.mean(), rel=1e-6)
    theirs = scipy.stats.bootstrap(
        (radius,), np.mean, n_resamples=resamples, method="percentile", rng=np.random.default_rng(1)
    ).confidence_interval
    assert got["average_radius_ci_low"] == pytest.approx(theirs.low, abs=0.05)
    assert got["average_radius_ci_high"] == pytest.approx(theirs.high, abs=0.05)
    x, y, _ = design(cancer)  # the percentile interval of the coefficient lies about its normal-theory one
    fit = sm.Logit(y, x).fit(disp=0)
    wald = (fit.params[1] - 1.96 * fit.bse[1], fit.params[1] + 1.96 * fit.bse[1])
    assert got["coef_mean_radius_ci_low"] < fit.params[1] < got["coef_mean_radius_ci_high"]
    assert got["coef_mean_radius_ci_low"] == pytest.approx(wald[0], abs=0.5)
    assert got["coef_mean_radius_ci_high"] == pytest.approx(wald[1], abs=0.5)


@pytest.mark.parametrize("name", ["wasmtime", "lavapipe"])
def test_bootstrap_intervals_are_bit_identical_on_rerun_and_on_resume_at_debug(
    devices: dict, cancer: Split, name: str, tmp_path: Any
) -> None:
    program = examples.logistic_bootstrap(RESAMPLES)
    device, store = devices[name], DirectoryStore(tmp_path)

    async def straight() -> tuple[str, dict[str, float]]:
        session = Session(program, device, seed=9, level=Level.DEBUG)
        await session.start(cancer)
        results = await session.run(cancer, None)
        return await save(store, await session.checkpoint()), results[-1].metrics

    async def resumed() -> tuple[str, dict[str, float]]:
        first = Session(program, device, seed=9, level=Level.DEBUG)
        await first.start(cancer)
        await first.run(cancer, None, steps=3)  # three of the eight Newton steps
        middle = await save(store, await first.checkpoint())
        second = Session(program, device, seed=9, level=Level.DEBUG)
        key = second.compiled.at(Level.DEBUG, device.features).key
        await second.resume(await load(store, middle, expect_program=key, expect_level=Level.DEBUG), cancer)
        results = await second.run(cancer, None)
        return await save(store, await second.checkpoint()), results[-1].metrics

    once, again, resume = asyncio.run(straight()), asyncio.run(straight()), asyncio.run(resumed())
    assert once == again == resume
    assert set(once[1]) >= {"metric/coef_mean_radius_ci_low", "metric/average_radius_ci_high"}
