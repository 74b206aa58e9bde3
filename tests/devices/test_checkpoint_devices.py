"""Activation checkpointing on devices. At level debug the recomputed kernels are the same kernels on the
same values, so the gradients of the digits MLP, the digits CNN (dropout's mask redrawn, batch norm's
statistics recomputed) and a deep chain are bit-identical with and without checkpointing on lavapipe
(wgpu-py), the CPU path (wasmtime) and the reference device; a few training steps of a session leave
bit-identical parameters, optimizer state and running statistics; and the devices allocate exactly the
checkpointed plan, fewer bytes than without."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from wgpu_harness import DEVICE_DTYPES

from scellis.datasets import Split, digits_csv, read_digits
from scellis.examples import char_transformer, deep_chain, digits_cnn, digits_mlp
from scellis.ir import Function
from scellis.ir.function import input_name, input_role
from scellis.levels import Level
from scellis.ops.defs import Role
from scellis.pipeline import Compiled, compile_program
from scellis.plan import lowered
from scellis.plan.remedies import apply
from scellis.runtime.cpu.device import CpuDevice
from scellis.runtime.cpu.module import CpuPath
from scellis.runtime.reference import train as rt
from scellis.runtime.reference.device import ReferenceDevice
from scellis.runtime.webgpu.native import WgpuDevice
from scellis.session import Session

PROGRAMS: dict[str, Callable[[], dict[str, Any]]] = {
    "digits MLP": digits_mlp,
    "digits CNN": digits_cnn,
    "deep chain": lambda: deep_chain(40),
    "char transformer": char_transformer,
}


@pytest.fixture(scope="module")
def devices(cpu: CpuPath) -> dict[str, Any]:
    return {"reference": ReferenceDevice(), "lavapipe": WgpuDevice(), "wasmtime": CpuDevice(cpu)}


def both(data: dict[str, Any]) -> tuple[Compiled, Compiled]:
    return compile_program(apply(data, {"checkpoint": False})), compile_program(apply(data, {"checkpoint": True}))


def inputs(fn: Function, init: Function, seed: int) -> dict[str, bytes]:
    """Initial parameters and states, a batch of random data, RNG keys and positions, as device bytes."""
    values = rt.example_inputs(fn, init, seed, float_dtype=np.float32)
    return {name: np.asarray(v).astype(DEVICE_DTYPES[fn.input(name).dtype]).tobytes() for name, v in values.items()}


def run_raw(device: Any, fn: Function, values: dict[str, bytes]) -> dict[str, bytes]:
    compiled = asyncio.run(device.compile(lowered(fn, Level.DEBUG)))
    for name, data in values.items():
        compiled.write(name, data)
    compiled.run()
    return {name: compiled.read(name) for name, _ in fn.outputs}


@pytest.mark.parametrize("name", PROGRAMS)
def test_gradients_are_bit_identical_at_debug(devices: dict[str, Any], name: str) -> None:
    plain, cut = both(PROGRAMS[name]())
    values = inputs(plain.backward, plain.init, seed=7)
    for device_name, device in devices.items():
        want, got = run_raw(device, plain.backward, values), run_raw(device, cut.backward, values)
        assert list(got) == list(want)
        for output in want:
            assert got[output] == want[output], (device_name, output)


def split(rows: int) -> Split:
    train, _ = read_digits(digits_csv().read_bytes())
    return Split(train.features[: rows * train.width * 4], train.labels[: rows * 4], train.width)


def trained(data: dict[str, Any], device: Any, steps: int) -> dict[str, bytes]:
    """Parameters and state after `steps` steps of a debug session (one epoch of `steps` batches)."""
    session = Session(data, device, seed=4, level=Level.DEBUG, eval_batch=8)
    asyncio.run(session.start())
    asyncio.run(session.train_epoch(split(steps * session.batch)))
    names = [input_name(n) for n in session.step_fn.inputs if input_role(n) in (Role.PARAM, Role.STATE)]
    return asyncio.run(session.step.fetch(names))


@pytest.mark.parametrize("device_name", ["wasmtime", "lavapipe"])
def test_training_with_checkpointing_leaves_bit_identical_weights(devices: dict[str, Any], device_name: str) -> None:
    data = digits_cnn()
    want = trained(apply(data, {"checkpoint": False}), devices[device_name], steps=3)
    got = trained(apply(data, {"checkpoint": True}), devices[device_name], steps=3)
    assert sorted(got) == sorted(want) and "norm1.running_mean" in got and "opt.m/conv1.weight" in got
    for name in want:
        assert got[name] == want[name], name
    assert np.frombuffer(got["opt.step"], "<i4")[0] == 3


@pytest.mark.parametrize("name", ["deep chain", "digits CNN"])
def test_devices_allocate_exactly_the_checkpointed_plan(devices: dict[str, Any], name: str) -> None:
    data = apply(PROGRAMS[name](), {"checkpoint": True})
    plain, cut = both(data)
    done = lowered(cut.step, Level.PROD)
    assert done.memory.allocated < lowered(plain.step, Level.PROD).memory.allocated
    for device_name in ("lavapipe", "wasmtime"):
        device = devices[device_name]
        assert asyncio.run(device.compile(done)).allocated == done.memory.allocated, device_name
        session = Session(data, device, seed=1, level=Level.PROD, eval_batch=8)
        asyncio.run(session.start())
        plan = compile_program(data, eval_batch=8).at(Level.PROD, device.features).plan
        assert session.step.allocated + session.eval.allocated == plan.total, device_name
