"""Checkpoint retention in the Runs history's pure logic under Node (app/src/runsmodel.js): the train card's
keep field read as a whole number from 1 or "all" (anything else named), a record keeping its keep count,
the checkpoints the run panel's state names as retired marked gone (and written), `gone` and `keep`
checked when a record is read (records without them still read), and a resume taking the record's count.
The card and the run panel showing them run in e2e/test_retention_in_page.py."""

from __future__ import annotations

from test_runsmodel_js import run_js


def test_the_keep_field_takes_a_whole_number_from_1_or_all() -> None:
    out = run_js("""
    for (const text of ["3", " 12 ", "1", "all", "ALL", "1000000"]) out[text] = runs.parseKeep(text);
    const bad = ["0", "", "-1", "2.5", "two", "1e3", "99999999", "0x10", null];
    for (const text of bad) out[`bad ${text}`] = runs.parseKeep(text);
    out.rule1 = runs.keepRule(1);
    out.rule3 = runs.keepRule(3);
    out.ruleAll = runs.keepRule("all");
    """)
    assert [out[t]["keep"] for t in ["3", " 12 ", "1", "all", "ALL", "1000000"]] == [3, 12, 1, "all", "all", 1_000_000]
    bad = {k: v for k, v in out.items() if k.startswith("bad ")}
    assert len(bad) == 9
    for answer in bad.values():
        assert set(answer) == {"error"} and answer["error"].startswith("keep the last checkpoints: a whole number")
    assert '(found "two")' in out["bad two"]["error"] and "(found nothing)" in out["bad "]["error"]
    assert out["rule1"] == "deleted by the retention rule: the run keeps its last checkpoint and its best"
    assert out["rule3"] == "deleted by the retention rule: the run keeps its last 3 checkpoints and its best"
    assert out["ruleAll"] == "deleted by a retention rule: no longer stored"


def test_retired_checkpoints_are_marked_gone_and_the_record_is_written() -> None:
    out = run_js("""
    let r = runs.newRecord({ id: "a", now: 1, device: "d", settings: { ...settings, keep: 2 } });
    out.keep = r.keep;
    out.defaultKeep = fresh().keep;
    out.rerunKeep = runs.newRecord({ id: "b", now: 1, device: "d", settings: { ...settings, rerunOf: key("f") } }).keep;
    const cps = ["a", "b", "c"].map((c, i) => ({ step: 4 * (i + 1), key: key(c) }));
    r = runs.withState(r, state(12, { checkpoints: cps })).record;
    const later = { checkpoints: [...cps, { step: 16, key: key("d") }], retired: [key("a")] };
    const next = runs.withState(r, state(16, later));
    out.changed = next.changed;
    r = next.record;
    out.gone = r.checkpoints.map((c) => c.gone ?? false);
    const again = runs.withState(r, state(17, later));
    out.again = again.changed;
    out.sameList = again.record.checkpoints === r.checkpoints;
    out.read = runs.readRecord(r);
    out.resume = runs.resumeSettings(r);
    out.resumeOld = runs.resumeSettings({ ...r, keep: undefined });
    out.resumeAll = runs.resumeSettings({ ...r, keep: "all" });
    """)
    assert (out["keep"], out["defaultKeep"], out["rerunKeep"]) == (2, 3, None)
    assert out["changed"] is True and out["gone"] == [True, False, False, False]
    assert out["again"] is False and out["sameList"] is True  # a chunk that retires nothing new writes nothing
    assert "record" in out["read"], out["read"]
    assert out["resume"]["keep"] == 2 and "keep" not in out["resumeOld"] and out["resumeAll"]["keep"] == "all"


def test_gone_and_keep_are_checked_when_a_record_is_read_and_old_records_still_read() -> None:
    out = run_js("""
    const first = { checkpoints: [{ step: 4, key: key("a") }], retired: [key("a")] };
    const good = runs.withState(fresh(), state(4, first)).record;
    const bad = {
      goneText: (r) => { r.checkpoints[0].gone = "yes"; },
      goneNull: (r) => { r.checkpoints[0].gone = null; },
      keepZero: (r) => { r.keep = 0; },
      keepText: (r) => { r.keep = "3"; },
      keepHalf: (r) => { r.keep = 2.5; },
      keepHuge: (r) => { r.keep = 1e12; },
    };
    for (const [name, change] of Object.entries(bad)) {
      const r = structuredClone(good);
      change(r);
      out[name] = runs.readRecord(r, "a");
    }
    const old = structuredClone(good);
    delete old.keep;
    delete old.checkpoints[0].gone;
    out.old = runs.readRecord(old, "a");
    out.good = runs.readRecord(good, "a");
    out.all = runs.readRecord({ ...good, keep: "all" }, "a");
    out.none = runs.readRecord({ ...good, keep: null, checkpoints: [{ ...good.checkpoints[0], gone: false }] }, "a");
    """)
    for name, field in [
        ("goneText", "checkpoints[0].gone"),
        ("goneNull", "checkpoints[0].gone"),
        ("keepZero", "keep"),
        ("keepText", "keep"),
        ("keepHalf", "keep"),
        ("keepHuge", "keep"),
    ]:
        problems = out[name]["damaged"]["problems"]
        assert len(problems) == 1 and problems[0].startswith(f"{field}: "), (name, problems)
    for name in ["old", "good", "all", "none"]:
        assert "record" in out[name], (name, out[name])
    assert out["good"]["record"]["checkpoints"][0]["gone"] is True
