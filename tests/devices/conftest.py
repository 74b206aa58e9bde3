"""Device fixtures. Each device the test command installs must be present: a missing
lavapipe or wasmtime fails these tests instead of skipping them."""

from __future__ import annotations

import asyncio

import pytest

from scellis.runtime.cpu.module import CpuPath


@pytest.fixture(scope="session")
def cpu() -> CpuPath:
    return asyncio.run(CpuPath.open())
