"""Checks in Chromium. The correctness matrix: every case at every level on WebGPU (SwiftShader) and on
the CPU path, computed in the page and compared here with the float64 reference against each kernel's
declared tolerance; the CPU path's bytes in Chromium equal its bytes under wasmtime. The figures are
written to build/correctness/chromium-<kind>.json; the build ships them, and the Correctness page shows
them. And a session in the page allocates exactly what the memory plan says, on both devices, for the
digits MLP, the digits CNN and the character transformer block."""

from __future__ import annotations

import asyncio
import base64
import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import ModuleType

import pytest
from appdriver import LoadedApp, wait_ready

from scellis.checks.cases import CASES, run_case, unsupported
from scellis.checks.measure import Record, case_inputs, case_seed, failures, measure, to_bytes
from scellis.levels import Level
from scellis.lower import lower
from scellis.runtime.cpu.device import CpuDevice

RECORDS = Path(__file__).resolve().parents[1] / "build" / "correctness"
HOW = {
    "webgpu": "the page's WebGPU in headless Chromium (SwiftShader, --enable-unsafe-webgpu)",
    "cpu": "the page's CPU path (scellis_cpu.wasm) in headless Chromium without WebGPU",
}
PAGE = """
import base64, json
from scellis.checks.cases import CASES, run_case, unsupported
from scellis.levels import Level
if KIND == "webgpu":
    from scellis.runtime.webgpu.browser import BrowserWebGPU
    device = BrowserWebGPU()
else:
    from scellis.runtime.cpu.device import CpuDevice
    device = await CpuDevice.open()
inputs = json.loads(INPUTS)
results = {}
for case in CASES:
    if unsupported(case, device.features):
        continue
    fn = case.build()
    given = {k: base64.b64decode(v) for k, v in inputs[case.name].items()}
    for level in Level:
        _, outs, repeat = await run_case(device, fn, level, given)
        encoded = {k: base64.b64encode(v).decode() for k, v in outs.items()}
        results[f"{case.name}|{level.value}"] = {"outputs": encoded, "repeat": repeat}
json.dumps({"name": device.name, "features": sorted(device.features), "results": results})
"""
SCRIPT = """async ([code, kind, inputs]) => window.scellis.python(code, { KIND: kind, INPUTS: inputs }, kind)"""


def _values() -> dict[str, dict]:
    out = {}
    for case in CASES:
        fn = case.build()
        out[case.name] = case_inputs(case, fn, seed=case_seed(case))
    return out


def _wasmtime_bytes(values: dict[str, dict]) -> dict[str, dict[str, bytes]]:
    """The same cases on the CPU path under wasmtime, in this process."""

    async def go() -> dict[str, dict[str, bytes]]:
        device = await CpuDevice.open()
        out = {}
        for case in CASES:
            if unsupported(case, device.features):
                continue
            fn = case.build()
            for level in Level:
                _, outs, _ = await run_case(device, fn, level, to_bytes(fn, values[case.name]))
                out[f"{case.name}|{level.value}"] = outs
        return out

    with ThreadPoolExecutor(1) as pool:  # Playwright's sync API holds this thread's event loop
        return pool.submit(asyncio.run, go()).result()


