"""The start-up self-check (runtime.selfcheck) on the CPU path and on lavapipe: its schedule is the real
path (a matmul with a fused epilogue, then a reduction), its pure-Python float64 evaluation matches the
reference device, both devices agree with it within the kernels' tolerances, and the CPU path's output
bytes are the same on every run (debug)."""

from __future__ import annotations

import asyncio
import struct

import numpy as np
import pytest

from scellis.lower.kernels import Kind
from scellis.runtime.cpu.device import CpuDevice
from scellis.runtime.cpu.module import CpuPath
from scellis.runtime.reference.device import ReferenceDevice
from scellis.runtime.selfcheck import K, M, N, check_inputs, compiled_check, reference, self_check
from scellis.runtime.webgpu.native import WgpuDevice

INPUTS = {"x": check_inputs(M * K, 1), "w": check_inputs(K * N, 2)}


@pytest.fixture(scope="module")
def gpu() -> WgpuDevice:
    return WgpuDevice()


def test_the_inputs_are_fixed_exact_values_in_the_unit_interval() -> None:
    x = np.frombuffer(INPUTS["x"], dtype="<f4")
    assert x.min() >= -1 and x.max() < 1 and len(set(x.tolist())) > 0.99 * x.size
    assert check_inputs(M * K, 1) == INPUTS["x"] != check_inputs(M * K, 3)


def test_the_schedule_is_a_matmul_with_its_epilogue_then_a_reduction() -> None:
    schedule, _ = asyncio.run(compiled_check(ReferenceDevice()))
    assert [k.kind for k in schedule.kernels] == [Kind.MATMUL, Kind.REDUCE]
    assert len(schedule.kernels[0].expr.steps) > 1  # the tanh runs in the matmul's epilogue


def test_the_pure_python_evaluation_is_the_reference_devices() -> None:
    _, step = asyncio.run(compiled_check(ReferenceDevice()))
    got = asyncio.run(step.step(INPUTS, ["y", "total"]))
    want = reference(INPUTS["x"], INPUTS["w"])
    np.testing.assert_allclose(np.frombuffer(got["y"], dtype="<f4"), want["y"], rtol=0, atol=1e-6)
    assert abs(struct.unpack("<f", got["total"])[0] - want["total"][0]) < 1e-5


@pytest.mark.parametrize("name", ["cpu", "webgpu"])
def test_each_device_agrees_with_float64(cpu: CpuPath, gpu: WgpuDevice, name: str) -> None:
    device = CpuDevice(cpu) if name == "cpu" else gpu
    check = asyncio.run(self_check(device))
    assert check["ok"] and check["level"] == "debug" and check["device"] == device.name
    assert check["kernels"] == ["matmul [dot]", "reduce"]
    assert [c["output"] for c in check["checks"]] == ["y", "total"]
    assert all(0 <= c["error"] <= c["tolerance"] < 1e-3 for c in check["checks"])
    assert abs(check["total"] - reference(INPUTS["x"], INPUTS["w"])["total"][0]) < 1e-4


def test_the_cpu_path_gives_the_same_bytes_every_time() -> None:
    first, again = (asyncio.run(self_check(asyncio.run(CpuDevice.open()))) for _ in range(2))
    assert first["outputs_sha256"] == again["outputs_sha256"] and len(first["outputs_sha256"]) == 64
    assert {k: v for k, v in first.items() if k != "device"} == {k: v for k, v in again.items() if k != "device"}


def test_a_wrong_device_is_reported_as_disagreeing(cpu: CpuPath) -> None:
    class Off(CpuDevice):
        async def compile(self, planned, host=None):  # type: ignore[no-untyped-def]
            step = await super().compile(planned, host)
            run = step.step

            async def off(writes: dict[str, bytes], reads: list[str]) -> dict[str, bytes]:
                got = await run(writes, reads)
                return {**got, "total": struct.pack("<f", struct.unpack("<f", got["total"])[0] + 0.01)}

            step.step = off  # type: ignore[method-assign]
            return step

    check = asyncio.run(self_check(Off(cpu)))
    assert not check["ok"] and [c["ok"] for c in check["checks"]] == [True, False]


def test_reserved_memory_starts_zeroed_after_scratch_use(cpu: CpuPath) -> None:
    """Scratch placements write past the reserved regions; a later reservation (a compiled schedule's
    buffers: optimizer state must start at zero) is zeroed all the same."""
    (scratch,) = cpu._place([4000])
    cpu.instance.write(scratch, b"\xff" * 4000)
    offset = cpu.reserve(3000)
    assert offset <= scratch < offset + 3000
    assert cpu.instance.read(offset, 3000) == bytes(3000)


def test_memory_grows_for_large_reservations(cpu: CpuPath) -> None:
    offset = cpu.reserve(12 * 2**20)  # beyond the module's initial memory
    assert cpu.instance.memory_size() >= offset + 12 * 2**20
