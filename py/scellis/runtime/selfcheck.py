"""The CPU path's first kernels on fixed inputs, summarised by hashes.

The inputs come from a fixed integer recipe in pure Python, so CPython (wasmtime) and the
browser (Pyodide + the page's WebAssembly) feed the module the same bytes; equal output
hashes show the two environments compute the same bytes.
"""

from __future__ import annotations

import hashlib
import struct

from scellis.runtime.cpu.module import CpuPath

# Three full sum blocks and a ragged tail: exercises the SIMD body and the scalar tail.
CHECK_LENGTH = 3 * 4096 + 7


def check_inputs(n: int, stream: int) -> bytes:
    """n float32 values in [-1, 1), exactly representable, from a 32-bit integer mix of (stream, i)."""
    values = []
    for i in range(n):
        h = (i * 0x9E3779B1 + stream * 0x85EBCA77 + 0x165667B1) & 0xFFFFFFFF
        h ^= h >> 15
        h = (h * 0x2C1B3C6D) & 0xFFFFFFFF
        h ^= h >> 12
        h = (h * 0x297A2D39) & 0xFFFFFFFF
        h ^= h >> 15
        values.append((h >> 8) * 2.0**-23 - 1.0)
    return struct.pack(f"<{n}f", *values)


def first_kernels(cpu: CpuPath, n: int = CHECK_LENGTH) -> dict:
    """Run add and sum on the fixed inputs; the output bytes' SHA-256 and the sum's value."""
    a, b = check_inputs(n, 1), check_inputs(n, 2)
    added = cpu.add_f32(a, b)
    total = cpu.sum_f32(a)
    return {
        "host": cpu.host,
        "n": n,
        "inputs_sha256": hashlib.sha256(a + b).hexdigest(),
        "add_sha256": hashlib.sha256(added).hexdigest(),
        "sum_sha256": hashlib.sha256(total).hexdigest(),
        "sum": struct.unpack("<f", total)[0],
    }
