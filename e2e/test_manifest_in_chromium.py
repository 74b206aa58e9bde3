"""A manifest written in the page verifies in CPython: the digits MLP trained in Chromium on the CPU path
at debug (the app's own data files, its engine as dist/build.json describes it), the manifest taken out
of the page as JSON, and `scellis verify` re-running it under wasmtime reaches the pinned final
checkpoint bit for bit."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from appdriver import LoadedApp

from scellis import cli

TRAIN = """
import json
from js import fetch
from scellis.datasets import from_files
from scellis.examples import digits_mlp
from scellis.levels import Level
from scellis.manifest import build_manifest, engine_from_build, to_json
from scellis.runtime.browser_store import BrowserStore
from scellis.runtime.cpu.device import CpuDevice
from scellis.session import Session, checkpoints_to
from scellis.store import save

async def fetched(name):
    return bytes((await (await fetch(name)).arrayBuffer()).to_py())

names = ["digits-train-x.f32", "digits-train-y.i32", "digits-test-x.f32", "digits-test-y.i32"]
files = {name: await fetched(f"data/{name}") for name in names}
train, test = from_files(files)
program = digits_mlp()
program["loop"] = {**program["loop"], "epochs": 2, "rules": [{"on": "end", "then": ["checkpoint"]}]}
device = await CpuDevice.open()
session = Session(program, device, seed=5, level=Level.DEBUG, eval_rows=test.n)
store = await BrowserStore.open("e2e-manifest")
session.checkpointer = checkpoints_to(store)
await session.fit(train, test)
final = await save(store, await session.checkpoint())
build = json.loads(await (await fetch("build.json")).text())
manifest = build_manifest(session, train, test, device_kind="cpu", epochs=2, final=final,
                          engine=engine_from_build(build), browser="Chromium")
to_json(manifest)
"""


def test_a_manifest_from_the_page_verifies_in_cpython(
    loaded: LoadedApp, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # on the page's CPU path, whether or not the page has WebGPU: its bits are the same as under wasmtime
    text = loaded.page.evaluate("(code) => window.scellis.python(code)", TRAIN)
    manifest = tmp_path / "run.manifest.json"
    manifest.write_text(text)
    argv = ["verify", str(manifest), "--data", "digits", "--store", str(tmp_path / "store")]
    with ThreadPoolExecutor(1) as thread:  # asyncio.run needs a thread of its own: Playwright's loop runs here
        status = thread.submit(cli.main, argv).result()
    out = capsys.readouterr().out
    assert status == 0, out
    assert "verified: the re-run reached the pinned final checkpoint" in out
