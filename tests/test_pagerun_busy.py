"""The page's run does one thing at a time (scellis.pagerun.PageRun.busy): the page asks for a paused run's
manifest (for its Runs history) and a user may ask for the next steps before it is written. With a store
that answers asynchronously, as IndexedDB does, the manifest still pins the state its final checkpoint
holds, and the steps run after it, in the order asked; here on wasmtime's CPU path."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from scellis import __version__
from scellis.datasets import digits_csv, read_digits
from scellis.engine import engine_files
from scellis.examples import digits_mlp
from scellis.levels import Level
from scellis.manifest import engine_from_build
from scellis.pagerun import PageRun
from scellis.runtime.cpu.device import CpuDevice
from scellis.store import DirectoryStore
from scellis.store.checkpoint import Checkpoint

ENGINE = engine_from_build({"package_version": __version__, "engine_files": engine_files(), "tools": {"pyodide": None}})


class SlowStore(DirectoryStore):
    """A folder whose writes answer on a later turn of the event loop, as the page's IndexedDB does."""

    async def put(self, data: bytes) -> str:  # type: ignore[override]
        await asyncio.sleep(0.01)
        return super().put(data)


def test_a_manifest_asked_for_before_more_steps_pins_the_state_before_them(tmp_path: Path) -> None:
    store = SlowStore(tmp_path)
    train, test = read_digits(digits_csv().read_bytes())

    async def go() -> tuple[dict, dict]:
        run = await PageRun.open(
            store,
            await CpuDevice.open(),
            train,
            test,
            program=digits_mlp(),
            device_kind="cpu",
            level=Level.DEBUG,
            seed=3,
            epochs=1,
            engine=ENGINE,
        )
        await run.advance(5)
        pinned, state = await asyncio.gather(run.manifest("http://127.0.0.1/"), run.advance(10))
        return pinned, state

    pinned, state = asyncio.run(go())
    manifest = json.loads(pinned["manifest"])
    final = Checkpoint.from_bytes(store.get(pinned["final"]))
    assert (manifest["steps"], final.step) == (5, 5)  # the manifest's steps are its final checkpoint's
    assert state["step"] == 15  # the steps asked for next ran after it
