"""Checkpoint retention in the page, in Chromium on the CPU path: the train card's "Keep the last N
checkpoints" refuses a count that is not a whole number from 1, by name; a debug run whose loop program
checkpoints every few steps, kept at 2, deletes the earlier ones as it goes; the run panel and the Runs card
mark those as deleted by the retention rule (data-gone, no "Resume from here") while the kept ones keep
their button; their objects are gone from IndexedDB and the kept ones stored; resuming from a kept one
takes the record's keep count (not the field's) and reaches the unbroken run's final key."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from appdriver import RUN_MS, LoadedApp, launch, open_app, wait_until
from playwright.sync_api import Page, Playwright
from test_runs_history import OBJECTS, RECORDS, open_details, records, wait_phase

from scellis.examples import digits_mlp
from scellis.graph import validate

EVERY = 4  # steps between the loop program's checkpoints: one epoch of 22 steps writes 5
KEEP = 2


def program() -> dict:
    data = digits_mlp()
    rule = {"on": "step", "if": {"every": EVERY}, "then": ["checkpoint"]}
    data["loop"] = {**data["loop"], "epochs": 1, "rules": [rule]}
    validate(data)
    return data


@pytest.fixture(scope="module")
def app(playwright: Playwright, base_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LoadedApp]:
    """The app on the CPU path with the program opened in its editor, set to train one epoch at debug."""
    browser = launch(playwright, webgpu=False)
    try:
        loaded = open_app(browser, base_url)
        path = tmp_path_factory.mktemp("keep") / "every4.json"
        path.write_text(json.dumps(program()))
        page = loaded.page
        page.set_input_files(".editor-toolbar input[type=file]", str(path))
        page.select_option("#train-level", "debug")
        page.fill("#train-epochs", "1")
        page.fill("#train-seed", "5")
        page.wait_for_function(
            "() => document.getElementById('plan-program').textContent.endsWith('(changed: edited)')"
        )
        yield loaded
    finally:
        browser.close()


def listed(page: Page, where: str) -> dict[str, bool]:
    """The checkpoints a list shows, by key: whether each is marked gone."""
    return page.locator(f"{where} li[data-key]").evaluate_all(
        "(items) => Object.fromEntries(items.map((li) => [li.dataset.key, li.dataset.gone === 'true']))"
    )


def wait_done_records(page: Page, count: int) -> list[dict]:
    test = f"all.length === {count} && all.every((r) => r.status === 'done' && r.manifest !== null)"
    wait_until(page, f"async () => {{ const all = await ({RECORDS})(); return {test}; }}", timeout_ms=RUN_MS)
    return records(page)


def test_a_bad_keep_count_is_refused_by_name(app: LoadedApp) -> None:
    page = app.page
    for bad in ["0", "two", "1.5", ""]:
        page.fill("#train-keep", bad)
        page.click("#train-button")
        page.wait_for_function(
            "() => document.getElementById('train-status').textContent.startsWith('keep the last checkpoints:')"
        )
        assert page.get_attribute("#run", "data-phase") in (None, "idle")
    assert records(page) == []  # nothing started


def test_retired_checkpoints_are_marked_deleted_and_a_kept_one_resumes(app: LoadedApp) -> None:
    page = app.page
    page.fill("#train-keep", str(KEEP))
    page.click("#train-button")
    wait_phase(page, "done")
    (first,) = wait_done_records(page, 1)
    rule = [c for c in first["checkpoints"] if c["kind"] == "rule"]
    assert [c["step"] for c in rule] == [4, 8, 12, 16, 20] and first["keep"] == KEEP

    # the run panel: the last KEEP are kept, some earlier ones deleted; the record says the same
    panel = listed(page, "#run-checkpoints")
    gone = {key for key, is_gone in panel.items() if is_gone}
    assert gone and not gone & {c["key"] for c in rule[-KEEP:]}
    assert gone == {c["key"] for c in first["checkpoints"] if c.get("gone")}
    shown = page.inner_text(f"#run-checkpoints li[data-key='{min(gone)}']")
    assert "deleted by the retention rule: the run keeps its last 2 checkpoints and its best" in shown

    # their objects are gone from IndexedDB; the kept ones are stored
    stored = set(page.evaluate(OBJECTS))
    assert not gone & stored and {c["key"] for c in first["checkpoints"] if not c.get("gone")} <= stored

    # the Runs card: deleted ones say so with no button; kept ones resume
    open_details(page, first)
    assert listed(page, "#runs-checkpoints") == {c["key"]: bool(c.get("gone")) for c in first["checkpoints"]}
    for key in gone:
        item = page.locator(f"#runs-checkpoints li[data-key='{key}']")
        assert item.locator("button").count() == 0
        assert "deleted by the retention rule: the run keeps its last 2 checkpoints and its best" in item.inner_text()
    kept = rule[-KEEP]["key"]
    assert page.locator(f"#runs-checkpoints li[data-key='{kept}'] button").is_enabled()

    # resumed from a kept one: the record's keep count, not the field's, and the unbroken run's final key
    page.fill("#train-keep", "7")
    page.click(f"#runs-checkpoints li[data-key='{kept}'] button")
    resumed = wait_done_records(page, 2)[1]
    wait_phase(page, "done")
    assert resumed["resumedFrom"] == kept and resumed["keep"] == KEEP
    assert page.input_value("#train-keep") == str(KEEP)
    assert resumed["final"] == first["final"], "the resumed run did not reach the unbroken run's final key"
    # the resumed history's deleted checkpoints are marked from the start
    assert gone <= {key for key, is_gone in listed(page, "#run-checkpoints").items() if is_gone}
