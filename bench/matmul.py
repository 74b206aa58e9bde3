"""Float32 matmul throughput: the kernels each level's plan picks, the engine's other matmul variants and a
sweep of pipelined blockings (codegen/wgsl_matmul.py), next to torch (CUDA, TF32 off) in the same run.

    .venv/bin/python bench/matmul.py --shapes 256x256x256,260x132x72 --repeat 1 --rounds 1   (lavapipe)
    python3 bench/matmul.py --torch --sweep                                                   (the lent H200)

A shape is MxNxK: an M x K by K x N product, 2 M N K flops. Each timing runs --repeat products in one
submission (by default about 20 ms of them); every round times every entry once, interleaved, and the
table gives the median TFLOP/s and the ratio to torch. Each entry's product is checked against the float64
reference with its variant's declared tolerance, and its bytes hashed after the first product and after
the last: entries with one hash compute the same bits, and a hash that stays is a run-to-run repeat.

Sweep entries are generated here from a `Blocking`, bypassing the plan, on a device asking for the
adapter's largest workgroup memory (the plan's variants keep to WebGPU's default 16 KiB); `+trusted`
makes the shader module without wgpu's runtime checks (loop bounding, bounds checks), `+checked` bounds-
checks an interior shape anyway, `+noload` stages the first K slices' registers over and over (no loads
after them), `+nofetch` multiplies the first slices over and over (no loads, no staging): ceilings, their
results not checked.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import hashlib
import re
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "py"))

from scellis.codegen import wgsl_matmul as wm
from scellis.ir import Function
from scellis.levels import Level
from scellis.lower import lower, variants
from scellis.ops import DType, Op, make
from scellis.ops import defs as d
from scellis.ops.node import input_node
from scellis.plan import planned

SHAPES = "4096x4096x4096,2048x2048x2048,1024x1024x1024,1024x4096x4096"
B = wm.Blocking
SWEEP: dict[str, tuple[wm.Blocking, str]] = {
    "128x128 d8 quads +trusted": (B(along_k="quads"), "trusted"),
    "128x128 d8 quads +noload": (B(along_k="quads"), "noload"),
    "128x128 d8 quads +nofetch": (B(along_k="quads"), "nofetch"),
    "128x128 d8 early quads": (B(along_k="quads", early=True), ""),
    "128x128 d8 early rows": (B(early=True), ""),
    "128x128 d8 early quads +trusted": (B(along_k="quads", early=True), "trusted"),
    "128x128 d16 early quads (32K)": (B(depth=16, along_k="quads", early=True), ""),
    "64x128 d16 1-stage": (B(rows=4, depth=16, stages=1), ""),
}


@dataclasses.dataclass
class Entry:
    label: str
    run: Callable[[int], None]  # queue this many products
    sync: Callable[[], None]
    read: Callable[[], np.ndarray] | None  # the product, or None where it is not checked
    tolerance: float = 0.0
    hashes: list[str] = dataclasses.field(default_factory=list)
    error: float = float("nan")


def matmul_function(m: int, n: int, k: int) -> Function:
    a = input_node("a", d.Role.DATA, DType.F32, (m, k))
    b = input_node("b", d.Role.DATA, DType.F32, (k, n))
    return Function("matmul", (a, b), (("c", make(Op.MATMUL, a, b, arg=d.MatmulArg())),))


def wgpu_run(device: Any, steps: list[tuple[Any, Any, tuple[int, int, int]]]) -> Callable[[int], None]:
    def run(repeat: int) -> None:
        encoder = device.create_command_encoder()
        compute = encoder.begin_compute_pass()
        for _ in range(repeat):
            for pipeline, bind, groups in steps:
                compute.set_pipeline(pipeline)
                compute.set_bind_group(0, bind)
                compute.dispatch_workgroups(*groups)
        compute.end()
        device.queue.submit([encoder.finish()])

    return run


def wgpu_sync(wgpu: Any, device: Any) -> Callable[[], None]:
    tiny = device.create_buffer(size=4, usage=wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST)
    return lambda: device.queue.read_buffer(tiny)  # waits for the queue, copies 4 bytes


def engine_entries(
    shape: tuple[int, int, int], a: np.ndarray, b: np.ndarray, levels: list[str], forced: list[str]
) -> list[Entry]:
    """The plan's pick at each level, then each of the engine's variants forced, through lower/plan/compile."""
    from scellis.runtime.webgpu.native import WgpuDevice

    gpu = WgpuDevice()
    sync = wgpu_sync(gpu.wgpu, gpu.device)
    fn = matmul_function(*shape)
    schedules = []
    for name in levels:
        schedule = lower(fn, Level(name), gpu.features)
        schedules.append((f"{name} (plan: {schedule.kernels[0].variant})", schedule))
    for variant in forced:
        if variant.endswith("f16") and "shader-f16" not in gpu.features:
            continue
        schedule = lower(fn, Level.FAST if variant.endswith("f16") else Level.PROD, gpu.features)
        forced = dataclasses.replace(schedule, kernels=tuple(k.with_variant(variant) for k in schedule.kernels))
        schedules.append((variant, forced))
    entries = []
    for label, schedule in schedules:
        compiled = asyncio.run(gpu.compile(planned(schedule)))
        compiled.write("a", a.tobytes())
        compiled.write("b", b.tobytes())

        def read(compiled: Any = compiled) -> np.ndarray:
            return np.frombuffer(compiled.read("c"), "<f4")[: shape[0] * shape[1]].reshape(shape[:2])

        tolerance = variants.tolerance(schedule.kernels[0])
        entries.append(Entry(label, wgpu_run(gpu.device, compiled.steps), sync, read, tolerance))
    return entries


def raw_device() -> Any:
    """A Vulkan device asking for the adapter's largest buffers and workgroup memory."""
    import wgpu

    adapter = next(a for a in wgpu.gpu.enumerate_adapters_sync() if a.info["backend_type"] == "Vulkan")
    keys = ("max-buffer-size", "max-storage-buffer-binding-size", "max-compute-workgroup-storage-size")
    print(f"adapter: {adapter.info['device']} ({adapter.info['backend_type']}, {adapter.info['description']})")
    print(f"  subgroup features: {sorted(f for f in adapter.features if 'subgroup' in f) or 'none'}")
    print(f"  limits: { {k: adapter.limits[k] for k in keys} }", flush=True)
    return adapter.request_device_sync(required_limits={k: adapter.limits[k] for k in keys})


