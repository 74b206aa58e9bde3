"""The pipelined matmul tiles' generator (codegen/wgsl_matmul.py) without a device: the plan's table of
them agrees with the generator's, each fits WebGPU's default workgroup memory, the written-out schedule
of K slices multiplies every slice once, in order, from the tile it was staged into with the barriers it
needs, and only ragged shapes are bounds-checked."""

from __future__ import annotations

import re

import pytest

from scellis.codegen import wgsl_matmul as wm
from scellis.lower import variants


def test_the_plan_and_the_generator_name_the_same_tiles() -> None:
    assert dict(variants.PIPELINED) == {name: blocking.tile for name, blocking in wm.BLOCKINGS.items()}
    assert all(name in variants.TOLERANCE for name in wm.BLOCKINGS)
    assert all(blocking.workgroup_bytes() <= 16384 for blocking in wm.BLOCKINGS.values())


def source(blocking: wm.Blocking, m: int, n: int, k: int) -> str:
    a = wm.Operand(lambda i: f"a[{i}]", "a_base", k, 1, m, along_k=True)
    b = wm.Operand(lambda i: f"b[{i}]", "b_base", 1, n, n, along_k=False)
    values = {"A_BASE": "0u", "B_BASE": "0u", "DECODE": ""}
    return wm.pipelined(blocking, (m, n, k), (a, b), values, lambda cells: [])


def run_schedule(text: str) -> list[tuple[str, int]]:
    """What the kernel `text` does, in order, its loop unrolled: (fetch, first K of the slice), (stage,
    tile), (multiply, tile) for a slice's first step of K, (barrier, 0)."""
    head, rest = text.split("  for (var k0 = 0u; k0 < ", 1)
    bound, rest = rest.split("u; k0 = k0 + ", 1)
    stride, rest = rest.split("u) {\n", 1)
    body, after = rest.split("\n  }\n", 1)
    parts = [(head.split("var k1 = 0u;")[1], 0)]
    parts += [(body, k0) for k0 in range(0, int(bound), int(stride))] + [(after, 0)]
    out, k1 = [], 0
    for part, k0 in parts:
        for line in (line.strip() for line in part.split("\n")):
            if line.startswith("k1 = "):
                k1 = eval(line[5:].strip(";").replace("u", ""), {"k0": k0})
            elif line.startswith("pa0 = a["):
                out.append(("fetch", k1))
            elif stage := re.match(r"tile_a\[(\d)\]\[.*\] = pa0", line):
                out.append(("stage", int(stage[1])))
            elif multiply := re.match(r"let a0 = tile_a\[(\d)\]\[0\]", line):
                out.append(("multiply", int(multiply[1])))
            elif line == "workgroupBarrier();":
                out.append(("barrier", 0))
    return out


BLOCKINGS = [wm.Blocking(stages=1), wm.Blocking(), wm.Blocking(early=True), *wm.BLOCKINGS.values()]


@pytest.mark.parametrize("blocking", BLOCKINGS, ids=str)
@pytest.mark.parametrize("k", [4, 8, 9, 16, 24, 32, 40, 64])
def test_every_slice_is_multiplied_once_in_order_after_a_barrier(blocking: wm.Blocking, k: int) -> None:
    """Run the written-out schedule: each slice is fetched once, in order; staged into a tile no thread
    has read since the last barrier; multiplied from it, after a barrier, once, in order."""
    depth, epoch, fetched, regs = blocking.depth, 0, [], -1
    tiles: dict[int, tuple[int, int]] = {}
    read = dict.fromkeys(range(blocking.stages), -1)
    multiplied = []
    for kind, value in run_schedule(source(blocking, 128, 128, k)):
        if kind == "fetch":
            fetched.append(value)
            regs = value // depth
        elif kind == "stage":
            assert read[value] < epoch, "a tile overwritten before every thread has read it"
            tiles[value] = (regs, epoch)
        elif kind == "multiply":
            slice_, staged = tiles[value]
            assert staged < epoch, "a tile read before the barrier after its staging"
            multiplied.append(slice_)
            read[value] = epoch
        else:
            epoch += 1
    slices = -(-k // depth)
    assert fetched == [depth * s for s in range(slices)]
    assert multiplied == list(range(slices))


def test_only_ragged_shapes_are_bounds_checked() -> None:
    blocking = wm.Blocking()
    assert "if (" not in source(blocking, 256, 128, 64)  # an interior shape (its stores are left out here)
    assert "k1 + 4u * ak0 < 60u" in source(blocking, 256, 128, 60)
    assert "row0 + as0 < 200u" in source(blocking, 200, 128, 64)
