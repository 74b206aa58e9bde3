"""Philox4x32-10 is bit-identical in its three implementations: pure Python (scellis.rng), WGSL (the
RANDOM kernel's function, on lavapipe) and C (scellis_cpu.wasm under wasmtime). Random123's known-answer
vectors on each, then 1,000,000 uniform draws of the RANDOM op compared by hash on every device."""

from __future__ import annotations

import asyncio
import hashlib
import struct

import pytest
import wgpu

from scellis.codegen.wgsl_random import philox
from scellis.examples import random_draws
from scellis.levels import Level
from scellis.plan import lowered
from scellis.rng import philox4x32, uniform_bytes
from scellis.runtime.cpu.device import CpuDevice
from scellis.runtime.cpu.module import CpuPath
from scellis.runtime.reference.device import ReferenceDevice
from scellis.runtime.webgpu.native import WgpuDevice

# Random123 kat_vectors for philox4x32_10: (counter, key, result)
KAT = [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((0xFFFFFFFF,) * 4, (0xFFFFFFFF,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    (
        (0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344),
        (0xA4093822, 0x299F31D0),
        (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1),
    ),
]
DRAWS = 1_000_000


def test_kat_in_python() -> None:
    for counter, key, result in KAT:
        assert philox4x32(counter, key) == result


def test_kat_in_c_under_wasmtime() -> None:
    cpu = asyncio.run(CpuPath.open())
    counters = b"".join(struct.pack("<4I", *c) for c, _, _ in KAT)
    keys = b"".join(struct.pack("<2I", *k) for _, k, _ in KAT)
    pc, pk, po = cpu._place([len(counters), len(keys), len(counters)])
    cpu.instance.write(pc, counters)
    cpu.instance.write(pk, keys)
    cpu.instance.call("sc_philox_batch", pc, pk, po, 0, len(KAT))
    out = struct.unpack(f"<{4 * len(KAT)}I", cpu.instance.read(po, len(counters)))
    assert [out[4 * i : 4 * i + 4] for i in range(len(KAT))] == [r for _, _, r in KAT]


def test_kat_in_wgsl_on_lavapipe() -> None:
    device = WgpuDevice().device
    source = (
        philox()
        + """
@group(0) @binding(0) var<storage, read> counters: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read> keys: array<vec2<u32>>;
@group(0) @binding(2) var<storage, read_write> out: array<vec4<u32>>;
@compute @workgroup_size(1)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
  out[gid.x] = sc_philox(counters[gid.x], keys[gid.x]);
}
"""
    )
    usage = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST
    counters = device.create_buffer_with_data(data=b"".join(struct.pack("<4I", *c) for c, _, _ in KAT), usage=usage)
    keys = device.create_buffer_with_data(data=b"".join(struct.pack("<2I", *k) for _, k, _ in KAT), usage=usage)
    out = device.create_buffer(size=16 * len(KAT), usage=usage)
    pipeline = device.create_compute_pipeline(
        layout="auto", compute={"module": device.create_shader_module(code=source), "entry_point": "main"}
    )
    entries = [{"binding": i, "resource": {"buffer": b}} for i, b in enumerate((counters, keys, out))]
    bind = device.create_bind_group(layout=pipeline.get_bind_group_layout(0), entries=entries)
    encoder = device.create_command_encoder()
    compute = encoder.begin_compute_pass()
    compute.set_pipeline(pipeline)
    compute.set_bind_group(0, bind)
    compute.dispatch_workgroups(len(KAT))
    compute.end()
    device.queue.submit([encoder.finish()])
    words = struct.unpack(f"<{4 * len(KAT)}I", bytes(device.queue.read_buffer(out)))
    assert [words[4 * i : 4 * i + 4] for i in range(len(KAT))] == [r for _, _, r in KAT]


def draw_hash(device: object) -> str:
    compiled = asyncio.run(device.compile(lowered(random_draws(DRAWS), Level.PROD)))  # type: ignore[attr-defined]
    compiled.write("rng.test", struct.pack("<2I", 0x01234567, 0x89ABCDEF))
    compiled.run()
    return hashlib.sha256(compiled.read("u")).hexdigest()


def python_hash() -> str:
    return hashlib.sha256(uniform_bytes(DRAWS, 3, 11, (0x01234567, 0x89ABCDEF))).hexdigest()


@pytest.fixture(scope="module")
def expected_hash() -> str:
    return python_hash()


def test_million_draws_equal_on_every_device(expected_hash: str) -> None:
    assert draw_hash(ReferenceDevice()) == expected_hash
    assert draw_hash(asyncio.run(CpuDevice.open())) == expected_hash
    assert draw_hash(WgpuDevice()) == expected_hash