def trusted_module(device: Any, code: str) -> Any:
    """A shader module made with no runtime checks (wgpu-native's wgpuDeviceCreateShaderModuleTrusted)."""
    from wgpu.backends.wgpu_native import _api

    source = _api.new_struct_p("WGPUShaderSourceWGSL *", code=_api.to_c_string_view(code))
    source[0].chain.next = _api.ffi.NULL
    source[0].chain.sType = _api.lib.WGPUSType_ShaderSourceWGSL
    chained = _api.ffi.cast("WGPUChainedStruct *", source)
    descriptor = _api.new_struct_p("WGPUShaderModuleDescriptor *", nextInChain=chained, label=_api.to_c_string_view(""))
    handle = _api.lib.wgpuDeviceCreateShaderModuleTrusted(device._internal, descriptor, 0)
    return _api.GPUShaderModule("trusted", handle, device)


def raw_source(blocking: wm.Blocking, shape: tuple[int, int, int], option: str) -> str:
    m, n, k = shape
    a = wm.Operand(lambda i: f"in0[{i}]", "a_base", k, 1, m, along_k=True)
    b = wm.Operand(lambda i: f"in1[{i}]", "b_base", 1, n, n, along_k=False)

    def stores(cells: wm.Cells) -> list[str]:
        out = []
        for acc, row, col in cells:
            out += ["{", f"  let row = row0 + {row};", f"  let col = col0 + {col};"]
            out += [f"  if (row < {m}u && col < {n}u) {{", f"    out[row * {n}u + col] = {acc};", "  }", "}"]
        return out

    values = {"A_BASE": "0u", "B_BASE": "0u", "DECODE": ""}
    checked = True if option == "checked" else None
    source = wm.pipelined(blocking, shape, (a, b), values, stores, checked=checked)
    if option in ("nofetch", "noload"):  # after the first slices: no loads (noload), no staging either (nofetch)
        head, loop = source.split("for (var k0", 1)
        left_out = r"\s*(p[ab]\d+ = in|tile_[ab]\[\d\]\[.*\] = )" if option == "nofetch" else r"\s*p[ab]\d+ = in"
        kept = [line for line in loop.split("\n") if not re.match(left_out, line)]
        source = head + "for (var k0" + "\n".join(kept)
    header = [f"@group(0) @binding({i}) var<storage, read> in{i}: array<vec4<f32>>;" for i in range(2)]
    return "\n".join([*header, "@group(0) @binding(2) var<storage, read_write> out: array<f32>;", source])


