"""An awaitable that is already done: what a synchronous device returns where the browser's devices
return a pending promise, so the session code awaits both the same way. And what a GPU executor's host
spends per step (`HostCost`)."""

from __future__ import annotations

import abc
from collections.abc import Generator
from typing import Generic, TypeVar

from scellis.runtime.index_checks import IndexChecks

T = TypeVar("T")


class Ready(Generic[T]):
    def __init__(self, value: T) -> None:
        self.value = value

    def __await__(self) -> Generator[None, None, T]:
        return self.value
        yield  # a generator, so `await` works


class HostCost:
    """The host's time over the steps a GPU executor has submitted: writing the inputs, recording every
    dispatch and submitting (not the GPU's own time)."""

    def __init__(self) -> None:
        self.steps, self.seconds = 0, 0.0

    def add(self, seconds: float) -> None:
        self.steps += 1
        self.seconds += seconds

    def cost(self, dispatches: int) -> dict[str, float] | None:
        """{steps, ms_per_step, us_per_dispatch} (a step of `dispatches` kernels); None before a step."""
        if not self.steps:
            return None
        per_step = self.seconds / self.steps
        return {"steps": self.steps, "ms_per_step": 1e3 * per_step, "us_per_dispatch": 1e6 * per_step / dispatches}


class Synchronous(abc.ABC):
    """The compiled-step calls (runtime.device) for executors whose run finishes before it returns
    (wgpu-py waits for the queue when reading; the CPU path computes in the call): the subclass gives
    write, read and run, and sets `index_checks` when its schedule checks indices (every read then
    brings the records too, runtime.index_checks)."""

    index_checks: IndexChecks | None = None

    @abc.abstractmethod
    def write(self, name: str, data: bytes) -> None: ...

    @abc.abstractmethod
    def read(self, name: str) -> bytes: ...

    @abc.abstractmethod
    def run(self) -> None: ...

    def submit(self, writes: dict[str, bytes], reads: list[str]) -> Ready[dict[str, bytes]]:
        """Write, run, and hold the reads for whenever the caller awaits them (or never does)."""
        for name, data in writes.items():
            self.write(name, data)
        self.run()
        return Ready(self._read_checked(reads))

    async def step(self, writes: dict[str, bytes], reads: list[str]) -> dict[str, bytes]:
        return await self.submit(writes, reads)

    async def fetch(self, names: list[str]) -> dict[str, bytes]:
        return self._read_checked(names)

    def _read_checked(self, names: list[str]) -> dict[str, bytes]:
        if self.index_checks is None:
            return {name: self.read(name) for name in names}
        return self.index_checks.verify({name: self.read(name) for name in self.index_checks.reads(names)}, names)


def copy_sizes(names: list[str], source: dict[str, int], target: dict[str, int]) -> list[tuple[str, int]]:
    """(name, bytes) of each buffer a copy_into moves, checked: both steps have it, at one size."""
    out = []
    for name in names:
        if name not in source or name not in target:
            side = "source" if name not in source else "target"
            raise ValueError(f"the {side} step has no buffer {name!r} to copy")
        if source[name] != target[name]:
            raise ValueError(f"{name!r} holds {source[name]} bytes in the source step and {target[name]} in the target")
        out.append((name, source[name]))
    return out
