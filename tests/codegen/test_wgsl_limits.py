"""Every generated kernel stays within WebGPU's default limits (what Chromium grants without asking):
16 KiB of workgroup memory, 256 invocations per workgroup, 65,535 workgroups per dimension, 8 storage
buffers per stage. lavapipe is more generous, so only this test catches a kernel the browser rejects."""

from __future__ import annotations

import math
import re

import pytest

from scellis.checks.cases import CASES, Case
from scellis.codegen import render
from scellis.examples import digits_mlp, mlp
from scellis.graph import Program
from scellis.levels import Level
from scellis.lower import Schedule, lower
from scellis.pipeline import compile_program
from scellis.plan import planned

ARRAY = re.compile(r"var<workgroup> \w+: ((?:array<)+)(\w+)((?:, \d+>)+);")
SIZE = re.compile(r"@workgroup_size\(([\d, ]+)\)")


def cnn() -> dict:
    p = Program("cnn")
    x, y = p.input("x", [3, 32, 32]), p.input("y", [], dtype="int32", role="labels")
    h = p.max_pool2d(p.relu(p.batch_norm(p.conv2d(x, 16, 3, padding=1))), 2)
    h = p.dropout(p.relu(p.conv2d(h, 32, 3, padding=1, groups=2)), 0.25)
    p.set_loss(p.cross_entropy(p.linear(p.flatten(h), 10), y))
    p.set_loop(epochs=1, batch_size=32)
    return p.to_json()


def workgroup_bytes(source: str) -> int:
    total = 0
    for _, element, dims in ARRAY.findall(source):
        assert element in ("f32", "u32", "i32"), element
        total += 4 * math.prod(int(d) for d in re.findall(r"\d+", dims))
    return total


@pytest.mark.parametrize(
    "program", [digits_mlp(), mlp(784, [512, 512], 10, 256), cnn()], ids=["digits", "mlp784", "cnn"]
)
def test_kernels_fit_default_limits(program: dict) -> None:
    compiled = compile_program(program)
    for fn in (compiled.step, compiled.evaluate, compiled.init):
        assert_fits(planned(lower(fn, Level.PROD)).schedule)  # what a device runs: updated in place


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_the_correctness_cases_kernels_fit_default_limits(case: Case) -> None:
    """Every kind of kernel, solve's and sort's among them, at the sizes the matrix runs."""
    assert_fits(lower(case.build(), Level.PROD))


def assert_fits(schedule: Schedule) -> None:
    for kernel in schedule.kernels:
        wk = render(kernel, schedule)
        assert workgroup_bytes(wk.source) <= 16384, (kernel.label, workgroup_bytes(wk.source))
        (size,) = SIZE.findall(wk.source)
        assert math.prod(int(v) for v in size.split(",")) <= 256, kernel.label
        assert all(1 <= g <= 65535 for g in wk.workgroups), (kernel.label, wk.workgroups)
        assert len(wk.bindings) <= 8, kernel.label


def test_the_byte_counter_sees_a_large_tile() -> None:
    assert workgroup_bytes("var<workgroup> t: array<array<f32, 132>, 16>;\nvar<workgroup> u: array<f32, 64>;") == 8704
