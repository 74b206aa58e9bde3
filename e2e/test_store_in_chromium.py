"""The object store in the page: IndexedDB through app/src/store.js, driven from the engine's Python
(runtime.browser_store) in Chromium. Round trip and idempotence, a checkpoint saved and resumed by its
key, a record changed behind the store's back refused on read and repaired by the next put of its bytes,
objects kept across a reload, a full quota (forced through the DevTools protocol) refused by name with
every earlier object intact, and the Storage card listing and deleting damaged and unused objects."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from appdriver import LoadedApp, launch, open_app, wait_ready, wait_until
from playwright.sync_api import Browser, Playwright

MiB = 1 << 20
RUN = """async ([code, values]) => window.scellis.python(code, values)"""


@pytest.fixture(scope="module")
def browser(playwright: Playwright) -> Iterator[Browser]:
    browser = launch(playwright, webgpu=False)  # the store does not depend on the device
    try:
        yield browser
    finally:
        browser.close()


@pytest.fixture(scope="module")
def app(browser: Browser, base_url: str) -> LoadedApp:
    return open_app(browser, base_url)


def python(app: LoadedApp, code: str, **values: object) -> Any:
    """`code` run in the page's Python with `values` as its globals; its last expression is JSON text."""
    return json.loads(app.page.evaluate(RUN, [code, values]))


ROUND_TRIP = """
import json
from scellis.runtime.browser_store import BrowserStore
from scellis.store import key_of
store = await BrowserStore.open(db)
data = bytes(range(256)) * 4000
key = await store.put(data)
again = await store.put(data)
other = await store.put(b"")
got = await store.get(key)
listed = await store.keys()
present = await store.has(key)
await store.delete(other)
json.dumps({"key": key, "expected": key_of(data), "again": again, "same": got == data, "listed": listed,
            "has": present, "after_delete": await store.keys(), "other": other})
"""


def test_round_trip_and_idempotent_put(app: LoadedApp) -> None:
    out = python(app, ROUND_TRIP, db="e2e-round-trip")
    assert out["key"] == out["expected"] == out["again"] and out["same"] and out["has"]
    assert out["other"] == "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    assert out["listed"] == sorted([out["key"], out["other"]])
    assert out["after_delete"] == [out["key"]]


CHECKPOINT = """
import json, struct
from scellis.levels import Level
from scellis.rng import RngState
from scellis.runtime.browser_store import BrowserStore
from scellis.store import Checkpoint, ResumeError, Tensor, key_of, load, save
store = await BrowserStore.open(db)
program = "sha256:" + "ab" * 32
checkpoint = Checkpoint(program, Level.DEBUG, "cpu", 50, 2, 8, RngState(9, {"shuffle": 2, "dropout": 50}),
                        {"lr": 0.001}, {"param/w": Tensor("F32", (2,), struct.pack("<2f", 1.5, -2.0))})
key = await save(store, checkpoint)
back = await load(store, key, expect_program=program, expect_level=Level.DEBUG)
refused = {}
for name, kwargs in {"level": {"expect_program": program, "expect_level": Level.PROD},
                     "missing": {"expect_program": program, "expect_level": Level.DEBUG}}.items():
    try:
        await load(store, key if name == "level" else "sha256:" + "0" * 64, **kwargs)
    except ResumeError as error:
        refused[name] = [error.reasons, str(error)]
json.dumps({"key": key, "local_key": key_of(checkpoint.to_bytes()), "equal": back == checkpoint,
            "refused": refused})
"""


def test_a_checkpoint_is_saved_and_resumed_by_its_key(app: LoadedApp) -> None:
    out = python(app, CHECKPOINT, db="e2e-checkpoint")
    assert out["key"] == out["local_key"] and out["equal"]
    assert out["refused"]["level"][0] == ["level"]
    assert "it was saved at level debug, and this run is at level prod" in out["refused"]["level"][1]
    assert out["refused"]["missing"][0] == ["missing"]
    assert 'in IndexedDB database "e2e-checkpoint"' in out["refused"]["missing"][1]


# Changes one byte of a stored record directly in IndexedDB, behind the store's back.
TAMPER = """async ([db, key]) => {
    const request = indexedDB.open(db);
    const connection = await new Promise((resolve, reject) => {
        request.onsuccess = () => resolve(request.result);
        request.onerror = () => reject(request.error);
    });
    const transaction = connection.transaction("objects", "readwrite");
    const objects = transaction.objectStore("objects");
    const read = objects.get(key);
    read.onsuccess = () => {
        const bytes = new Uint8Array(read.result.slice(0));
        bytes[1000] ^= 0x01;
        objects.put(bytes.buffer, key);
    };
    await new Promise((resolve, reject) => {
        transaction.oncomplete = resolve;
        transaction.onabort = () => reject(transaction.error);
    });
    connection.close();
}"""

PUT = """
import json
from scellis.runtime.browser_store import BrowserStore
store = await BrowserStore.open(db)
json.dumps(await store.put(bytes(range(256)) * 16))
"""

GET = """
import json
from scellis.runtime.browser_store import BrowserStore
from scellis.store import StoreError, key_of
store = await BrowserStore.open(db)
try:
    data = await store.get(key)
    out = {"sha": key_of(data), "size": len(data)}
except StoreError as error:
    out = {"error": type(error).__name__, "message": str(error), "found": getattr(error, "found", None)}
json.dumps(out)
"""


