"""A share link's re-run in Chromium on the CPU path (the Ising simulation, which reads no data):
- a link pinning 2^53 steps and a checkpoint every step shows the steps and the storage its checkpoints
  would take against the storage cap, and its re-run is refused with those numbers before anything is
  written (no record, no checkpoint object);
- a link checkpointing every 20 steps re-runs as a Runs record like any other: listed as it goes (its
  checkpoints with it), stopped from the card (it stops, and says so), and deleted from the Runs card with
  every checkpoint object it wrote."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from appdriver import IDB, RUN_MS, LoadedApp, launch, open_app, wait_until
from playwright.sync_api import Browser, Page, Playwright

from scellis.examples import ising
from scellis.levels import Level
from scellis.manifest.link import RanOn, Shared, share_link
from scellis.manifest.pins import Settings

PINNED = "sha256:" + "0" * 64  # the link's final key: a re-run of these settings does not reach it

# The stored records and checkpoint keys, without creating either database where the page has not yet.
STORED = f"""async () => {{ {IDB}
  const out = {{ records: [], objects: [] }};
  if (await exists("scellis-runs")) {{
    const db = await opened("scellis-runs");
    out.records = await answer(db.transaction("runs").objectStore("runs").getAll());
    db.close();
  }}
  if (await exists("scellis")) {{
    const db = await opened("scellis");
    out.objects = await answer(db.transaction("objects").objectStore("objects").getAllKeys());
    db.close();
  }}
  return out;
}}"""


def link(base_url: str, every: int, epochs: int, steps: int) -> str:
    program = ising()
    program["loop"]["rules"] = [{"on": "step", "if": {"every": every}, "then": ["checkpoint"]}]
    settings = Settings(Level.DEBUG, 1, "cpu", epochs, steps, (), PINNED)
    return share_link(Shared(program, settings, RanOn("CPU path (WebAssembly)", "0.1.0")), base_url)


@pytest.fixture(scope="module")
def browser(playwright: Playwright) -> Iterator[Browser]:
    browser = launch(playwright, webgpu=False)
    try:
        yield browser
    finally:
        browser.close()


def stored(page: Page) -> dict[str, Any]:
    return page.evaluate(STORED)


def opened_link(browser: Browser, url: str) -> LoadedApp:
    app = open_app(browser, url)
    app.page.wait_for_selector("#shared[data-storage]")  # the storage check is shown
    return app


def test_a_rerun_over_the_storage_cap_is_refused_before_anything_is_written(
    browser: Browser, base_url: str, fault_log: Callable[..., None]
) -> None:
    app = opened_link(browser, link(base_url, every=1, epochs=10**9, steps=2**53))
    page = app.page
    assert page.get_attribute("#shared", "data-storage") == "over"
    shown = page.inner_text("#shared-storage")
    assert shown.startswith("Not started: the re-run takes 100,000,000,000 steps; its checkpoints take at most ")
    assert "(100,000,000,001 of 320 KiB each), more than the storage cap of 1 GiB" in shown
    before = stored(page)
    page.click("#shared-rerun")
    page.wait_for_selector("#shared-error:not([hidden])")
    assert page.inner_text("#shared-error") == shown
    assert "Nothing was written." in shown
    assert stored(page) == before and before["records"] == []
    page.wait_for_selector("#runs[data-count='0']")
    app.context.close()
    fault_log("rerun-storage-cap", links=1, refused_before_start=1, records_written=0, objects_written=0)


def test_a_rerun_is_a_run_record_that_stops_and_deletes_with_its_checkpoints(browser: Browser, base_url: str) -> None:
    app = opened_link(browser, link(base_url, every=20, epochs=10, steps=1000))
    page = app.page
    assert page.get_attribute("#shared", "data-storage") == "within"
    assert page.inner_text("#shared-storage").startswith(
        "The re-run takes 1,000 steps; its checkpoints take at most 15.94 MiB (51 of 320 KiB each): within the "
        "storage cap of 1 GiB"
    )
    page.click("#shared-rerun")
    wait_until(
        page,
        f"async () => {{ const s = await ({STORED})(); const r = s.records[0];"
        " return r && r.checkpoints.length >= 2 && s.objects.length >= 2; }",
        timeout_ms=RUN_MS,
    )
    page.wait_for_selector("#shared-stop:not([disabled])")
    page.click("#shared-stop")
    page.wait_for_selector("#shared[data-state=stopped]", timeout=RUN_MS)
    assert page.inner_text("#shared-status").startswith("Stopped at step ")
    wait_until(page, f"async () => (await ({STORED})()).records[0]?.status === 'stopped'")
    (record,) = stored(page)["records"]
    assert record["rerunOf"] == PINNED and record["name"] == "ising" and record["step"] < 1000
    keys = {c["key"] for c in record["checkpoints"]}
    assert all(c["kind"] == "rule" and c["step"] % 20 == 0 for c in record["checkpoints"])
    assert keys <= set(stored(page)["objects"])

    page.wait_for_selector(f"#runs-table tr[data-run='{record['id']}'][data-status=stopped]")
    page.locator(f"#runs-table tr[data-run='{record['id']}'] button").click()
    page.wait_for_selector(f"#runs-detail[data-run='{record['id']}']:not([hidden])")
    assert PINNED in page.inner_text("#runs-detail-facts")
    page.click("#runs-delete")
    page.wait_for_selector("#runs-confirm[open]")
    page.click("#runs-confirm-delete")
    page.wait_for_selector("#runs[data-count='0']")
    after = stored(page)
    assert after["records"] == [] and not keys & set(after["objects"])
    assert app.errors == []
    app.context.close()
