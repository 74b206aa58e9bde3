"""Running an IR function on a device through its schedule, with the reference's array conventions."""

from __future__ import annotations

import asyncio

import numpy as np

from scellis.ir import Function
from scellis.levels import Level
from scellis.ops import DType
from scellis.plan import lowered

DEVICE_DTYPES = {DType.F32: "<f4", DType.I32: "<i4", DType.U32: "<u4", DType.BOOL: "<u4"}


def run_on(
    device: object,
    fn: Function,
    inputs: dict[str, np.ndarray],
    level: Level = Level.PROD,
    features: frozenset[str] = frozenset(),
) -> dict[str, np.ndarray]:
    """Lower `fn` at `level` as for a device with `features`, compile it on `device`, write the inputs, run
    once, read every output."""
    compiled = asyncio.run(device.compile(lowered(fn, level, features)))  # type: ignore[attr-defined]
    for name, value in inputs.items():
        node = fn.input(name)
        compiled.write(name, np.asarray(value).astype(DEVICE_DTYPES[node.dtype]).tobytes())
    compiled.run()
    out = {}
    for name, node in fn.outputs:
        raw = np.frombuffer(compiled.read(name), dtype=DEVICE_DTYPES[node.dtype])[: node.size].reshape(node.shape)
        out[name] = raw.astype(bool) if node.dtype is DType.BOOL else raw
    return out
