"""Resume across page loads, in Chromium on the CPU path: a run that checkpoints to IndexedDB every 10
steps is closed mid-run with its page; a new page opens the same IndexedDB, resumes from the last key the
closed page wrote, and runs to the end. Its final checkpoint has the same key as an uninterrupted run's
in a third page (weights, optimizer state, RNG and loop state, bit for bit)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager

from appdriver import LoadedApp, launch, open_app, wait_ready, wait_until
from playwright.sync_api import Browser, Page, Playwright

SETUP = """
import random, struct
from scellis.datasets import Split
from scellis.examples import digits_cnn
from scellis.levels import Level
from scellis.runtime.browser_store import BrowserStore
from scellis.runtime.cpu.device import CpuDevice
from scellis.session import Session, checkpoints_to
from scellis.store import load, save

def split(rows, seed):
    rnd = random.Random(seed)
    pixels = struct.pack(f"<{rows * 64}f", *(rnd.random() for _ in range(rows * 64)))
    return Split(pixels, struct.pack(f"<{rows}i", *(rnd.randrange(10) for _ in range(rows))), 64)

program = digits_cnn()
program["loop"] = {"epochs": 6, "batch_size": 64, "evaluate_every": 5,
                   "rules": [{"on": "step", "if": {"every": 10}, "then": ["checkpoint"]}]}
train, test = split(320, 1), split(64, 2)  # five steps an epoch, thirty in all
store = await BrowserStore.open("e2e-resume")
written = []
device = await CpuDevice.open()
session = Session(program, device, seed=3, level=Level.DEBUG, eval_rows=test.n)
save_to = checkpoints_to(store)

async def checkpointer(s, why):
    key = await save_to(s, why)
    written.append(key)
    return key

session.checkpointer = checkpointer
"""

UNINTERRUPTED = (
    SETUP
    + """
await session.start(train)
await session.run(train, test)
await save(store, await session.checkpoint())
"""
)

STARTED = (
    SETUP
    + """
import asyncio
await session.start(train)
await session.run(train, test, steps=22)
await asyncio.sleep(3600)  # the run is under way (between steps) when its page is closed
await session.run(train, test)
"""
)

RESUMED = (
    SETUP
    + """
checkpoint = await load(store, KEY, expect_program=session.compiled.at(Level.DEBUG, device.features).key,
                        expect_level=Level.DEBUG)
await session.resume(checkpoint, train)
await session.run(train, test)
await save(store, await session.checkpoint())
"""
)

RUN = "(code) => window.scellis.python(code)"
WRITTEN = "import json\njson.dumps(globals().get('written', []))"  # the keys the run has written so far


@contextmanager
def chromium(playwright: Playwright) -> Iterator[Browser]:
    """A browser of its own for each part: the uninterrupted run's pages never share a process with the
    interrupted run's."""
    browser = launch(playwright, webgpu=False)
    try:
        yield browser
    finally:
        browser.close()


def written(page: Page) -> list[str]:
    return json.loads(page.evaluate(RUN, WRITTEN))


def test_a_run_closed_mid_way_resumes_in_a_new_page_to_the_same_bits(playwright: Playwright, base_url: str) -> None:
    with chromium(playwright) as browser:
        whole: LoadedApp = open_app(browser, base_url)
        final = whole.page.evaluate(RUN, UNINTERRUPTED)
    assert final.startswith("sha256:")
    with chromium(playwright) as browser:
        resumed = interrupted_then_resumed(browser, base_url)
    assert resumed == final


def interrupted_then_resumed(browser: Browser, base_url: str) -> str:
    """The run started in one page, that page closed after its second checkpoint, and the run resumed
    from that checkpoint's key in a new page of the same origin; the final checkpoint's key."""
    first = open_app(browser, base_url)
    first.page.evaluate("(code) => { window.run = window.scellis.python(code); return 1; }", STARTED)
    wait_until(  # the checkpoints after steps 10 and 20
        first.page, "async (code) => JSON.parse(await window.scellis.python(code)).length >= 2", WRITTEN
    )
    key = written(first.page)[-1]
    state = first.page.evaluate("() => window.scellis.python('session.steps')")
    assert state < 30, "the run was to be closed before its end"
    first.page.close()  # mid-run: the tab goes away with its run; IndexedDB keeps what was written

    second_page = first.context.new_page()  # the same origin's IndexedDB
    second_page.goto(base_url)
    wait_ready(second_page)
    return second_page.evaluate(RUN, RESUMED.replace("KEY", repr(key)))