def sweep_entries(
    device: Any, shape: tuple[int, int, int], a: np.ndarray, b: np.ndarray, names: list[str]
) -> list[Entry]:
    import wgpu

    m, n, k = shape
    usage = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST
    ins = [device.create_buffer_with_data(data=x.tobytes(), usage=usage) for x in (a, b)]
    sync = wgpu_sync(wgpu, device)
    limit = device.limits["max-compute-workgroup-storage-size"]
    entries = []
    for name in names:
        blocking, option = SWEEP[name]
        if blocking.workgroup_bytes() > limit or (not wm.interior(blocking, *shape) and option == "checked"):
            continue
        source = raw_source(blocking, shape, option)
        module = trusted_module(device, source) if option == "trusted" else device.create_shader_module(code=source)
        pipeline = device.create_compute_pipeline(layout="auto", compute={"module": module, "entry_point": "main"})
        out = device.create_buffer(size=4 * m * n, usage=usage)
        entries_ = [{"binding": i, "resource": {"buffer": x}} for i, x in enumerate((*ins, out))]
        bind = device.create_bind_group(layout=pipeline.get_bind_group_layout(0), entries=entries_)
        tile_m, tile_n = blocking.tile
        groups = (-(-n // tile_n), -(-m // tile_m), 1)

        def read(out: Any = out) -> np.ndarray:
            return np.frombuffer(device.queue.read_buffer(out), "<f4").reshape(m, n)

        check = None if option in ("nofetch", "noload") else read
        tolerance = variants.TOLERANCE["tile128-pipe"] * np.sqrt(k)
        entries.append(Entry(name, wgpu_run(device, [(pipeline, bind, groups)]), sync, check, tolerance))
    return entries


def torch_entry(a: np.ndarray, b: np.ndarray) -> Entry:
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    ta, tb = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
    tc = torch.empty(a.shape[0], b.shape[1], device="cuda")

    def run(repeat: int) -> None:
        for _ in range(repeat):
            torch.matmul(ta, tb, out=tc)

    label = f"torch {torch.__version__} fp32, TF32 off"
    return Entry(label, run, torch.cuda.synchronize, lambda: tc.cpu().numpy(), variants.TOLERANCE["tile128"])


def measure(
    entries: list[Entry], shape: tuple[int, int, int], want: np.ndarray, repeat: int, rounds: int
) -> dict[str, float]:
    """Median TFLOP/s of each entry over interleaved rounds (each round in a fresh random order); checks
    each entry's product against `want` and hashes it."""
    m, n, k = shape
    rng = np.random.default_rng(0)
    scale = max(1.0, float(np.max(np.abs(want))))
    for entry in entries:
        entry.run(1)
        entry.sync()
        if entry.read is not None:
            got = entry.read()
            entry.error = float(np.max(np.abs(got.astype(np.float64) - want))) / scale
            entry.hashes.append(hashlib.sha256(got.tobytes()).hexdigest()[:12])
    times: dict[str, list[float]] = {e.label: [] for e in entries}
    for _ in range(rounds):
        for entry in rng.permutation(len(entries)):
            e = entries[entry]
            start = time.perf_counter()
            e.run(repeat)
            e.sync()
            times[e.label].append(time.perf_counter() - start)
    for entry in entries:
        if entry.read is not None:
            entry.hashes.append(hashlib.sha256(entry.read().tobytes()).hexdigest()[:12])
    return {label: 2 * m * n * k * repeat / statistics.median(t) / 1e12 for label, t in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shapes", default=SHAPES)
    parser.add_argument("--levels", default="prod,debug,fast")
    parser.add_argument("--engine", default=",".join(wm.BLOCKINGS), help="variants forced through the engine")
    parser.add_argument("--sweep", nargs="?", const=",".join(SWEEP), default="", help="sweep entries (all if bare)")
    parser.add_argument("--torch", action="store_true")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--repeat", type=int, default=0, help="products a timing (0: about 20 ms at 40 TFLOP/s)")
    args = parser.parse_args()
    shapes = [tuple(int(x) for x in s.split("x")) for s in args.shapes.split(",")]
    device = raw_device() if args.sweep else None
    table: dict[str, dict[str, float]] = {}
    notes: list[str] = []
    for shape in shapes:
        m, n, k = shape
        key = f"{m}x{n}x{k}"
        rng = np.random.default_rng(1)
        a, b = (rng.standard_normal(s).astype(np.float32) for s in ((m, k), (k, n)))
        levels, forced = (args.levels.split(",") if args.levels else []), args.engine.split(",") if args.engine else []
        entries = engine_entries(shape, a, b, levels, forced)
        if device is not None:
            entries += sweep_entries(device, shape, a, b, args.sweep.split(","))
        if args.torch:
            entries.append(torch_entry(a, b))
        want = a.astype(np.float64) @ b.astype(np.float64)
        repeat = args.repeat or max(2, round(0.02 * 40e12 / (2 * m * n * k)))
        for label, tflops in measure(entries, shape, want, repeat, args.rounds).items():
            table.setdefault(label, {})[key] = tflops
        for e in entries:
            ok = "ok" if e.read is None or e.error <= e.tolerance else "FAILS"
            notes.append(f"{key} {e.label}: error {e.error:.2e} (declared {e.tolerance:.1e}) {ok}, bits {e.hashes}")
            print(f"{key} {e.label}: {table[e.label][key]:.2f} TFLOP/s", file=sys.stderr, flush=True)
    print("\n".join(notes))
    report(table, [f"{m}x{n}x{k}" for m, n, k in shapes], args.rounds)


def report(table: dict[str, dict[str, float]], keys: list[str], rounds: int) -> None:
    print(f"\nfloat32 matmul MxNxK, TFLOP/s, median of {rounds} interleaved rounds; (ratio to torch)\n")
    print("| entry | " + " | ".join(keys) + " |")
    print("| --- " * (len(keys) + 1) + "|")
    peer = next((row for label, row in table.items() if label.startswith("torch")), None)
    for label, row in table.items():
        cells = []
        for key in keys:
            value = row.get(key)
            ratio = f" ({value / peer[key]:.2f})" if peer and value is not None and key in peer else ""
            cells.append("-" if value is None else f"{value:.1f}{ratio}")
        print(f"| {label} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
