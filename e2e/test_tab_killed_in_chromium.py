"""A checkpointing run's tab closed at random moments (a fixed seed, ten times), in Chromium on the CPU
path: each time a new page of the same origin finds the newest checkpoint in IndexedDB (or none: it starts
again), resumes from it and runs to the end, reaching the uninterrupted run's final key at level debug;
every object in the store is whole afterwards. Each trial's resuming page is the next trial's page."""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable

from appdriver import launch, open_app, wait_ready
from playwright.sync_api import Page, Playwright

SEED, TRIALS = 29, 10

SETUP = """
import json, random, struct
from scellis.datasets import Split
from scellis.examples import mlp
from scellis.levels import Level
from scellis.runtime.browser_store import BrowserStore
from scellis.runtime.cpu.device import CpuDevice
from scellis.session import Session, checkpoints_to
from scellis.store import Checkpoint, FormatError, load, save

def split(rows, seed):
    rnd = random.Random(seed)
    pixels = struct.pack(f"<{rows * 64}f", *(rnd.random() for _ in range(rows * 64)))
    return Split(pixels, struct.pack(f"<{rows}i", *(rnd.randrange(10) for _ in range(rows))), 64)

program = mlp(64, [8], 10, 4)
program["loop"] = {"epochs": 4, "batch_size": 4, "evaluate_every": 5,
                   "rules": [{"on": "step", "if": {"every": 2}, "then": ["checkpoint"]}]}
train, test = split(40, 1), split(8, 2)  # ten steps an epoch, forty in all
store = await BrowserStore.open(DB)
device = await CpuDevice.open()
session = Session(program, device, seed=3, level=Level.DEBUG, eval_rows=test.n)
session.checkpointer = checkpoints_to(store)
expect = {"expect_program": session.compiled.at(Level.DEBUG, device.features).key, "expect_level": Level.DEBUG}

async def newest():
    best = None
    for key in await store.keys():
        try:
            step = Checkpoint.from_bytes(await store.get(key)).step
        except (FormatError, ValueError):
            continue
        if best is None or step > best[0]:
            best = (step, key)
    return None if best is None else best[1]
"""

WHOLE = (
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
await session.start(train)
await session.run(train, test)
"""
)

RESUMED = (
    SETUP
    + """
key = await newest()
if key is None:
    await session.start(train)
else:
    await session.resume(await load(store, key, **expect), train)
await session.run(train, test)
final = await save(store, await session.checkpoint())
whole = 0
for k in await store.keys():
    await store.get(k)  # verified: a damaged object raises
    whole += 1
json.dumps({"final": final, "from": key, "whole": whole})
"""
)

RUN = "(code) => window.scellis.python(code)"


def timed_whole(page: Page) -> tuple[str, float]:
    began = time.perf_counter()
    final = page.evaluate(RUN, WHOLE.replace("DB", repr("e2e-kill-whole")))
    return final, time.perf_counter() - began


def test_closing_the_tab_mid_run_loses_nothing(playwright: Playwright, base_url: str, fault_log: Callable) -> None:
    browser = launch(playwright, webgpu=False)
    try:
        app = open_app(browser, base_url)
        whole, span = timed_whole(app.page)
        rng = random.Random(SEED)
        page, same, resumed, objects = app.page, 0, 0, 0
        for trial in range(TRIALS):
            db = repr(f"e2e-kill-{trial}")
            page.evaluate(
                "(code) => { window.run = window.scellis.python(code); return 1; }", STARTED.replace("DB", db)
            )
            page.wait_for_timeout(rng.uniform(0.1, 0.9) * span * 1000)
            page.close()  # the tab goes, mid-run (and at times mid-write)
            page = app.context.new_page()
            page.goto(base_url)
            wait_ready(page)
            out = json.loads(page.evaluate(RUN, RESUMED.replace("DB", db)))
            same += out["final"] == whole
            resumed += out["from"] is not None
            objects += out["whole"]
    finally:
        browser.close()
    fault_log(
        "tab-killed-resume",
        trials=TRIALS,
        kills=TRIALS,
        resumed_from_checkpoint=resumed,
        resumed_same_key=same,
        objects_whole=objects,
        crashes=0,
        hangs=0,
        silent_wrong=TRIALS - same,
    )
    assert same == TRIALS
