"""The WebGPU adapter and device in the browser: step plans handed to the page's JS executor
(app/src/executor.js) through Pyodide's FFI. One FFI call per step; outputs come back as promises the
caller awaits later. The index checks' records (runtime.index_checks) are one more named output, read
with the others. A device the browser lost raises DeviceLost (the executor's GpuLostError), never a raw
JS exception."""

from __future__ import annotations

import time
from collections.abc import Generator, Iterator
from contextlib import contextmanager
from typing import Any

import js  # only importable in Pyodide
import scellis_host  # the engine worker's (app/src/enginehost.js): the device it opened
from pyodide.ffi import JsException, jsnull, to_js

from scellis.plan.budget import Budget, DeviceLimits, probe_search
from scellis.plan.planned import Planned
from scellis.runtime.device import DeviceInfo, DeviceLost, borrowed, lowering_features
from scellis.runtime.index_checks import IndexChecks
from scellis.runtime.webgpu.wire import step_plan

GPU_LOST = "GpuLostError"  # the name of app/src/gpulost.js's error


@contextmanager
def _loss_named() -> Iterator[None]:
    """The executor's GpuLostError raised as DeviceLost; every other error as it is."""
    try:
        yield
    except JsException as error:
        if str(getattr(error, "name", "")) == GPU_LOST:
            raise DeviceLost(str(error.message)) from None
        raise


class Reads:
    """The outputs of a submitted step, as bytes, once the JS promise settles; IndexRangeError when the
    index checks read with them hold a bad index."""

    def __init__(self, promise: Any, checks: IndexChecks, names: list[str]) -> None:
        self.promise, self.checks, self.names = promise, checks, names

    def __await__(self) -> Generator[Any, Any, dict[str, bytes]]:
        with _loss_named():
            result = yield from self.promise.__await__()
        return self.checks.verify(_bytes(result), self.names)


class BrowserCompiled:
    def __init__(self, handle: Any, checks: IndexChecks) -> None:
        self.handle, self.checks = handle, checks
        self.allocated = int(handle.allocated)  # bytes of the buffers the page's executor created

    def write(self, name: str, data: bytes) -> None:
        self.handle.write(name, to_js(data))

    async def step(self, writes: dict[str, bytes], reads: list[str]) -> dict[str, bytes]:
        """Submit one step (one FFI call); awaiting the result waits for `reads` to come back."""
        return await self.submit(writes, reads)

    def submit(self, writes: dict[str, bytes], reads: list[str]) -> Reads:
        """Submit one step; its reads arrive whenever the caller awaits them (or never does)."""
        js_writes = js.Object.fromEntries(to_js([[k, to_js(v)] for k, v in writes.items()]))
        with _loss_named():
            return Reads(self.handle.step(js_writes, to_js(self.checks.reads(reads))), self.checks, reads)

    def host_cost(self) -> dict[str, float] | None:
        """What executor.js measured of the steps so far (CompiledStep.hostCost): ms per step writing the
        inputs, recording every dispatch and submitting, and µs per dispatch; None before a step."""
        cost = self.handle.hostCost()
        return None if cost is None or cost is jsnull else dict(cost.to_py())

    async def fetch(self, names: list[str]) -> dict[str, bytes]:
        with _loss_named():
            promise = self.handle.fetch(to_js(self.checks.reads(names)))
        return await Reads(promise, self.checks, names)

    def copy_into(self, other: BrowserCompiled, names: list[str]) -> None:
        """One submission of buffer-to-buffer copies in the page's executor (runtime.device)."""
        with _loss_named():
            self.handle.copyInto(other.handle, to_js(names))


def _measured_when(dates: list[str]) -> str:
    """When the probe's answers were measured: "now", on the date of the oldest kept one, or both."""
    kept = sorted(d for d in dates if d)
    if not kept:
        return "measured now"
    return f"measured on {kept[0]}" + (" and now" if len(kept) < len(dates) else "")


def _bytes(result: Any) -> dict[str, bytes]:
    return {str(entry[0]): bytes(entry[1].to_bytes()) for entry in js.Object.entries(result)}


