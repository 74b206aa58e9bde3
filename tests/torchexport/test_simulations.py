"""Programs without a loss exported to PyTorch: the Ising model (checkerboard Metropolis), Monte Carlo option
pricing and the bootstrapped logistic regression, each run to its end by Scellis and by the exported
train.py from the same states and seed. Their draws are Scellis's (model.py's Philox), so the results after
every epoch and the final states agree: on the float64 reference device against train.py in float64
within 1e-6, on the CPU path (float32) against train.py in float32 within 2e-5, as |a - b| / (1 + |a|).
Such a train.py runs in one process: torchrun is refused by name."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("torch", reason="PyTorch is not installed: scripts/setup installs it from requirements-dev.txt")

from scellis.datasets import Split, breast_cancer_csv, cancer_from_files, read_breast_cancer
from scellis.examples import ising, logistic_bootstrap, option_pricing
from scellis.levels import Level
from scellis.runtime.cpu.device import CpuDevice
from scellis.runtime.reference.device import ReferenceDevice
from scellis.session import EpochResult, Session
from tests.torchexport.cases import ScellisRun, Splits, arrays, export, run_train, worst

TOLERANCE = {"float64": 1e-6, "float32": 2e-5}
SEED = 6


def no_data() -> Splits:
    return Split.empty(), Split.empty()


def cancer() -> Splits:
    return cancer_from_files(read_breast_cancer(breast_cancer_csv().read_bytes()))


SIMULATIONS: dict[str, tuple[Callable[[], dict[str, Any]], Callable[[], Splits]]] = {
    "ising": (lambda: ising(2.2, size=8, chains=6, sweeps=4, epochs=3), no_data),
    "option pricing": (lambda: option_pricing(paths=512, steps=6), no_data),
    "logistic bootstrap": (lambda: logistic_bootstrap(resamples=64, iterations=3), cancer),
}


def scellis_results(program: dict[str, Any], device: Any, data: Splits) -> tuple[ScellisRun, list[EpochResult]]:
    train, test = data if data[0].n else (None, None)

    async def go() -> tuple[ScellisRun, list[EpochResult]]:
        session = Session(program, device, seed=SEED, level=Level.PROD, examples=train.n if train else None)
        await session.start(train)
        start = await session.tensors([s.name for s in session.compiled.forward.states])
        results = await session.run(train, test)
        return ScellisRun(start, [], await session.tensors(session.kept), session), results

    return asyncio.run(go())


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", list(SIMULATIONS))
def test_results_and_states_agree_with_scellis(name: str, dtype: str, tmp_path: Path) -> None:
    build, splits = SIMULATIONS[name]
    program, data = build(), splits()
    device = ReferenceDevice() if dtype == "float64" else asyncio.run(CpuDevice.open())
    ours, results = scellis_results(program, device, data)
    folder = export(program, ours, data, seed=SEED, level=Level.PROD, into=tmp_path)
    theirs = run_train(folder, "--dtype", dtype)
    log = json.loads((folder / "checkpoints" / "losses.json").read_text())
    assert [step for step, _ in log["results"]] == [r.steps for r in results]
    assert "results: " in theirs.output and not log["losses"]
    for result, (step, got) in zip(results, log["results"], strict=True):
        assert set(got) == set(result.metrics)
        for metric, want in result.metrics.items():
            assert abs(want - got[metric]) / (1 + abs(want)) < TOLERANCE[dtype], (step, metric, want, got[metric])
    err, where = worst(arrays(ours.end), theirs.end)
    assert err < TOLERANCE[dtype], f"{where} differs by {err:.3g}"
    assert set(theirs.end) == set(ours.session.kept)  # the states, and no optimizer


def test_a_simulation_runs_in_one_process(tmp_path: Path) -> None:
    build, splits = SIMULATIONS["ising"]
    program, data = build(), splits()
    ours, _ = scellis_results(program, ReferenceDevice(), data)
    folder = export(program, ours, data, seed=SEED, level=Level.PROD, into=tmp_path)
    env = {**os.environ, "WORLD_SIZE": "2", "RANK": "0", "PYTHONWARNINGS": "ignore"}
    done = subprocess.run(
        [sys.executable, "train.py", "--strategy", "ddp"], cwd=folder, env=env, capture_output=True, text=True,
        timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 1
    assert "the program has no loss, so no gradients to average: run it in one process" in done.stderr
