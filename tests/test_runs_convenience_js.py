"""Convenience state under Node: the device choice (app/src/devicechoice.js) and the last run
(app/src/runmodel.js) read and kept through a storage that is full or blocked never throw (a full
storage keeps nothing, a blocked one reads as empty), and a last run read back is checked before use."""

from __future__ import annotations

from nodejs import run_node
from test_app_js import SRC

PRELUDE = f"""
import * as device from "{SRC}/devicechoice.js";
import * as runs from "{SRC}/runmodel.js";
const full = {{ getItem: () => null, setItem: () => {{ const e = new Error("quota"); e.name = "QuotaExceededError";
  throw e; }}, removeItem: () => {{}} }};
const blocked = {{ getItem: () => {{ throw new Error("SecurityError"); }}, setItem: () => {{ throw new Error("no"); }},
  removeItem: () => {{ throw new Error("no"); }} }};
const kept = new Map();
const plain = {{ getItem: (k) => kept.get(k) ?? null, setItem: (k, v) => kept.set(k, v),
  removeItem: (k) => kept.delete(k) }};
const key = "sha256:" + "ab".repeat(32);
const last = {{ program: "{{}}", level: "debug", seed: "7", epochs: 2, kind: "cpu", key, step: 25 }};
const out = {{}};
"""


def test_a_full_or_blocked_storage_keeps_nothing_and_throws_nothing() -> None:
    out = run_node(
        PRELUDE,
        """
    out.device = [device.keepDevice(() => full, "cpu"), device.storedDevice(() => full),
      device.keepDevice(() => blocked, "cpu"), device.storedDevice(() => blocked),
      device.storedDevice(() => { throw new Error("localStorage is not available"); }),
      device.keepDevice(() => plain, "webgpu"), device.storedDevice(() => plain)];
    out.last = [runs.lastRun(full), runs.lastRun(blocked)];
    runs.forgetLastRun(blocked);
    plain.setItem(runs.LAST_RUN, JSON.stringify(last));
    out.moved = runs.lastRun(plain)?.key;
    runs.forgetLastRun(plain);
    out.forgotten = plain.getItem(runs.LAST_RUN);
    """,
    )
    assert out["device"] == [False, None, False, None, None, True, "webgpu"]
    assert out["last"] == [None, None]
    assert out["moved"] == "sha256:" + "ab" * 32 and out["forgotten"] is None


def test_a_last_run_read_back_is_checked() -> None:
    out = run_node(
        PRELUDE,
        """
    const check = (change) => runs.checkLastRun(change === null ? null : { ...last, ...change }) !== null;
    out.checks = [check({}), check(null), check({ key: "sha256:12" }), check({ level: "turbo" }),
      check({ seed: "x" }), check({ epochs: "2" }), check({ program: 3 }), runs.checkLastRun("text") !== null,
      runs.checkLastRun(undefined) !== null];
    """,
    )
    assert out["checks"] == [True, False, False, False, False, False, False, False, False]
