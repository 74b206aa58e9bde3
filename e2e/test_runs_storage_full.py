"""A site whose storage is full, in Chromium on the CPU path, training a program that checkpoints every
few steps (its loop program's rule):
- localStorage filled to its quota before the run: the run completes, its checkpoints are stored, and the
  last run is still offered for resume on the next visit (kept in IndexedDB, not localStorage; a last
  run kept in localStorage by earlier pages is offered, and moved);
- the origin's IndexedDB quota used up mid-run (a real quota, set through the DevTools protocol's
  Storage.overrideQuotaForOrigin): the run stops with a message naming the cause, every checkpoint kept
  before (retention deletes the older ones) and the record are still readable (each object hashes to its
  key), and once there is room again the run resumes from its newest checkpoint to the end."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator

import pytest
from appdriver import IDB, RUN_MS, LoadedApp, launch, open_app, wait_ready, wait_until
from playwright.sync_api import Browser, Page, Playwright

SAVED_PROGRAM = "scellis.editor.program"  # editor/program.js: the editor opens the program kept there
LAST_RUN = "scellis.lastRun"  # where pages before kept the last run, in localStorage
EARLIER = "sha256:" + "e" * 64
RECORDS = f"""async () => {{ {IDB}
  const db = await opened("scellis-runs");
  const all = await answer(db.transaction("runs").objectStore("runs").getAll());
  db.close();
  return all.sort((a, b) => a.started - b.started);
}}"""
# The keys among `keys` whose stored bytes hash to them (a missing or corrupt object is left out).
READABLE = f"""async (keys) => {{ {IDB}
  const db = await opened("scellis");
  const good = [];
  for (const key of keys) {{
    const bytes = await answer(db.transaction("objects").objectStore("objects").get(key));
    if (!(bytes instanceof ArrayBuffer)) continue;
    const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
    const hex = Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("");
    if ("sha256:" + hex === key) good.push(key);
  }}
  db.close();
  return good;
}}"""
# localStorage filled until it refuses even one more character; the characters it took.
FILL = """() => {
  let size = 1 << 20, n = 0, stored = 0;
  while (size >= 1) {
    try { localStorage.setItem(`filler-${n}`, "x".repeat(size)); n += 1; stored += size; }
    catch { size = Math.floor(size / 2); }
  }
  return stored;
}"""
PROBE = "() => { try { localStorage.setItem('probe', 'x'); return 'stored'; } catch (e) { return e.name; } }"
# Whether a write of 1 KiB to a database of this origin is refused for lack of quota (IndexedDB answers
# from its own estimate of the room left for a few seconds after a quota changes).
REFUSED = f"""async () => {{ {IDB}
  const request = indexedDB.open("e2e-quota-probe", 1);
  request.onupgradeneeded = () => request.result.createObjectStore("o");
  const db = await answer(request);
  const transaction = db.transaction("o", "readwrite");
  transaction.objectStore("o").put(new ArrayBuffer(1024), Math.random());
  const name = await new Promise((resolve) => {{
    transaction.oncomplete = () => resolve("stored");
    transaction.onabort = () => resolve(transaction.error?.name);
  }});
  db.close();
  return name === "QuotaExceededError";
}}"""
PAUSE_AT = """(step) => {
  const run = document.getElementById('run');
  const pause = document.getElementById('run-pause');
  new MutationObserver((_, observer) => {
    if (Number(run.dataset.step) >= step && !pause.disabled) { observer.disconnect(); pause.click(); }
  }).observe(run, { attributes: true });
}"""


@pytest.fixture(scope="module")
def browser(playwright: Playwright) -> Iterator[Browser]:
    browser = launch(playwright, webgpu=False)
    try:
        yield browser
    finally:
        browser.close()


def records(page: Page) -> list[dict]:
    return page.evaluate(RECORDS)


def wait_records(page: Page, test: str) -> list[dict]:
    wait_until(page, f"async () => {{ const all = await ({RECORDS})(); return {test}; }}", timeout_ms=RUN_MS)
    return records(page)


def with_checkpoint_rule(app: LoadedApp, every: int, kept: dict[str, str] | None = None) -> None:
    """The page reloaded with the example program, checkpointing every `every` steps, in the editor (and
    the items `kept` in localStorage, as earlier pages left them)."""
    page = app.page
    program = json.loads(
        page.evaluate("() => window.scellis.python('from scellis.app import example_program\\nexample_program()')")
    )
    program["loop"]["rules"] = [{"on": "step", "if": {"every": every}, "then": ["checkpoint"]}]
    items = {SAVED_PROGRAM: json.dumps(program), **(kept or {})}
    page.evaluate("(items) => { for (const [k, v] of Object.entries(items)) localStorage.setItem(k, v); }", items)
    page.reload()
    wait_ready(page)


def train(page: Page, epochs: int, before: Callable[[], None] = lambda: None) -> None:
    page.select_option("#train-level", "debug")
    page.wait_for_selector("#plan[data-state=shown]")
    page.wait_for_selector("#train-button:not([disabled])")
    page.fill("#train-epochs", str(epochs))
    page.fill("#train-seed", "7")
    before()
    page.click("#train-button")


def wait_phase(page: Page, *phases: str) -> str:
    page.wait_for_selector(", ".join(f"#run[data-phase={p}]" for p in phases), timeout=RUN_MS)
    return page.get_attribute("#run", "data-phase") or ""


def test_a_full_local_storage_fails_no_run_and_resume_is_still_offered(
    browser: Browser, base_url: str, fault_log: Callable[..., None]
) -> None:
    app = open_app(browser, base_url)
    page = app.page
    earlier = {"program": "{}", "level": "debug", "seed": "7", "epochs": 2, "kind": "cpu", "key": EARLIER, "step": 3}
    with_checkpoint_rule(app, every=10, kept={LAST_RUN: json.dumps(earlier)})  # as pages before kept it
    wait_until(page, "async (key) => document.getElementById('resume-key').value === key", EARLIER)
    wait_until(page, "async (name) => localStorage.getItem(name) === null", LAST_RUN)  # moved to IndexedDB
    filled = page.evaluate(FILL)
    assert filled > 1_000_000 and page.evaluate(PROBE) == "QuotaExceededError"
    train(page, epochs=2)  # 44 steps: checkpoints after steps 10, 20, 30, 40
    assert wait_phase(page, "done", "failed") == "done", page.inner_text("#train-status")
    (run,) = wait_records(page, "all.length === 1 && all[0].status === 'done' && all[0].manifest !== null")
    rule = [c for c in run["checkpoints"] if c["kind"] == "rule"]
    assert [c["step"] for c in rule] == [10, 20, 30, 40]
    keys = [c["key"] for c in run["checkpoints"] if not c.get("gone")]  # retention keeps the last 3 and the best
    assert 4 <= len(keys) < len(run["checkpoints"])  # the final state too; step 10's deleted by retention
    assert page.evaluate(READABLE, keys) == keys
    assert page.input_value("#resume-key") == rule[-1]["key"]
    assert page.is_hidden("#runs-note") and page.is_hidden("#runs-error")

    page.reload()  # a later visit: the last run is offered from IndexedDB
    wait_ready(page)
    wait_until(page, "async (key) => document.getElementById('resume-key').value === key", rule[-1]["key"])
    assert "the last run's newest checkpoint (step 40" in page.inner_text("#resume-help")
    assert page.evaluate(PROBE) == "QuotaExceededError"  # still full all along
    assert app.errors == []
    app.context.close()
    fault_log("storage-full-localstorage", trials=1, runs_completed=1, checkpoints_saved=len(keys), objects_lost=0)


def test_indexeddb_quota_used_up_mid_run_stops_it_cleanly_and_loses_nothing(
    browser: Browser, base_url: str, fault_log: Callable[..., None]
) -> None:
    app = open_app(browser, base_url)
    page = app.page
    with_checkpoint_rule(app, every=5)
    train(page, epochs=20, before=lambda: page.evaluate(PAUSE_AT, 20))  # 440 steps, paused after step 20
    assert wait_phase(page, "paused", "done", "failed") == "paused"
    (before,) = wait_records(page, "all.length === 1 && all[0].status === 'paused' && all[0].manifest !== null")
    written = [c["key"] for c in before["checkpoints"] if not c.get("gone")]  # those retention keeps
    assert len([c for c in before["checkpoints"] if c["kind"] == "rule"]) >= 4 and len(written) >= 3

    cdp = app.context.new_cdp_session(page)
    origin = base_url.rstrip("/")
    cdp.send("Storage.overrideQuotaForOrigin", {"origin": origin, "quotaSize": 1})  # used up: no write fits
    wait_until(page, REFUSED)
    page.click("#run-continue")
    assert wait_phase(page, "done", "failed") == "failed"
    status = page.inner_text("#train-status")
    assert "is full" in status and "storage quota for this site is used up" in status, status

    (after,) = records(page)  # the record as last written, readable
    assert after["id"] == before["id"] and set(written) <= {c["key"] for c in after["checkpoints"]}
    readable = page.evaluate(READABLE, written)
    assert readable == written, set(written) - set(readable)

    cdp.send("Storage.overrideQuotaForOrigin", {"origin": origin})  # room again
    page.reload()
    wait_ready(page)
    page.wait_for_selector("#runs[data-count='1']")
    newest = max((c for c in after["checkpoints"] if c["kind"] == "rule"), key=lambda c: c["step"])
    page.locator(f"#runs-table tr[data-run='{after['id']}'] button").click()
    page.click(f"#runs-checkpoints li[data-key='{newest['key']}'] button")
    (_, resumed) = wait_records(page, "all.length === 2 && all[1].status === 'done'")
    assert resumed["resumedFrom"] == newest["key"] and resumed["step"] == 440
    kept = [c["key"] for c in resumed["checkpoints"] if not c.get("gone")]  # the resumed run's retention
    assert resumed["final"] in kept and page.evaluate(READABLE, kept) == kept
    app.context.close()
    fault_log(
        "storage-full-indexeddb",
        trials=1,
        runs_stopped_cleanly=1,
        checkpoints_before_fault=len(written),
        objects_lost=len(written) - len(readable),
        records_lost=0,
        resumed_to_end=1,
    )
