"""Float16 storage (memory.storage float16) on the devices: lavapipe (wgpu-py) has shader-f16 and trains
the digits MLP and CNN with it, allocating exactly the planned bytes; the float64 reference device,
which rounds every float16 store to nearest even, agrees with it and with the IR reference (so the kernels
round exactly where the IR casts); the CPU path, which has no shader-f16,
refuses with the missing feature named.

Declared tolerances, per training step's loss (relative):
- lavapipe against the reference device, both storing float16: 1e-4. Both round the same values, so
  they differ by float32 arithmetic (~1e-6) and by the rare value whose float32 result lies within that
  of a float16 rounding boundary, stored one float16 step away: a kept log-probability so (2**-9 at ~2.3)
  moves the mean loss over 64 examples by ~1.3e-5. Measured: at most 2.8e-5 (a couple of such values).
- float16 storage against float32 storage, both on lavapipe: 5e-3. Every parameter and kept activation
  is rounded by up to 2**-11 (~5e-4) relative, which moves the loss by about 1e-5 at the first step; the
  runs then part slowly, faster through batch normalisation (the CNN divides by statistics of rounded
  values). Measured over these 4 steps: at most 3e-5 (MLP) and 1.4e-3 (CNN).
"""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np
import pytest

from scellis.datasets import Split, digits_csv, read_digits
from scellis.examples import digits_cnn, digits_mlp
from scellis.levels import Level
from scellis.lower import merge
from scellis.ops import DType
from scellis.optim.storage import StorageUnsupported
from scellis.pipeline import compile_program
from scellis.plan import lowered
from scellis.runtime.cpu.device import CpuDevice
from scellis.runtime.reference import train as rt
from scellis.runtime.reference.device import WIRE, ReferenceDevice
from scellis.runtime.reference.oracle import run
from scellis.runtime.webgpu.native import WgpuDevice
from scellis.session import Session

PROGRAMS = {"digits MLP": digits_mlp, "digits CNN": digits_cnn}
STEPS = 4
F16 = frozenset({"shader-f16"})


@pytest.fixture(scope="module")
def lavapipe() -> WgpuDevice:
    device = WgpuDevice()
    assert "shader-f16" in device.features  # lavapipe has it: these tests need it
    return device


def stored_as(name: str, storage: str) -> dict[str, Any]:
    program = PROGRAMS[name]()
    program.setdefault("memory", {})["storage"] = storage
    return program


def step_losses(program: dict[str, Any], device: object, steps: int = STEPS) -> list[float]:
    """The loss of each of the first `steps` training steps of a session, each on the next 64 digits."""
    train, _ = read_digits(digits_csv().read_bytes())
    session = Session(program, device, seed=1, level=Level.PROD, eval_batch=8)  # type: ignore[arg-type]
    asyncio.run(session.start())
    losses = []
    for step in range(steps):
        batch = Split(*train.rows(list(range(64 * step, 64 * (step + 1)))), train.width)
        losses.append(asyncio.run(session.train_epoch(batch)))  # a one-batch split: one step
    return losses


@pytest.mark.parametrize("name", PROGRAMS)
def test_float16_storage_trains_close_to_float32(lavapipe: WgpuDevice, name: str) -> None:
    half = step_losses(stored_as(name, "float16"), lavapipe)
    full = step_losses(stored_as(name, "float32"), lavapipe)
    assert half != full  # the storage is really float16
    for got, want in zip(half, full, strict=True):
        assert abs(got - want) <= 5e-3 * want, (half, full)
    assert half[-1] < half[0]  # it learns


@pytest.mark.parametrize("name", PROGRAMS)
def test_float16_storage_on_lavapipe_matches_the_reference_device(lavapipe: WgpuDevice, name: str) -> None:
    program = stored_as(name, "float16")
    device = step_losses(program, lavapipe)
    reference = step_losses(program, ReferenceDevice(F16))
    for got, want in zip(device, reference, strict=True):
        assert abs(got - want) <= 1e-4 * want, (device, reference)


@pytest.mark.parametrize(("example", "checkpoint"), [(name, False) for name in PROGRAMS] + [("digits CNN", True)])
def test_the_schedule_rounds_where_the_ir_does(example: str, checkpoint: bool) -> None:
    """The reference device running the float16 step's kernels gives the IR reference's outputs, float16
    ones bit for bit: the lowering stores float16 exactly where the IR casts, and converts on load (with
    activation checkpointing too: the segment boundaries it keeps are float16)."""
    program = stored_as(example, "float16")
    program["memory"]["checkpoint"] = checkpoint
    compiled = compile_program(program)
    fn = compiled.step
    given = rt.example_inputs(fn, compiled.init, 4, classes=3)
    inputs = {k: np.asarray(v).astype(WIRE[fn.input(k).dtype]) for k, v in given.items()}
    want = run(fn, inputs)
    device = asyncio.run(ReferenceDevice(F16).compile(lowered(fn, Level.PROD, F16)))
    for name, value in inputs.items():
        device.write(name, value.tobytes())
    device.run()
    for name, node in fn.outputs:
        got = np.frombuffer(device.read(name), WIRE[node.dtype])[: node.size].reshape(node.shape)
        if node.dtype is DType.F16:
            np.testing.assert_array_equal(got, want[name], err_msg=name)
        else:
            np.testing.assert_allclose(got, want[name].astype(WIRE[node.dtype]), rtol=1e-6, atol=1e-7, err_msg=name)


@pytest.mark.parametrize("name", PROGRAMS)
def test_lavapipe_allocates_the_planned_bytes(lavapipe: WgpuDevice, name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    compiled = compile_program(stored_as(name, "float16"), eval_batch=8)
    plan = compiled.at(Level.PROD, lavapipe.features).plan
    step = asyncio.run(lavapipe.compile(plan.functions[0].planned))
    for function in plan.functions:
        host = step if function.planned.borrows else None  # evaluation is compiled alongside the step
        assert asyncio.run(lavapipe.compile(function.planned, host)).allocated == function.allocated, function.name
    session = Session(stored_as(name, "float16"), lavapipe, seed=1, level=Level.PROD, eval_batch=8)
    asyncio.run(session.start())
    assert session.step.allocated + session.eval.allocated == plan.total  # type: ignore[attr-defined]
    # compared on one kernel structure: a float32 step's reductions also compute cheap producers again
    # (lower.merge), which a float16 one keeps rounded
    monkeypatch.setattr(merge, "_cheap", lambda kernel: False)
    half = compile_program(stored_as(name, "float16"), eval_batch=8).at(Level.PROD, lavapipe.features).plan
    float32 = compile_program(stored_as(name, "float32"), eval_batch=8).at(Level.PROD, F16).plan
    assert half.totals["activations kept for backward"] < 0.51 * float32.totals["activations kept for backward"]


def test_the_cpu_path_refuses_float16_storage_naming_the_feature() -> None:
    device = asyncio.run(CpuDevice.open())
    with pytest.raises(StorageUnsupported, match="needs the device feature shader-f16, which this device lacks"):
        Session(stored_as("digits MLP", "float16"), device, seed=1, level=Level.PROD, eval_batch=8)
    step = compile_program(stored_as("digits MLP", "float16")).at(Level.PROD, F16).plan.functions[0]
    with pytest.raises(ValueError, match="float16 storage needs a WebGPU device with shader-f16"):
        asyncio.run(device.compile(step.planned))