@pytest.fixture(scope="module")
def matrix(loaded: LoadedApp) -> list[str]:
    """Every case at every level run in the page and measured here; the record written to RECORDS (for
    the build to ship); the promises it broke."""
    kind = loaded.page.evaluate("() => document.body.dataset.device")
    values = _values()
    wire = {
        case.name: {k: base64.b64encode(v).decode() for k, v in to_bytes(case.build(), values[case.name]).items()}
        for case in CASES
    }
    answer = json.loads(loaded.page.evaluate(SCRIPT, [PAGE, kind, json.dumps(wire)]))
    features = frozenset(answer["features"])
    record = Record(f"chromium-{kind}", answer["name"], HOW[kind], sorted(features), [], [])
    for case in CASES:
        if record.skip(case):
            continue
        fn = case.build()
        for level in Level:
            got = answer["results"][f"{case.name}|{level.value}"]
            outputs = {k: base64.b64decode(v) for k, v in got["outputs"].items()}
            schedule = lower(fn, level, features)
            record.rows += measure(
                case, fn, level, schedule=schedule, values=values[case.name], outputs=outputs, repeat=got["repeat"]
            )
    record.note_repeats()
    problems = failures(record.rows)
    if kind == "cpu":
        wasmtime = _wasmtime_bytes(values)
        for level in Level:
            keys = [f"{c.name}|{level.value}" for c in CASES if not unsupported(c, features)]
            equal = [
                {k: base64.b64decode(v) for k, v in answer["results"][key]["outputs"].items()} == wasmtime[key]
                for key in keys
            ]
            record.identity.append(
                {"check": "bytes equal wasmtime's", "level": level.value, "cases": len(keys), "identical": all(equal)}
            )
            differ = [k for k, same in zip(keys, equal, strict=True) if not same]
            problems += [f"{level.value}: {k} differs from wasmtime" for k in differ]
    record.write(RECORDS)
    return problems


def test_matrix_in_the_page(matrix: list[str]) -> None:
    assert not matrix, matrix


def test_correctness_page_shows_the_shipped_record(
    loaded: LoadedApp, matrix: list[str], build_script: ModuleType
) -> None:
    kind = loaded.page.evaluate("() => document.body.dataset.device")
    build_script.build_test()  # ships the record this module's matrix wrote (in dist/, and the test build served)
    shipped = json.loads((build_script.DIST_TEST / "correctness.json").read_text())
    record = next(r for r in shipped["records"] if r["device"]["id"] == f"chromium-{kind}")
    page = loaded.context.new_page()
    page.goto(loaded.page.url.split("#")[0].rsplit("/", 1)[0] + "/correctness.html")
    wait_ready(page)
    assert page.evaluate("() => document.body.dataset.state") == "ready"
    for level in ("debug", "prod", "fast"):
        rows = [r for r in record["rows"] if r["level"] == level]
        passed = sum(r["ok"] for r in rows)
        cells = page.locator(f"#level-{level} tbody tr").filter(has_text=f"chromium-{kind}").locator("td")
        assert cells.nth(1).inner_text() == f"{passed} / {len(rows)}"
        detail = page.locator(f"#device-chromium-{kind} table").nth(["debug", "prod", "fast"].index(level))
        assert detail.locator("tbody tr").count() == len(rows)
    skipped = page.locator(f"#device-chromium-{kind} p.skipped")
    assert skipped.count() == len(record["skipped"])  # the cases this device cannot run, with the reason
    # this record is this build's engine's (another device's may be older: the page says so for it)
    assert f"chromium-{kind} was measured with engine" not in page.locator("#report").inner_text()
    page.close()


ALLOCATED = """
import json
from scellis.examples import char_transformer, digits_cnn, digits_mlp
from scellis.levels import Level
from scellis.pipeline import compile_program
from scellis.session import Session
if KIND == "webgpu":
    from scellis.runtime.webgpu.browser import BrowserWebGPU
    device = BrowserWebGPU()
else:
    from scellis.runtime.cpu.device import CpuDevice
    device = await CpuDevice.open()
out = {}
for name, program in (("mlp", digits_mlp()), ("cnn", digits_cnn()), ("transformer", char_transformer())):
    session = Session(program, device, seed=1, level=Level.PROD, eval_batch=8)
    await session.start()
    plan = compile_program(program, eval_batch=8).at(Level.PROD, device.features).plan
    out[name] = [session.step.allocated + session.eval.allocated, plan.total]
json.dumps(out)
"""


def test_a_session_in_the_page_allocates_what_the_plan_says(loaded: LoadedApp) -> None:
    kind = loaded.page.evaluate("() => document.body.dataset.device")
    script = """async ([code, kind]) => window.scellis.python(code, { KIND: kind }, kind)"""
    allocated = json.loads(loaded.page.evaluate(script, [ALLOCATED, kind]))
    assert sorted(allocated) == ["cnn", "mlp", "transformer"]
    for name, (got, planned) in allocated.items():
        assert got == planned, (kind, name, got, planned)
