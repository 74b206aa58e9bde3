"""1,000,000 uniform draws computed in the page — on WebGPU (SwiftShader) and on the CPU path — have the
same bytes as CPython's pure-Python Philox (compared by SHA-256)."""

from __future__ import annotations

import hashlib

from appdriver import LoadedApp

from scellis.rng import uniform_bytes

DRAWS = 1_000_000
PAGE = """
import hashlib, struct
from scellis.examples import random_draws
from scellis.lower import lower
from scellis.runtime.cpu.device import CpuDevice
from scellis.levels import Level
from scellis.plan import planned
schedule = lower(random_draws(DRAWS), Level.DEBUG)
devices = [("cpu", await CpuDevice.open())]
if KIND == "webgpu":
    from scellis.runtime.webgpu.browser import BrowserWebGPU
    devices.append(("webgpu", BrowserWebGPU()))
hashes = {}
for name, device in devices:
    compiled = await device.compile(planned(schedule))
    compiled.write("rng.test", struct.pack("<2I", 0x01234567, 0x89ABCDEF))
    out = await compiled.step({}, ["u"])
    hashes[name] = hashlib.sha256(out["u"]).hexdigest()
str(hashes)
"""


def expected() -> str:
    return hashlib.sha256(uniform_bytes(DRAWS, 3, 11, (0x01234567, 0x89ABCDEF))).hexdigest()


def test_draws_in_the_page_equal_cpython(loaded: LoadedApp) -> None:
    kind = loaded.page.evaluate("() => document.body.dataset.device")
    code = f"DRAWS = {DRAWS}\nKIND = {kind!r}\n{PAGE}"
    script = """async ([code, kind]) => window.scellis.python(code, {}, kind)"""
    hashes = eval(loaded.page.evaluate(script, [code, kind]))  # a dict literal of names to hex digests
    assert set(hashes) == ({"cpu", "webgpu"} if kind == "webgpu" else {"cpu"})
    want = expected()
    assert all(h == want for h in hashes.values()), hashes