class BrowserWebGPU:
    """Compiles schedules onto the device the engine's worker opened last (`scellis_host.gpu`)."""

    def __init__(self) -> None:
        self.gpu = scellis_host.gpu
        self.name = str(self.gpu.name)
        limits = self.gpu.limits
        self.limits = DeviceLimits(
            int(limits.max_buffer_size), int(limits.max_storage_binding), int(limits.max_storage_buffers)
        )
        enabled = frozenset(str(f) for f in self.gpu.features)
        self.features = lowering_features(enabled, self.limits.max_storage_buffers, bool(self.gpu.software))

    async def budget(self, need: int) -> Budget:
        """WebGPU does not say how much memory its device has: the page's allocation probe measures
        around `need` (plan.budget.probe_search). The page keeps each answer per adapter across visits
        (app/src/probes.js); the budget says when the answers it rests on were measured."""
        search = probe_search(need)
        size = next(search)
        dates: list[str] = []  # of answers kept from earlier; "" for one measured now
        try:
            while True:
                with _loss_named():
                    answer = await self.gpu.measure(size)
                dates.append(str(answer.measured)[:10] if answer.stored else "")
                size = search.send(bool(answer.fits))
        except StopIteration as done:
            budget: Budget = done.value
        return Budget(budget.bytes, f"{budget.how}; {_measured_when(dates)}")

    def warm(self, kernels: list[dict[str, str]], next_run: bool = False) -> None:
        """Has the page's executor begin making the pipelines of `kernels` ({source, label}: wire.step_plan's),
        for a compile to come, and returns at once: nothing runs and nothing is allocated; that compile finds
        them made or under way, and reports any failure itself. `next_run`: for a run not opened yet, which
        the executor makes on this device only while no run has claimed it (a later run takes a fresh one)."""
        self.gpu.warm(to_js(kernels, dict_converter=js.Object.fromEntries), next_run)

    async def compile(self, planned: Planned, host: BrowserCompiled | None = None) -> BrowserCompiled:
        start = time.perf_counter()
        plan = {**step_plan(planned), "borrows": borrowed(planned, host)}
        scellis_host.timeline.record(f"wgsl: {planned.name}", start * 1000, time.perf_counter() * 1000)
        with _loss_named():
            handle = await self.gpu.compile(
                to_js(plan, dict_converter=js.Object.fromEntries), None if host is None else host.handle
            )
        return BrowserCompiled(handle, IndexChecks(planned.schedule))


def _browser() -> str:
    """The browser's name and major version, from User-Agent Client Hints where offered."""
    data = getattr(js.navigator, "userAgentData", None)
    if data is not None and data is not jsnull:
        brands = [(str(b.brand), str(b.version)) for b in data.brands if "Not" not in str(b.brand)]
        named = [b for b in brands if b[0] != "Chromium"] or brands
        if named:
            return f"{named[0][0]} {named[0][1]}"
    agent = str(js.navigator.userAgent)
    for token, name in (("Firefox/", "Firefox"), ("Safari/", "Safari")):
        if token in agent:
            return f"{name} {agent.split(token)[1].split(' ', maxsplit=1)[0]}"
    return "browser"


async def adapters() -> list[DeviceInfo]:
    """The page's adapter, or nothing when `navigator.gpu` is absent or `requestAdapter()` gives null."""
    gpu = getattr(js.navigator, "gpu", None)
    if gpu is None or gpu is jsnull:
        return []
    adapter = await gpu.requestAdapter()
    if adapter is None or adapter is jsnull:
        return []
    info, limits = adapter.info, adapter.limits
    vendor, arch = str(info.vendor or ""), str(info.architecture or "")
    software = bool(getattr(info, "isFallbackAdapter", False)) or arch == "swiftshader"
    enabled = frozenset({"shader-f16"} if adapter.features.has("shader-f16") else ())
    features = lowering_features(enabled, int(limits.maxStorageBuffersPerShaderStage), software)
    return [
        DeviceInfo(
            kind="webgpu",
            name=str(info.description or info.device or " ".join(p for p in (vendor, arch) if p) or "WebGPU adapter"),
            host=f"{_browser()} WebGPU",
            vendor=vendor,
            architecture=arch,
            software=software,
            max_buffer_size=int(limits.maxBufferSize),
            max_storage_binding=int(limits.maxStorageBufferBindingSize),
            features=tuple(sorted(features)),
        )
    ]
