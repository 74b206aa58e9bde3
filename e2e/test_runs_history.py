"""The Runs history in Chromium on the CPU path: a run paused, stepped, saved and finished is recorded in
IndexedDB as it goes (its checkpoints by key, its metrics, the manifest of its pause and of its end); a
reloaded page lists it; "Resume from here" on the key saved mid-run reaches the same final key as the
unbroken run; a checkpoint object that is gone is named when resumed from; deleting asks first, naming
what goes and what is kept for other runs, deletes nothing when cancelled, and on confirmation removes
the record and the checkpoint objects no other run refers to. A screenshot of the card goes to
e2e/artifacts/."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from appdriver import IDB, RUN_MS, LoadedApp, launch, open_app, start_and_pause, wait_ready, wait_until
from playwright.sync_api import Page, Playwright

ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
EPOCHS = 2  # 44 steps of the digits MLP

# IndexedDB read (and one object deleted) as the page's own modules would, straight from the page.
RECORDS = f"""async () => {{ {IDB}
  const db = await opened("scellis-runs");
  const all = await answer(db.transaction("runs").objectStore("runs").getAll());
  db.close();
  return all.sort((a, b) => a.started - b.started);
}}"""
OBJECTS = f"""async () => {{ {IDB}
  const db = await opened("scellis");
  const keys = await answer(db.transaction("objects").objectStore("objects").getAllKeys());
  db.close();
  return keys;
}}"""
DROP_OBJECT = f"""async (key) => {{ {IDB}
  const db = await opened("scellis");
  await answer(db.transaction("objects", "readwrite").objectStore("objects").delete(key));
  db.close();
}}"""


@pytest.fixture(scope="module")
def app(playwright: Playwright, base_url: str) -> Iterator[LoadedApp]:
    browser = launch(playwright, webgpu=False)
    try:
        yield open_app(browser, base_url)
    finally:
        browser.close()


def records(page: Page) -> list[dict]:
    return page.evaluate(RECORDS)


def wait_records(page: Page, test: str) -> list[dict]:
    """The records once `test` (JS over `all`, the records oldest first) holds for them."""
    wait_until(page, f"async () => {{ const all = await ({RECORDS})(); return {test}; }}", timeout_ms=RUN_MS)
    return records(page)


def wait_phase(page: Page, phase: str) -> None:
    page.wait_for_selector(f"#run[data-phase={phase}], #run[data-phase=failed]", timeout=RUN_MS)
    assert page.get_attribute("#run", "data-phase") == phase, page.inner_text("#train-status")


def train_with_a_saved_checkpoint(page: Page) -> str:
    """The run paused at once, one step, its state saved, then on to the end; the saved key."""
    start_and_pause(page, EPOCHS, "7")
    wait_phase(page, "paused")
    step = int(page.get_attribute("#run", "data-step") or "")
    page.click("#run-step")
    page.wait_for_selector(f"#run[data-phase=paused][data-step='{step + 1}']")
    page.click("#run-save")
    page.wait_for_function("() => document.getElementById('run-pinned-status').textContent.startsWith('saved ')")
    key = page.inner_text("#run-pinned-status").removeprefix("saved ")
    page.click("#run-continue")
    wait_phase(page, "done")
    return key


def row_of(page: Page, run: dict) -> dict:
    cells = page.locator(f"#runs-table tr[data-run='{run['id']}'] > *").all_inner_texts()
    return dict(zip(["program", "data", "level", "device", "status", "metric", "started"], cells, strict=True))


def open_details(page: Page, run: dict) -> None:
    button = page.locator(f"#runs-table tr[data-run='{run['id']}'] button")
    if button.get_attribute("aria-expanded") != "true":  # a second press closes them
        button.click()
    page.wait_for_selector(f"#runs-detail[data-run='{run['id']}']:not([hidden])")


def ask_to_delete(page: Page, run: dict) -> str:
    open_details(page, run)
    page.click("#runs-delete")
    page.wait_for_selector("#runs-confirm[open]")
    return page.inner_text("#runs-confirm")


def test_runs_are_listed_resumed_and_deleted(app: LoadedApp) -> None:
    page = app.page
    saved = train_with_a_saved_checkpoint(page)
    # the pause's manifest, the saved key and the end's manifest, all written before the page goes
    (first,) = wait_records(page, "all.length === 1 && all[0].status === 'done' && all[0].manifest !== null")
    final = first["final"]
    keys = {c["key"]: c for c in first["checkpoints"]}
    assert keys[saved]["kind"] == "saved" and keys[final]["kind"] == "pinned" and keys[final]["step"] == EPOCHS * 22
    (paused,) = [c["key"] for c in first["checkpoints"] if c["kind"] == "pinned" and c["key"] != final]
    assert keys[paused]["step"] == keys[saved]["step"] - 1  # pinned at the pause, saved after one step
    assert [row["epoch"] for row in first["rows"]] == [1, 2] and first["data"]["versions"][0]["split"] == "train"

    page.reload()
    wait_ready(page)
    page.wait_for_selector("#runs[data-count='1']")
    shown = row_of(page, first)
    assert (shown["program"], shown["level"], shown["status"]) == ("digits-mlp", "debug", "done")
    assert shown["device"].startswith("CPU path (WebAssembly)") and shown["metric"].startswith("accuracy ")
    open_details(page, first)
    listed = page.locator("#runs-checkpoints li").evaluate_all("(items) => items.map((li) => li.dataset.key)")
    assert listed == [paused, saved, final]
    ARTIFACTS.mkdir(exist_ok=True)
    page.locator("#runs").screenshot(path=str(ARTIFACTS / "runs-history.png"))

    # another built-in data set chosen since: resuming chooses the run's own again
    page.check("input[name=data-source][value=chars]")
    page.wait_for_function("() => document.querySelector('#data-facts dd').textContent.includes('Zen of Python')")
    page.click(f"#runs-checkpoints li[data-key='{saved}'] button")
    resumed = wait_records(page, "all.length === 2 && all[1].status === 'done' && all[1].manifest !== null")[1]
    wait_phase(page, "done")
    assert page.is_checked("input[name=data-source][value=site]")
    assert resumed["resumedFrom"] == saved
    assert resumed["final"] == final, "the resumed run did not reach the unbroken run's final key"
    open_details(page, resumed)
    with page.expect_download() as download:
        page.click("#runs-manifest")
    assert download.value.suggested_filename.startswith("digits-mlp-")
    assert json.loads(Path(download.value.path()).read_text())["final"] == final
    page.wait_for_selector("#runs[data-count='2']")

    page.evaluate(DROP_OBJECT, paused)  # as if the site's storage had lost it
    open_details(page, first)
    page.click(f"#runs-checkpoints li[data-key='{paused}'] button")
    page.wait_for_selector("#runs-error:not([hidden])")
    error = page.inner_text("#runs-error")
    assert f"Cannot resume from {paused}: this browser no longer stores that checkpoint" in error

    deletes_and_cancels(page, first, resumed)


def wait_status(page: Page, text: str) -> None:
    """Waits until the Runs card's status line says `text` (it is written after the state it reports)."""
    page.wait_for_function("(text) => document.getElementById('runs-status').textContent === text", arg=text)


