"""A compiled step's buffers copied into another step's on the device (CompiledStep.copy_into), as a
session hands its carried state to evaluation: the same bytes arrive, nothing else moves, and a missing
name or a size that differs is refused by name. On lavapipe, the CPU path under wasmtime and the
reference."""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np
import pytest

from scellis.ir import Function
from scellis.levels import Level
from scellis.ops import DType, Op, const, make
from scellis.ops import defs as d
from scellis.ops.node import input_node
from scellis.plan import lowered
from scellis.runtime.cpu.device import CpuDevice
from scellis.runtime.reference.device import ReferenceDevice
from scellis.runtime.webgpu.native import WgpuDevice

RNG = np.random.default_rng(11)


@pytest.fixture(scope="module", params=["lavapipe", "wasmtime", "reference"])
def device(request: pytest.FixtureRequest) -> Any:
    if request.param == "lavapipe":
        return WgpuDevice()
    if request.param == "wasmtime":
        return asyncio.run(CpuDevice.open())
    return ReferenceDevice()


def doubled(name: str, shape: tuple[int, ...]) -> Function:
    """y = 2 w + x: `w` a state the copy hands over, `x` an input it leaves alone."""
    w = input_node("w", d.Role.STATE, DType.F32, shape)
    x = input_node("x", d.Role.DATA, DType.F32, shape)
    return Function(name, (w, x), (("y", make(Op.ADD, make(Op.MUL, w, const(2.0)), x)),))


def compiled(device: Any, fn: Function) -> Any:
    return asyncio.run(device.compile(lowered(fn, Level.DEBUG)))


def test_the_named_buffers_arrive_and_nothing_else_moves(device: Any) -> None:
    source, target = compiled(device, doubled("a", (3, 50))), compiled(device, doubled("b", (3, 50)))
    w, x, other = (RNG.standard_normal((3, 50)).astype(np.float32) for _ in range(3))
    source.write("w", w.tobytes())
    source.write("x", x.tobytes())
    target.write("x", other.tobytes())
    source.copy_into(target, ["w"])
    out = asyncio.run(target.step({}, ["y"]))["y"]
    np.testing.assert_array_equal(np.frombuffer(out, np.float32).reshape(3, 50), 2 * w + other)
    assert asyncio.run(target.fetch(["w"]))["w"] == w.tobytes()


def test_a_missing_name_or_another_size_is_refused_by_name(device: Any) -> None:
    source, target = compiled(device, doubled("a", (3, 50))), compiled(device, doubled("b", (4, 50)))
    with pytest.raises(ValueError, match="'w' holds 600 bytes in the source step and 800 in the target"):
        source.copy_into(target, ["w"])
    with pytest.raises(ValueError, match="the source step has no buffer 'v' to copy"):
        source.copy_into(target, ["v"])
