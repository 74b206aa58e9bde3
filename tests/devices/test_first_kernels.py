"""The first kernels on every device against numpy: add (bit-exact, IEEE add is exactly
rounded) and sum (CPU path, fixed block order; within float32 tolerance of float64)."""

from __future__ import annotations

import hashlib
import struct

import numpy as np
import pytest

from scellis.runtime.cpu import CpuPath
from scellis.runtime.selfcheck import CHECK_LENGTH, check_inputs, first_kernels

SIZES = [1, 3, 4, 7, 8, 9, 4095, 4096, 4097, CHECK_LENGTH, 100_003]


def randn(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(n).astype(np.float32)


@pytest.mark.parametrize("n", SIZES)
def test_cpu_add_is_bit_exact(cpu: CpuPath, n: int) -> None:
    a, b = randn(n, 1), randn(n, 2)
    got = np.frombuffer(cpu.add_f32(a.tobytes(), b.tobytes()), dtype="<f4")
    np.testing.assert_array_equal(got, a + b)


@pytest.mark.parametrize("n", [0, *SIZES])
def test_cpu_sum_matches_float64_reference(cpu: CpuPath, n: int) -> None:
    x = randn(n, 5)
    got = struct.unpack("<f", cpu.sum_f32(x.tobytes()))[0]
    exact = float(np.sum(x.astype(np.float64)))
    # Declared tolerance: float32 summation error bound, n * eps32 * sum|x|.
    assert abs(got - exact) <= max(n, 1) * np.finfo(np.float32).eps * float(np.sum(np.abs(x), dtype=np.float64))


def test_cpu_sum_follows_the_documented_order(cpu: CpuPath) -> None:
    """Lanes i mod 8 inside 4096-blocks, combined pairwise, blocks left to right: replayed in numpy."""
    x = randn(2 * 4096 + 13, 6)
    total = np.float32(0)
    for start in range(0, len(x), 4096):
        block = x[start : start + 4096]
        lane = np.zeros(8, dtype=np.float32)
        for i, v in enumerate(block):
            lane[i % 8] = np.float32(lane[i % 8] + v)
        l0, l1, l2, l3, l4, l5, l6, l7 = lane
        total = np.float32(total + (((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7))))
    assert cpu.sum_f32(x.tobytes()) == np.float32(total).tobytes()


def test_cpu_sum_blocks_split_across_calls_give_the_same_bytes(cpu: CpuPath) -> None:
    """Workers taking ranges of blocks must not change the result."""
    x = randn(5 * 4096 + 1, 7).tobytes()
    inst, n = cpu.instance, len(x) // 4
    px, pp, po = cpu._place([len(x), 6 * 4, 4])
    inst.write(px, x)
    inst.call("sc_sum_blocks_f32", px, n, pp, 3, 6)
    inst.call("sc_sum_blocks_f32", px, n, pp, 0, 3)
    inst.call("sc_sum_partials_f32", pp, 6, po)
    assert inst.read(po, 4) == cpu.sum_f32(x)


def test_cpu_kernels_reject_bad_operands(cpu: CpuPath) -> None:
    with pytest.raises(ValueError, match="equal length, got 8 and 4 bytes"):
        cpu.add_f32(b"\0" * 8, b"\0" * 4)
    with pytest.raises(ValueError, match="float32 array, got 6 bytes"):
        cpu.sum_f32(b"\0" * 6)


def test_memory_grows_for_large_operands(cpu: CpuPath) -> None:
    n = 3 * 1024 * 1024  # 12 MiB per operand: beyond the module's initial memory
    a = np.ones(n, dtype=np.float32)
    assert cpu.add_f32(a.tobytes(), a.tobytes()) == (a + a).tobytes()
    assert cpu.instance.memory_size() >= 3 * 4 * n


def test_self_check_matches_numpy_and_is_stable(cpu: CpuPath) -> None:
    a = np.frombuffer(check_inputs(CHECK_LENGTH, 1), dtype="<f4")
    b = np.frombuffer(check_inputs(CHECK_LENGTH, 2), dtype="<f4")
    first = first_kernels(cpu)
    assert first["add_sha256"] == hashlib.sha256((a + b).tobytes()).hexdigest()
    assert abs(first["sum"] - float(a.astype(np.float64).sum())) < 1e-3
    assert first_kernels(cpu) == first
    assert a.min() >= -1 and a.max() < 1 and len(set(a.tolist())) > CHECK_LENGTH * 0.99


def test_reserved_memory_starts_zeroed_after_scratch_use(cpu: CpuPath) -> None:
    """Scratch placements (add_f32's operands) write past the reserved regions; a later reservation (a
    compiled schedule's buffers: optimizer state must start at zero) is zeroed all the same."""
    ones = np.ones(1000, np.float32).tobytes()
    cpu.add_f32(ones, ones)
    offset = cpu.reserve(3 * len(ones))
    assert cpu.instance.read(offset, 3 * len(ones)) == bytes(3 * len(ones))
