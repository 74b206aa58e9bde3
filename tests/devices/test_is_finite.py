"""IS_FINITE on the CPU path (wasmtime) and WGSL (lavapipe) against the reference (np.isfinite): inf,
-inf, NaNs of several payloads and signs, the largest finite float32, subnormals, zeros, and values that
become inf inside the kernel (an overflowing product). Exact: it is decided by bits. (Not inf - inf: WGSL
compilers may fold x - x to 0, as lavapipe does, since WGSL lets them assume no inf or NaN.)"""

from __future__ import annotations

import numpy as np
import pytest
from wgpu_harness import run_on

from scellis.ir import Function
from scellis.ops import DType, Op, make
from scellis.ops.build import mul
from scellis.ops.defs import Role
from scellis.ops.node import input_node
from scellis.runtime.cpu.device import CpuDevice
from scellis.runtime.cpu.module import CpuPath
from scellis.runtime.reference.oracle import run
from scellis.runtime.webgpu.native import WgpuDevice

BITS = [0x7F800000, 0xFF800000, 0x7FC00000, 0x7F800001, 0xFFFFFFFF, 0x7FBFFFFF, 0x7F7FFFFF, 0xFF7FFFFF, 0x00000001]
BITS += [0x807FFFFF, 0x00800000, 0x00000000, 0x80000000, 0x3F800000, 0x7EFFFFFF]


def special_values() -> np.ndarray:
    """The bit patterns above as float32, repeated with ordinary values around them (odd length)."""
    special = np.array(BITS, dtype=np.uint32).view(np.float32)
    ordinary = np.linspace(-3.0, 3.0, 22, dtype=np.float32)
    return np.concatenate([special, ordinary, special[::-1]])


def is_finite_function(n: int) -> Function:
    x, y = input_node("x", Role.DATA, DType.F32, (n,)), input_node("y", Role.DATA, DType.F32, (n,))
    outputs = (
        ("finite", make(Op.IS_FINITE, x)),
        ("product_finite", make(Op.IS_FINITE, mul(x, y))),  # inf made inside the kernel
    )
    return Function("is_finite", (x, y), outputs)


@pytest.fixture(scope="module")
def devices(cpu: CpuPath) -> dict[str, object]:
    return {"cpu": CpuDevice(cpu), "webgpu": WgpuDevice()}


@pytest.mark.parametrize("device", ["cpu", "webgpu"])
def test_is_finite_matches_numpy_on_special_values(devices: dict[str, object], device: str) -> None:
    x = special_values()
    y = np.where(np.arange(len(x)) % 2 == 0, np.float32(4.0), np.float32(0.5))
    fn = is_finite_function(len(x))
    with np.errstate(all="ignore"):
        want = run(fn, {"x": x.astype(np.float64), "y": y.astype(np.float64)}, np.float32)
    got = run_on(devices[device], fn, {"x": x, "y": y})
    for name, _ in fn.outputs:
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)
    assert not got["finite"][:6].any() and got["finite"][6:15].all()  # inf, -inf, NaNs; finite extremes
    assert not got["product_finite"][6]  # the largest finite float32 times 4 overflows
