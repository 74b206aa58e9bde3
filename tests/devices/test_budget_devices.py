"""Device budgets: the WebGPU allocation probe (lavapipe) leaves nothing allocated and reads failures
right; the CPU path's budget is the wasm32 memory left."""

from __future__ import annotations

import asyncio

import pytest
import wgpu

from scellis.examples import digits_cnn
from scellis.levels import Level
from scellis.plan.budget import Budget, verdict
from scellis.runtime.cpu.device import WASM32_BYTES, CpuDevice
from scellis.runtime.webgpu.native import WgpuDevice
from scellis.session import PlanRefused, Session


def live_buffers() -> tuple[int, int]:
    counts = wgpu.diagnostics.object_counts.get_dict()
    return counts["Buffer"]["count"], counts["total"]["resource_mem"]


def test_the_probe_leaves_no_allocation_behind() -> None:
    device = WgpuDevice()
    before = live_buffers()
    budget = asyncio.run(device.budget(300_000_000))  # more than one 128 MiB binding, in several buffers
    assert budget.bytes is not None and budget.bytes >= 300_000_000
    assert live_buffers() == before


class FakeBuffer:
    """Stands in for a device buffer, in a pool of 50 MB that a probe must give back."""

    def __init__(self, live: list[FakeBuffer], size: int) -> None:
        self.live, self.size = live, size
        live.append(self)

    def destroy(self) -> None:
        self.live.remove(self)


def test_a_failed_probe_is_red_and_releases_what_it_got(monkeypatch: pytest.MonkeyPatch) -> None:
    device = WgpuDevice()
    live: list[FakeBuffer] = []

    def create_buffer(*, size: int, usage: int) -> FakeBuffer:
        if sum(b.size for b in live) + size > 50_000_000:
            raise wgpu.GPUOutOfMemoryError("out of memory (test)")
        return FakeBuffer(live, size)

    monkeypatch.setattr(device.device, "create_buffer", create_buffer)
    monkeypatch.setattr(device, "limits", device.limits.__class__(20_000_000, 20_000_000, 32))
    budget = asyncio.run(device.budget(80_000_000))
    assert budget.bytes == 40_000_000 and "could allocate 40,000,000 bytes, not 80,000,000" in budget.how
    assert live == []  # every buffer of every probe destroyed, the failed ones too
    assert verdict(80_000_000, 20_000_000, 4, device.limits, budget).color == "red"
    tight = asyncio.run(device.budget(45_000_000))  # fits, but not with the headroom green asks for
    assert tight.bytes == 45_000_000 and verdict(45_000_000, 20_000_000, 4, device.limits, tight).color == "yellow"


def test_the_cpu_path_budget_is_the_wasm32_memory_left() -> None:
    device = asyncio.run(CpuDevice.open())
    budget = asyncio.run(device.budget(1))
    assert budget.bytes is not None and 0 < budget.bytes <= WASM32_BYTES - device.cpu.free_base
    assert budget.how.startswith("wasm32 memory: 4 GiB")


def test_a_session_refuses_a_red_plan_before_anything_reaches_the_device(monkeypatch: pytest.MonkeyPatch) -> None:
    device = asyncio.run(CpuDevice.open())

    async def small(need: int) -> Budget:
        return Budget(100_000, "a small test budget")

    monkeypatch.setattr(device, "budget", small)
    session = Session(digits_cnn(), device, seed=1, level=Level.PROD, eval_batch=8)
    before = device.cpu.free_base
    with pytest.raises(PlanRefused, match=r"digits-cnn does not fit on CPU path .*: needs [\d,]+ bytes, more than"):
        asyncio.run(session.start())
    assert device.cpu.free_base == before and not hasattr(session, "step")  # nothing was placed
    assert session.verdict.color == "red"
    ok = Session(digits_cnn(), asyncio.run(CpuDevice.open()), seed=1, level=Level.PROD, eval_batch=8)
    asyncio.run(ok.start())
    assert ok.verdict.color == "green"
