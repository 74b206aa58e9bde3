"""The devices allocate exactly what the memory plan assigns: the bytes of buffers each compiled step
asked its device for equal the plan's, for every example's training step, evaluation and init (the
digits MLP and CNN, the character transformer block), on lavapipe (wgpu-py) and on the CPU path
(wasmtime)."""

from __future__ import annotations

import asyncio

import pytest

from scellis.examples import char_transformer, digits_cnn, digits_mlp, mlp
from scellis.levels import Level
from scellis.pipeline import compile_program
from scellis.plan import lowered
from scellis.runtime.cpu.device import CpuDevice
from scellis.runtime.webgpu.native import WgpuDevice
from scellis.session import Session

PROGRAMS = {
    "digits MLP": digits_mlp,
    "digits CNN": digits_cnn,
    "char transformer": char_transformer,
    "MLP 784-512-512-10": lambda: mlp(784, [512, 512], 10, 256),
}


@pytest.fixture(scope="module")
def devices() -> dict[str, object]:
    return {"lavapipe": WgpuDevice(), "wasmtime": asyncio.run(CpuDevice.open())}


@pytest.mark.parametrize("name", PROGRAMS)
def test_allocated_bytes_equal_the_plan(devices: dict[str, object], name: str) -> None:
    compiled = compile_program(PROGRAMS[name]())
    for fn in (compiled.step, compiled.evaluate, compiled.init):
        done = lowered(fn, Level.PROD)
        for device_name, device in devices.items():
            step = asyncio.run(device.compile(done))  # type: ignore[attr-defined]
            assert step.allocated == done.memory.allocated, (device_name, fn.name)
    cpu = asyncio.run(devices["wasmtime"].compile(lowered(compiled.step, Level.PROD)))  # type: ignore[attr-defined]
    # beyond the plan, the CPU path's temporaries and alignment: the largest gradient that a kernel updating a
    # parameter in place computes (17 % for the digits MLP, whose plan stores no gradient), a prologue's block
    assert 0 <= cpu.workspace < 0.2 * cpu.allocated


@pytest.mark.parametrize("name", ["digits MLP", "digits CNN", "char transformer"])
def test_a_session_holds_what_the_program_plan_says(devices: dict[str, object], name: str) -> None:
    for device in devices.values():
        session = Session(PROGRAMS[name](), device, seed=1, level=Level.PROD, eval_batch=8)  # type: ignore[arg-type]
        asyncio.run(session.start())
        plan = compile_program(PROGRAMS[name](), eval_batch=8).at(Level.PROD, device.features).plan  # type: ignore[attr-defined]
        assert session.step.allocated + session.eval.allocated == plan.total  # type: ignore[attr-defined]


@pytest.mark.parametrize("name", ["digits MLP", "char transformer"])
def test_evaluation_borrows_the_steps_parameters_and_temporaries(devices: dict[str, object], name: str) -> None:
    """Compiled alongside the step, evaluation allocates only the slots it could not borrow: its parameters
    are the step's own buffers (written once, read by both), and its temporaries lie in the step's."""
    plan = compile_program(PROGRAMS[name](), eval_batch=8).at(Level.PROD, frozenset()).plan
    step_plan, evaluation = plan.functions[0], plan.function("evaluation")
    assert evaluation is not None and evaluation.planned.shared
    alone = evaluation.planned.memory.allocated
    assert evaluation.allocated < 0.2 * alone  # its batch and outputs: every parameter and temporary borrowed
    for device_name, device in devices.items():
        step = asyncio.run(device.compile(step_plan.planned))  # type: ignore[attr-defined]
        with pytest.raises(ValueError, match="planned alongside another function: compile it with that one"):
            asyncio.run(device.compile(evaluation.planned))  # type: ignore[attr-defined]
        guest = asyncio.run(device.compile(evaluation.planned, step))  # type: ignore[attr-defined]
        assert guest.allocated == evaluation.allocated, device_name
        name0 = evaluation.planned.shared[0]
        size = len(asyncio.run(step.fetch([name0]))[name0])
        step.write(name0, bytes(range(256)) * (size // 256) + bytes(size % 256))
        assert asyncio.run(guest.fetch([name0])) == asyncio.run(step.fetch([name0])), device_name
