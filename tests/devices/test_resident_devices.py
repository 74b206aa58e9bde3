"""A resident data set on the devices: the training split written once, each batch gathered on the device
by its example indices. Weights after an epoch are bit-identical to streaming the same batches (debug;
the CNN's dropout draws too), and the session allocates exactly what its plan says, on lavapipe and on
the CPU path (wasmtime)."""

from __future__ import annotations

import asyncio
import hashlib

import pytest
from splits import random_split

from scellis.examples import digits_cnn, digits_mlp
from scellis.levels import Level
from scellis.plan.remedies import apply
from scellis.runtime.cpu.device import CpuDevice
from scellis.runtime.webgpu.native import WgpuDevice
from scellis.session import Session

ROWS = 192  # three batches of 64


@pytest.fixture(scope="module")
def devices() -> dict[str, object]:
    return {"lavapipe": WgpuDevice(), "wasmtime": asyncio.run(CpuDevice.open())}


async def trained(program: dict, device: object, examples: int | None) -> tuple[str, Session]:
    session = Session(program, device, seed=5, level=Level.DEBUG, eval_batch=32, examples=examples)  # type: ignore[arg-type]
    await session.fit(random_split(ROWS, 1), random_split(32, 2), epochs=1)
    values = await session.step.fetch(session.carried)
    return hashlib.sha256(b"".join(values[k] for k in sorted(values))).hexdigest(), session


@pytest.mark.parametrize("make", [digits_mlp, digits_cnn], ids=["MLP", "CNN"])
def test_resident_and_streamed_batches_train_to_the_same_bits(devices: dict[str, object], make) -> None:  # type: ignore[no-untyped-def]
    for name, device in devices.items():
        streamed, _ = asyncio.run(trained(make(), device, None))
        held, session = asyncio.run(trained(apply(make(), {"data": "resident"}), device, ROWS))
        assert held == streamed, name
        assert session.step.allocated + session.eval.allocated == session.plan.total, name  # type: ignore[attr-defined]
        assert session.plan.step.bytes["resident data set"] == ROWS * 65 * 4


def test_a_resident_session_refuses_a_split_of_another_size(devices: dict[str, object]) -> None:
    program = apply(digits_mlp(), {"data": "resident"})
    session = Session(program, devices["wasmtime"], seed=5, level=Level.DEBUG, eval_batch=32, examples=ROWS)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="planned for 192 examples, got 128 examples"):
        asyncio.run(session.start(random_split(128, 1)))
    with pytest.raises(ValueError, match="planned for 192 examples, got none"):
        asyncio.run(session.start())
