"""Helpers for the CPU path's schedule tests: build IR functions, run them on the CPU path (lower, then
compile_schedule) and on the float64 reference, and compare with a declared tolerance."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from scellis.ir.function import Function, input_name, toposort
from scellis.levels import Level
from scellis.lower import Schedule, lower
from scellis.ops import DType, Node, Op
from scellis.ops.defs import Role
from scellis.ops.node import input_node
from scellis.plan import planned
from scellis.runtime.cpu.device import compile_schedule
from scellis.runtime.cpu.module import CpuPath
from scellis.runtime.reference.oracle import run

# How each dtype sits in device memory: 4 bytes, bools as u32 0/1.
DEVICE = {DType.F32: np.float32, DType.I32: np.int32, DType.U32: np.uint32, DType.BOOL: np.uint32}


def inp(name: str, shape: tuple[int, ...], dtype: DType = DType.F32, role: Role = Role.DATA) -> Node:
    return input_node(name, role, dtype, shape)


def function(outputs: Mapping[str, Node]) -> Function:
    """A function of every input the outputs reach, in name order."""
    found = {id(n): n for n in toposort(list(outputs.values())) if n.op is Op.INPUT}
    inputs = tuple(sorted(found.values(), key=input_name))
    return Function("test", inputs, tuple(outputs.items()))


def to_device(value: np.ndarray, dtype: DType) -> bytes:
    return np.ascontiguousarray(value).astype(DEVICE[dtype]).tobytes()


def from_device(data: bytes, node: Node) -> np.ndarray:
    array = np.frombuffer(data, dtype=DEVICE[node.dtype]).reshape(node.shape)
    return array.astype(bool) if node.dtype is DType.BOOL else array


def run_cpu(cpu: CpuPath, fn: Function, inputs: Mapping[str, np.ndarray], schedule: Schedule | None = None) -> dict:
    compiled = compile_schedule(cpu, planned(schedule or lower(fn, Level.PROD)))
    for node in fn.inputs:
        compiled.write(input_name(node), to_device(inputs[input_name(node)], node.dtype))
    compiled.run()
    return {name: from_device(compiled.read(name), node) for name, node in fn.outputs}


def assert_close(got: np.ndarray, ref: np.ndarray, rtol: float, atol: float = 0.0, what: str = "") -> None:
    """|got - ref| <= atol + rtol |ref| elementwise (float64 reference; atol at least float32's smallest
    subnormal, below which float32 cannot follow); NaN and infinities must match exactly; integer and
    bool results must be equal."""
    assert got.shape == ref.shape, f"{what}: shape {got.shape} != {ref.shape}"
    if got.dtype.kind != "f":
        np.testing.assert_array_equal(got, ref, err_msg=what)
        return
    ref32 = ref.astype(np.float32).astype(np.float64)  # where float32 overflows, the device must too
    got64 = got.astype(np.float64)
    np.testing.assert_array_equal(np.isnan(got64), np.isnan(ref32), err_msg=f"{what}: NaN positions differ")
    finite = np.isfinite(ref32) & np.isfinite(got64)
    np.testing.assert_array_equal(got64[~finite & ~np.isnan(ref32)], ref32[~finite & ~np.isnan(ref32)], err_msg=what)
    err = np.abs(got64[finite] - ref[finite])
    bound = max(atol, float(np.finfo(np.float32).smallest_subnormal)) + rtol * np.abs(ref[finite])
    worst = int(np.argmax(err - bound)) if err.size else 0
    assert np.all(err <= bound), f"{what}: error {err[worst]:.3g} > bound {bound[worst]:.3g} at flat {worst}"


def check(
    cpu: CpuPath, outputs: Mapping[str, Node], inputs: Mapping[str, np.ndarray], rtol: float, atol: float = 0.0
) -> dict[str, np.ndarray]:
    """Run on both devices and compare every output; returns the CPU path's results."""
    fn = function(outputs)
    got = run_cpu(cpu, fn, inputs)
    ref = run(fn, inputs)
    for name in got:
        assert_close(got[name], ref[name], rtol, atol, what=name)
    return got
