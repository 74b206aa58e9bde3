"""Damaged Runs records in Chromium on the CPU path: records of several malformed kinds planted straight
into IndexedDB ("scellis-runs") beside a good record and one written before records carried a format;
the reloaded page starts as usual (ready, the train card and its button), lists the two readable runs,
names each damaged record and what is wrong with it, and deletes one on its button (that record only:
the others and every checkpoint object stay)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from appdriver import LoadedApp, launch, open_app, wait_ready
from playwright.sync_api import Playwright

KEY = "sha256:" + "7" * 64
GOOD = {
    "format": 1,
    "id": "good",
    "program": '{"name": "digits-mlp"}',
    "name": "digits-mlp",
    "data": {"name": "digits (this site)", "versions": None},
    "level": "debug",
    "seed": "7",
    "epochs": 2,
    "kind": "cpu",
    "device": "CPU path (WebAssembly)",
    "resumedFrom": None,
    "started": 1_700_000_000_000,
    "ended": 1_700_000_060_000,
    "status": "done",
    "error": None,
    "step": 44,
    "total": 44,
    "rows": [{"epoch": 1, "steps": 22, "train_loss": 0.5, "test": {"loss": 0.4, "metric/accuracy": 0.9}}],
    "checkpoints": [{"step": 44, "key": KEY, "kind": "pinned"}],
    "final": KEY,
    "manifest": None,
    "rerunOf": None,
    "verdict": None,
}
OLD = {k: v for k, v in GOOD.items() if k not in ("format", "rerunOf", "verdict")} | {"id": "old"}

# id -> (the damaged record, words the page must show for it); the page's policy allows no eval, so each
# record is made here ("list": a JS array carrying the id, which JSON cannot write, is made in the page).
DAMAGED = {
    "no-rows": (
        {k: v for k, v in GOOD.items() if k != "rows"} | {"id": "no-rows"},
        "rows: expected a list, found nothing (the field is missing)",
    ),
    "row-not-object": (
        GOOD | {"id": "row-not-object", "rows": ["epoch 1"]},
        "rows[0]: expected an object, found text of 7 characters",
    ),
    "wrong-types": (
        GOOD | {"id": "wrong-types", "started": "yesterday", "step": -3},
        "started: expected a time (milliseconds)",
    ),
    "huge-name": (
        GOOD | {"id": "huge-name", "name": "x" * 3_000_000},
        "name: text of 3,000,000 characters, more than the 1,000 allowed",
    ),
    "not-a-record": ({"id": "not-a-record", "list": ["junk"]}, "the record: expected an object, found a list"),
}

PLANT = """async ({ good, old, damaged }) => {
  const db = await new Promise((resolve, reject) => {
    const request = indexedDB.open("scellis-runs");
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error);
  });
  const transaction = db.transaction("runs", "readwrite");
  const runs = transaction.objectStore("runs");
  runs.put(good);
  runs.put(old);
  for (const r of damaged) runs.put(r.list ? Object.assign([...r.list], { id: r.id }) : r);
  await new Promise((resolve, reject) => { transaction.oncomplete = resolve; transaction.onabort = reject; });
  db.close();
}"""
STORED_IDS = """async () => {
  const db = await new Promise((resolve) => {
    const r = indexedDB.open("scellis-runs"); r.onsuccess = () => resolve(r.result);
  });
  const keys = await new Promise((resolve) => {
    const r = db.transaction("runs").objectStore("runs").getAllKeys(); r.onsuccess = () => resolve(r.result);
  });
  db.close();
  return keys;
}"""


@pytest.fixture(scope="module")
def app(playwright: Playwright, base_url: str) -> Iterator[LoadedApp]:
    browser = launch(playwright, webgpu=False)
    try:
        yield open_app(browser, base_url)
    finally:
        browser.close()


def test_damaged_records_are_named_and_deletable_and_the_page_starts(app: LoadedApp) -> None:
    page = app.page
    page.wait_for_selector("#runs:not([hidden])")
    page.evaluate(PLANT, {"good": GOOD, "old": OLD, "damaged": [record for record, _ in DAMAGED.values()]})
    page.reload()
    wait_ready(page)
    page.wait_for_selector(f"#runs-damaged[data-count='{len(DAMAGED)}']:not([hidden])")
    assert page.get_attribute("body", "data-state") == "ready"
    page.wait_for_selector(
        "#train-device-choice option", state="attached"
    )  # the train card came up after the Runs card
    assert page.get_attribute("#runs", "data-count") == "2"  # the good record and the old one, upgraded
    for run in ("good", "old"):
        assert page.locator(f"#runs-table tr[data-run='{run}']").count() == 1
    for name, (_, words) in DAMAGED.items():
        item = page.locator(f"#runs-damaged-list > li[data-damaged='{name}']")
        assert words in item.inner_text(), (name, item.inner_text())
    assert len(page.inner_text("#runs-damaged")) < 20_000  # the huge name is described, not shown

    page.locator("#runs-damaged-list > li[data-damaged='row-not-object'] button").click()
    page.wait_for_selector(f"#runs-damaged[data-count='{len(DAMAGED) - 1}']")
    assert "Deleted the damaged record row-not-object" in page.inner_text("#runs-status")
    assert "row-not-object" not in page.evaluate(STORED_IDS)
    assert {"good", "old", "no-rows"} <= set(page.evaluate(STORED_IDS))

    page.locator("#runs-table tr[data-run='good'] button").click()  # the rest of the card works as before
    page.wait_for_selector("#runs-detail[data-run='good']:not([hidden])")
    assert page.locator(f"#runs-checkpoints li[data-key='{KEY}']").count() == 1
    assert app.errors == []