def deletes_and_cancels(page: Page, first: dict, resumed: dict) -> None:
    saved, final = resumed["resumedFrom"], first["final"]
    text = ask_to_delete(page, first)  # the resumed run refers to the saved and final keys: both are kept
    assert "No checkpoint object will be deleted." in text and "2 checkpoint objects are kept" in text
    assert saved in text and final in text
    page.click("#runs-confirm-cancel")
    page.wait_for_selector("#runs-confirm[open]", state="detached")
    wait_status(page, "Nothing was deleted.")  # said once the dialog's answer is read, after it closes
    assert len(records(page)) == 2 and {saved, final} <= set(page.evaluate(OBJECTS))

    ask_to_delete(page, resumed)
    page.click("#runs-confirm-delete")
    page.wait_for_selector("#runs[data-count='1']")
    assert [r["id"] for r in records(page)] == [first["id"]]
    assert {saved, final} <= set(page.evaluate(OBJECTS))  # the first run still refers to them

    text = ask_to_delete(page, first)
    assert "2 checkpoint objects no other run refers to will be deleted:" in text and "no longer stored" in text
    page.click("#runs-confirm-delete")
    page.wait_for_selector("#runs[data-count='0']")
    assert records(page) == [] and not {saved, final} & set(page.evaluate(OBJECTS))
    wait_status(page, f"Deleted the run of {first['name']} and 2 checkpoint objects.")
