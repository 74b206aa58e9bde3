"""The correctness matrix on the CPython devices: every case (scellis.checks.cases) at every level on
lavapipe (wgpu-py) and the CPU path (wasmtime), each output within its kernel's declared tolerance of the
float64 reference (lower.variants.TOLERANCE), bit-identical where promised; a case needing a feature the
device lacks (float16 storage: shader-f16, which the CPU path has not) is skipped and the reason recorded.
The measured figures are written to build/correctness/<device>.json, which the build merges into the
shipped correctness.json."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from scellis.checks.cases import CASES, Case, unsupported
from scellis.checks.measure import Record, check_case, failures
from scellis.levels import Level
from scellis.runtime.cpu.device import CpuDevice
from scellis.runtime.webgpu.native import WgpuDevice

RECORDS = Path(__file__).resolve().parents[2] / "build" / "correctness"
DEVICES = {
    "lavapipe": "WebGPU through wgpu-py on Vulkan (lavapipe, Mesa's CPU Vulkan driver)",
    "wasmtime": "the CPU path's scellis_cpu.wasm under wasmtime",
}


@pytest.fixture(scope="module", params=list(DEVICES))
def device(request: pytest.FixtureRequest) -> Iterator[tuple[object, Record]]:
    """The device and its record; the record is written once every case has run on it (a run of some
    cases leaves the last whole record in place)."""
    dev = WgpuDevice() if request.param == "lavapipe" else asyncio.run(CpuDevice.open())
    record = Record(request.param, dev.name, DEVICES[request.param], sorted(dev.features), [], [])
    yield dev, record
    if record.cases != {case.name for case in CASES}:
        return  # a partial run (-k, -x): keep the last whole record
    record.note_repeats()
    record.write(RECORDS)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_case_within_declared_tolerance_at_every_level(device: tuple[object, Record], case: Case) -> None:
    dev, record = device
    reason = record.skip(case)
    if reason is not None:  # recorded as skipped with its reason; the device must refuse it, not run it
        with pytest.raises(ValueError, match="float16"):
            check_case(dev, case)
        return
    rows = check_case(dev, case)
    record.rows.extend(rows)
    assert not failures(rows), failures(rows)


def test_fast_says_what_it_uses_where_a_feature_is_missing() -> None:
    """A large product whose operands cannot be read as vec4 (K = 41) runs float16 tiles at fast where the
    device has shader-f16, and says so where it has not; one that can runs the float32 pipelined tiles
    (faster than float16 ones on the H200: bench/matmul.py) either way, and says nothing."""
    from scellis.ir import Function
    from scellis.lower import lower
    from scellis.ops import DType, Op, make
    from scellis.ops import defs as d
    from scellis.ops.node import input_node

    a, b = input_node("a", d.Role.DATA, DType.F32, (768, 41)), input_node("b", d.Role.DATA, DType.F32, (41, 768))
    odd = Function("odd", (a, b), (("m", make(Op.MATMUL, a, b, arg=d.MatmulArg())),))
    without = lower(odd, Level.FAST)
    assert [k.variant for k in without.kernels] == ["tile128"]
    assert without.notes and "shader-f16" in without.notes[0]
    with_f16 = lower(odd, Level.FAST, frozenset({"shader-f16"}))
    assert [k.variant for k in with_f16.kernels] == ["tile128-f16"] and not with_f16.notes
    assert not lower(odd, Level.PROD).notes
    large = next(c for c in CASES if c.name.startswith("matmul 768"))
    for features in (frozenset(), frozenset({"shader-f16"})):
        schedule = lower(large.build(), Level.FAST, features)
        assert [k.variant for k in schedule.kernels] == ["tile64-pipe"] and not schedule.notes


def test_a_case_a_device_cannot_run_is_skipped_with_its_reason() -> None:
    """The CPU path has no shader-f16: the float16 storage case is recorded as skipped, and says why."""
    case = next(c for c in CASES if c.name == "float16 storage")
    assert unsupported(case, frozenset({"shader-f16"})) is None
    record = Record("wasmtime", "CPU path", "test", [], [], [])
    assert record.skip(case) == "needs the device feature shader-f16, which this device lacks"
    assert record.to_json()["skipped"] == [{"case": "float16 storage", "reason": record.skipped[0]["reason"]}]
    assert record.skip(CASES[0]) is None and record.cases == {"float16 storage"}
