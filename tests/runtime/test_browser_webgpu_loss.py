"""The browser's WebGPU device (runtime.webgpu.browser) under CPython, with stand-ins for Pyodide's `js` and
`pyodide.ffi` and the engine worker's `scellis_host`: the executor's GpuLostError, wherever it surfaces (a
step, its reads awaited later, a read back, a copy, compiling, the allocation probe), is raised as DeviceLost
with the executor's words; any other JS error passes as it is."""

from __future__ import annotations

import asyncio
import importlib
import sys
import types
from collections.abc import Iterator
from typing import Any

import pytest

from scellis.lower.kernels import Schedule
from scellis.runtime.device import DeviceLost
from scellis.runtime.index_checks import IndexChecks

NO_CHECKS = IndexChecks(Schedule("step", (), (), (), ()))  # a step without indexing ops
LOST = "the GPU was lost (destroyed: Device was destroyed.) during a step: Acme X1 does nothing more"


class JsException(Exception):
    def __init__(self, name: str, message: str) -> None:
        super().__init__(f"{name}: {message}")
        self.name, self.message = name, message


def failing(name: str) -> Any:
    def call(*_: Any) -> Any:
        raise JsException(name, LOST if name == "GpuLostError" else "something else")

    return call


def rejecting(name: str) -> Any:
    async def call(*_: Any) -> Any:
        failing(name)()

    return call


@pytest.fixture
def browser(monkeypatch: pytest.MonkeyPatch) -> Iterator[types.ModuleType]:
    js = types.ModuleType("js")
    js.Object = types.SimpleNamespace(fromEntries=dict)  # type: ignore[attr-defined]
    gpu = types.SimpleNamespace(
        name="Acme X1",
        features=[],
        software=False,
        limits=types.SimpleNamespace(max_buffer_size=1 << 30, max_storage_binding=1 << 30, max_storage_buffers=8),
        measure=rejecting("GpuLostError"),
        compile=rejecting("GpuLostError"),
    )
    host = types.ModuleType("scellis_host")
    host.gpu = gpu  # type: ignore[attr-defined]
    host.timeline = types.SimpleNamespace(record=lambda *_: None)  # type: ignore[attr-defined]
    ffi = types.ModuleType("pyodide.ffi")
    ffi.JsException = JsException  # type: ignore[attr-defined]
    ffi.to_js = lambda value, **_: value  # type: ignore[attr-defined]
    ffi.jsnull = None  # type: ignore[attr-defined]
    pyodide = types.ModuleType("pyodide")
    pyodide.ffi = ffi  # type: ignore[attr-defined]
    for name, module in (("js", js), ("pyodide", pyodide), ("pyodide.ffi", ffi), ("scellis_host", host)):
        monkeypatch.setitem(sys.modules, name, module)
    monkeypatch.delitem(sys.modules, "scellis.runtime.webgpu.browser", raising=False)
    yield importlib.import_module("scellis.runtime.webgpu.browser")
    sys.modules.pop("scellis.runtime.webgpu.browser", None)


def handle(name: str) -> Any:
    return types.SimpleNamespace(
        allocated=16, step=rejecting(name), fetch=rejecting(name), copyInto=failing(name), write=lambda *_: None
    )


# a planned schedule as compile reads it past step_plan (stubbed below): its own slots, none borrowed
STAND_IN = types.SimpleNamespace(name="stand-in", borrows=(), memory=types.SimpleNamespace(slot_bytes=()))


def test_every_call_on_a_lost_device_raises_device_lost(browser: types.ModuleType) -> None:
    step = browser.BrowserCompiled(handle("GpuLostError"), NO_CHECKS)
    device = browser.BrowserWebGPU()

    async def calls() -> list[str]:
        said = []
        for call in (
            lambda: step.step({}, ["w"]),
            lambda: step.fetch(["w"]),
            lambda: device.budget(1024),
            lambda: device.compile(STAND_IN),
        ):
            with pytest.raises(DeviceLost) as lost:
                await call()
            said.append(str(lost.value))
        reads = step.submit({}, ["w"])  # submitted now, read later
        with pytest.raises(DeviceLost):
            await reads
        with pytest.raises(DeviceLost):
            step.copy_into(step, ["w"])
        return said

    browser.step_plan = lambda schedule: {}  # compile's plan: the stand-in device never reads it
    assert asyncio.run(calls()) == [LOST] * 4


def test_other_js_errors_pass_as_they_are(browser: types.ModuleType) -> None:
    step = browser.BrowserCompiled(handle("OperationError"), NO_CHECKS)
    with pytest.raises(JsException) as error:
        asyncio.run(step.fetch(["w"]))
    assert error.value.name == "OperationError"
