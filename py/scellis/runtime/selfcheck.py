"""Stage: execution. The start-up self-check: the engine's own path (ops, lowering, codegen, a device's
compiled step) on a schedule of two kernels, a matmul with a fused tanh and then a sum, at debug. Each
device checked is compared with a float64 evaluation in pure Python (numpy is not there in the
browser) within the kernels' declared tolerances, and its output bytes are summarised by their SHA-256.

The inputs come from a fixed integer recipe in pure Python, so CPython (wasmtime, wgpu-py) and the
browser (Pyodide, the page's WebAssembly) feed the devices the same bytes. At debug the CPU path is
bit-exact everywhere, so its output hash is the same in both environments (e2e/test_shell.py checks it).
"""

from __future__ import annotations

import hashlib
import math
import struct
from typing import Any

from scellis.ir import Function
from scellis.levels import Level
from scellis.lower import Schedule
from scellis.lower.variants import tolerance
from scellis.ops import DType, Op, make
from scellis.ops import defs as d
from scellis.ops.node import input_node
from scellis.plan import lowered
from scellis.runtime.device import CompiledStep, Device

M, K, N = 16, 37, 9  # y = tanh(x @ w) is M x N, each element a sum of K products
LEVEL = Level.DEBUG
OUTPUTS = ("y", "total")


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


def check_function() -> Function:
    """y = tanh(x @ w) and total = the sum of y: lowered, a matmul with the tanh as its epilogue, then a
    reduction."""
    x = input_node("x", d.Role.DATA, DType.F32, (M, K))
    w = input_node("w", d.Role.DATA, DType.F32, (K, N))
    y = make(Op.TANH, make(Op.MATMUL, x, w, arg=d.MatmulArg()))
    total = make(Op.SUM, y, arg=d.ReduceArg((0, 1), False))
    return Function("self-check", (x, w), (("y", y), ("total", total)))


async def compiled_check(device: Device) -> tuple[Schedule, CompiledStep]:
    """The check's schedule and its step compiled on `device`: the one place that lowers and compiles."""
    done = lowered(check_function(), LEVEL)
    return done.schedule, await device.compile(done)


def reference(x: bytes, w: bytes) -> dict[str, list[float]]:
    """The check's outputs in float64, from the float32 inputs' exact values."""
    xs, ws = struct.unpack(f"<{M * K}f", x), struct.unpack(f"<{K * N}f", w)
    y = [math.tanh(math.fsum(xs[i * K + k] * ws[k * N + j] for k in range(K))) for i in range(M) for j in range(N)]
    return {"y": y, "total": [math.fsum(y)]}


async def self_check(device: Device) -> dict[str, Any]:
    """Run the check on `device`: per output, the kernel that writes it, its error (max |device -
    reference| / max(1, max |reference|)) and the kernel's declared tolerance; the SHA-256 of the inputs
    and of the output bytes (y's, then total's); `ok` when every output is within its tolerance."""
    x, w = check_inputs(M * K, 1), check_inputs(K * N, 2)
    schedule, step = await compiled_check(device)
    got = await step.step({"x": x, "w": w}, list(OUTPUTS))
    want = reference(x, w)
    checks = []
    for name, buffer in schedule.outputs:
        kernel = [k for k in schedule.kernels if any(v.buffer == buffer for v in k.writes)][-1]
        values = struct.unpack(f"<{len(want[name])}f", got[name][: 4 * len(want[name])])
        scale = max(1.0, *(abs(v) for v in want[name]))
        diffs = [abs(a - b) for a, b in zip(values, want[name], strict=True)]
        error = math.inf if any(math.isnan(e) for e in diffs) else max(diffs) / scale
        bound = tolerance(kernel)
        label = kernel.kind.value if kernel.variant == "default" else f"{kernel.kind.value} [{kernel.variant}]"
        checks.append({"output": name, "kernel": label, "error": error, "tolerance": bound, "ok": error <= bound})
    return {
        "device": device.name,
        "level": LEVEL.value,
        "kernels": [c["kernel"] for c in checks],
        "inputs_sha256": hashlib.sha256(x + w).hexdigest(),
        "outputs_sha256": hashlib.sha256(b"".join(got[name] for name in OUTPUTS)).hexdigest(),
        "total": struct.unpack("<f", got["total"][:4])[0],
        "checks": checks,
        "ok": all(c["ok"] for c in checks),
    }