def test_a_changed_record_is_refused_on_read(app: LoadedApp) -> None:
    key = python(app, PUT, db="e2e-corrupt")
    assert python(app, GET, db="e2e-corrupt", key=key) == {"sha": key, "size": 4096}
    app.page.evaluate(TAMPER, ["e2e-corrupt", key])
    out = python(app, GET, db="e2e-corrupt", key=key)
    assert out["error"] == "CorruptObject" and out["found"] not in (None, key)
    assert (
        out["message"]
        == f'object {key} in IndexedDB database "e2e-corrupt" is corrupt: its 4096 bytes hash to {out["found"]}'
    )
    absent = "sha256:" + "1" * 64
    missing = python(app, GET, db="e2e-corrupt", key=absent)
    assert missing["error"] == "MissingObject" and absent in missing["message"]
    assert python(app, GET, db="e2e-corrupt", key="sha256:XYZ")["error"] == "BadKey"


def test_objects_survive_a_reload(app: LoadedApp) -> None:
    key = python(app, PUT, db="e2e-reload")
    app.page.reload()
    wait_ready(app.page)
    assert python(app, GET, db="e2e-reload", key=key) == {"sha": key, "size": 4096}


FILL = """
import json, os
from scellis.runtime.browser_store import BrowserStore
from scellis.store import StoreFull
store = await BrowserStore.open(db)
stored, refused = {}, None
for _ in range(64):
    data = os.urandom(size)  # random: Chromium compresses what IndexedDB holds
    try:
        stored[await store.put(data)] = data
    except StoreFull as error:
        refused = {"message": str(error), "size": error.size, "key": error.key}
        break
intact = [await store.get(key) == data for key, data in stored.items()]
json.dumps({"stored": sorted(stored), "refused": refused, "intact": intact, "keys": await store.keys()})
"""


def test_a_full_quota_is_refused_by_name_and_earlier_objects_stay(browser: Browser, base_url: str) -> None:
    """In a page of its own: Chromium fixes an origin's IndexedDB quota once the origin first opens a
    database, so the smaller quota is set before this page's store is opened."""
    app = open_app(browser, base_url)
    try:
        page = app.page
        page.wait_for_selector("body[data-offline]")  # the offline copy counts against the quota
        origin = page.evaluate("() => location.origin")
        usage = page.evaluate("async () => (await navigator.storage.estimate()).usage")
        app.context.new_cdp_session(page).send(
            "Storage.overrideQuotaForOrigin", {"origin": origin, "quotaSize": usage + 4 * MiB}
        )
        out = python(app, FILL, db="e2e-quota", size=MiB)
    finally:
        app.context.close()
    refused = out["refused"]
    assert refused is not None, "the quota never ran out"
    assert refused["size"] == MiB
    assert refused["message"] == (
        f'IndexedDB database "e2e-quota" is full: writing object {refused["key"]} (1,048,576 bytes) failed '
        "(the browser's storage quota for this site is used up)"
    )
    assert 1 <= len(out["stored"]) <= 4
    assert out["intact"] == [True] * len(out["stored"]) and out["keys"] == out["stored"]


def test_a_put_over_a_changed_record_repairs_it(app: LoadedApp) -> None:
    """A damaged object is not reported saved: putting its bytes again replaces it."""
    key = python(app, PUT, db="e2e-repair")
    app.page.evaluate(TAMPER, ["e2e-repair", key])
    assert python(app, GET, db="e2e-repair", key=key)["error"] == "CorruptObject"
    assert python(app, PUT, db="e2e-repair") == key
    assert python(app, GET, db="e2e-repair", key=key) == {"sha": key, "size": 4096}


STRAYS = """
import json, struct
from scellis.levels import Level
from scellis.rng import RngState
from scellis.runtime.browser_store import BrowserStore
from scellis.store import Checkpoint, Tensor, save
store = await BrowserStore.open("scellis")
checkpoint = Checkpoint("sha256:" + "cd" * 32, Level.DEBUG, "cpu", 3, 0, 3, RngState(4), {"by_rule": False},
                        {"w": Tensor("F32", (1,), struct.pack("<f", 2.5))})
key = await save(store, checkpoint)
json.dumps({"checkpoint": key, "history": checkpoint.history.reference().key,
            "damaged": await store.put(bytes(range(256)) * 16)})
"""


def storage_step(page: Any, button: str, state: str) -> list[str]:
    """Click a Storage card button; wait for its `state`; the list's lines."""
    page.click(button)
    wait_until(page, "async (s) => document.getElementById('storage').dataset.state === s", state)
    return page.locator("#storage-list li").all_inner_texts()


def test_the_storage_card_lists_and_deletes_damage_and_unused_objects(app: LoadedApp) -> None:
    """With no Runs record in this browser, a checkpoint and its history are unused; a damaged object is
    listed as such (never as unused) until deleted."""
    page = app.page
    keys = python(app, STRAYS)
    page.evaluate(TAMPER, ["scellis", keys["damaged"]])
    lines = storage_step(page, "#storage-check", "checked")
    assert page.get_attribute("#storage", "data-damaged") == "1"
    assert lines == [f"{keys['damaged']}: 4096 bytes that hash to " + lines[0].split(" hash to ")[1]]
    assert "is damaged:" in page.inner_text("#storage-status")
    unused = storage_step(page, "#storage-unused", "found")
    assert sorted(line.split(" ")[0] for line in unused) == sorted([keys["checkpoint"], keys["history"]])
    storage_step(page, "#storage-delete", "deleted")
    assert python(app, GET, db="scellis", key=keys["checkpoint"])["error"] == "MissingObject"
    storage_step(page, "#storage-check", "checked")
    storage_step(page, "#storage-delete", "deleted")
    assert storage_step(page, "#storage-check", "checked") == []
    assert page.inner_text("#storage-status").endswith(": every one is whole.")
