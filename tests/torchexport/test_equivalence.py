"""The exported train.py against Scellis, 20 steps from the same weights and batch order: on the float64
reference device against train.py in float64, and on the CPU path (float32) against train.py in float32,
the digits MLP, the digits CNN (batch norm, pools), the char transformer and a pretrained encoder with LoRA.
Dropout is off in these programs: torch draws its masks from its own generator, Scellis from its Philox
substream, so masks differ by design.

Declared tolerances, for every step's loss and every tensor a checkpoint holds (|a - b| / (1 + |a|)):
float64 1e-6 (both sides store float32, so this is float32 rounding); float32 2e-5. In float32 three
tensors are exempt, and say why: a bias whose gradient is zero in exact arithmetic (a convolution's bias
before batch norm, the attention key's bias, which adds the same amount to every score of a query) gets
rounding noise for a gradient, which Adam normalises into steps of about the learning rate, differently in
each engine; the batch norm's running mean follows that bias. The loss does not depend on them.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch", reason="PyTorch is not installed: scripts/setup installs it from requirements-dev.txt")

from scellis.levels import Level
from scellis.runtime.cpu.device import CpuDevice
from scellis.runtime.reference.device import ReferenceDevice
from tests.torchexport.cases import CASES, arrays, export, run_train, scellis_run, worst

STEPS, SEED = 20, 4
TOLERANCE = {"float64": 1e-6, "float32": 2e-5}
ZERO_GRADIENT = ("conv1.bias", "conv2.bias", "key.bias", "norm1.running_mean", "norm2.running_mean")


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("name", list(CASES))
def test_twenty_steps_agree_with_scellis(name: str, dtype: str, tmp_path: Path) -> None:
    case = CASES[name]
    program, data, weights = case.program(), case.data(), case.weights()
    device = ReferenceDevice() if dtype == "float64" else asyncio.run(CpuDevice.open())
    ours = scellis_run(program, device, data, steps=STEPS, seed=SEED, level=Level.PROD, weights=weights)
    folder = export(program, ours, data, seed=SEED, level=Level.PROD, into=tmp_path)
    theirs = run_train(folder, "--steps", str(STEPS), "--dtype", dtype)
    assert len(theirs.losses) == STEPS
    want, got = np.array(ours.losses), np.array(theirs.losses)
    assert np.max(np.abs(want - got) / (1 + np.abs(want))) < TOLERANCE[dtype], (want, got)
    assert want[-1] < want[0]  # it trains
    skip = frozenset(n for n in theirs.end if dtype == "float32" and n.endswith(ZERO_GRADIENT))
    err, where = worst(arrays(ours.end), theirs.end, skip)
    assert err < TOLERANCE[dtype], f"{where} differs by {err:.3g}"
    assert int(theirs.end["opt.step"]) == STEPS
