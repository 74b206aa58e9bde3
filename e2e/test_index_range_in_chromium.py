"""An index outside its table in the page (ops.indices): on WebGPU (SwiftShader, through the page's executor)
and on the CPU path, a step that reads a token past the table raises IndexRangeError at its read, naming the
gather, the index and where it is; a step in range reads the table's rows."""

from __future__ import annotations

import json

from appdriver import LoadedApp

PAGE = """
import json, struct
from scellis.ir import Function
from scellis.levels import Level
from scellis.lower import lower
from scellis.ops import DType, Op, make
from scellis.ops.defs import Role
from scellis.ops.indices import IndexRangeError
from scellis.ops.node import input_node
from scellis.runtime.cpu.device import CpuDevice
from scellis.plan import planned
table = input_node("embed.weight", Role.PARAM, DType.F32, (5, 2))
tokens = input_node("tokens", Role.DATA, DType.I32, (3,))
schedule = lower(Function("gather", (table, tokens), (("rows", make(Op.GATHER, table, tokens)),)), Level.DEBUG)
devices = [("cpu", await CpuDevice.open())]
if KIND == "webgpu":
    from scellis.runtime.webgpu.browser import BrowserWebGPU
    devices.append(("webgpu", BrowserWebGPU()))
out = {}
for name, device in devices:
    compiled = await device.compile(planned(schedule))
    compiled.write("embed.weight", struct.pack("<10f", *range(10)))
    good = await compiled.step({"tokens": struct.pack("<3i", 4, 0, 2)}, ["rows"])
    await compiled.step({"tokens": struct.pack("<3i", 1, 7, 2)}, [])  # read nothing: the record waits
    try:
        await compiled.step({"tokens": struct.pack("<3i", 0, 0, 0)}, ["rows"])
        error = None
    except IndexRangeError as err:
        error = str(err)
    out[name] = {"good": list(struct.unpack("<6f", good["rows"])), "error": error}
json.dumps(out)
"""


def test_a_token_past_the_table_raises_in_the_page(loaded: LoadedApp) -> None:
    kind = loaded.page.evaluate("() => document.body.dataset.device")
    code = f"KIND = {kind!r}\n{PAGE}"
    script = """async ([code, kind]) => window.scellis.python(code, {}, kind)"""
    found = json.loads(loaded.page.evaluate(script, [code, kind]))
    assert set(found) == ({"cpu", "webgpu"} if kind == "webgpu" else {"cpu"})
    for result in found.values():
        assert result["good"] == [8.0, 9.0, 0.0, 1.0, 4.0, 5.0]
        assert result["error"] == "gather from 'embed.weight' by 'tokens': index 7 at [1] lies outside [0, 5)"
