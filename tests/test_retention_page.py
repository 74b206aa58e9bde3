"""What the page is told about checkpoint retention: a session lists the rule checkpoints retention stopped
keeping (`session.retired`, whether or not their delete succeeded); a page's run (scellis.app.open_run on
the CPU path, a folder store) keeps the last `keep` and the best, deletes the rest and names them in its
state (`retired`, `keep`), also after a resume; the page's keep field is read as a whole number from 1 or
"all", and anything else is refused by name."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent / "devices"))
sys.path.insert(0, str(Path(__file__).parent / "store"))

from memstore import MemoryStore
from splits import random_split

from scellis import __version__
from scellis.app import Driven, _keep, open_run
from scellis.datasets import digits_csv, read_digits, to_files
from scellis.engine import engine_files
from scellis.examples import digits_mlp, mlp
from scellis.levels import Level
from scellis.runtime.cpu.device import CpuDevice
from scellis.session import Session, checkpoints_to
from scellis.store import DirectoryStore
from scellis.store.objects import MissingObject
from scellis.store.retention import KEEP

TRAIN, TEST = random_split(40, 1), random_split(8, 2)  # ten steps an epoch
BUILD = json.dumps({"package_version": __version__, "engine_files": engine_files(), "tools": {"pyodide": "314.0.7"}})
FILES = to_files(*read_digits(digits_csv().read_bytes()))


def every(data: dict[str, Any], steps: int) -> dict[str, Any]:
    rules = [{"on": "step", "if": {"every": steps}, "then": ["checkpoint"]}]
    return {**data, "loop": {**data["loop"], "rules": rules}}


class FailingDeletes(MemoryStore):
    """A store whose deletes fail (as a medium that refuses them would)."""

    def delete(self, key: str) -> None:
        raise MissingObject(key, "a store that refuses deletes")


@pytest.mark.parametrize("store_kind", [MemoryStore, FailingDeletes])
def test_a_session_lists_what_retention_retired(store_kind: type[MemoryStore]) -> None:
    async def go() -> tuple[Session, MemoryStore]:
        store = store_kind()
        data = every(mlp(64, [8], 10, 4), 4)
        data["loop"]["epochs"] = 100
        session = Session(data, await CpuDevice.open(), seed=5, level=Level.DEBUG, eval_rows=TEST.n)
        session.checkpointer = checkpoints_to(store, 2)
        await session.start(TRAIN)
        await session.run(TRAIN, TEST, steps=24)
        return session, store

    session, store = asyncio.run(go())
    written = [key for _, key in session.checkpoints]
    assert len(written) == 6
    kept = set(written[-2:]) | ({session.best.key} if session.best else set())
    assert session.retired and set(session.retired) == set(written) - kept
    assert len(set(session.retired)) == len(session.retired)  # each retired once
    for key in session.retired:
        assert store.has(key) == (store_kind is FailingDeletes)  # listed whether or not the delete succeeded


def open_in(where: Path, keep: Any, resume: str | None = None) -> list[dict]:
    """The states of a one-epoch run of the digits MLP checkpointing every 4 steps (22 steps: 5 of them)."""

    async def go() -> list[dict]:
        run = await open_run(
            "site",
            FILES,
            json.dumps(every(digits_mlp(), 4)),
            device_kind="cpu",
            level="debug",
            seed="3",
            epochs=1,
            build=BUILD,
            browser="test",
            resume=resume,
            store=DirectoryStore(where),
            keep=keep,
        )
        assert isinstance(run, Driven), run
        states = [json.loads(await run.advance(1000))]
        while not states[-1]["done"]:
            states.append(json.loads(await run.advance(1000)))
        return states

    return asyncio.run(go())


def test_a_page_run_keeps_its_setting_and_names_what_it_deleted(tmp_path: Path) -> None:
    states = open_in(tmp_path, 2)
    state, store = states[-1], DirectoryStore(tmp_path)
    written = [c["key"] for c in state["checkpoints"]]
    assert len(written) >= 5 and state["keep"] == 2
    retired = state["retired"]
    assert retired and set(retired) <= set(written) and written[-2] not in retired and written[-1] not in retired
    assert len(set(written) - set(retired)) <= 3  # the last two and the best
    for key in written:
        assert store.has(key) == (key not in retired)
    # resumed from a kept one: the resumed history's deleted checkpoints are named from the first state on
    resumed = open_in(tmp_path, "2", resume=written[-2])
    assert set(retired) <= set(resumed[0]["retired"])
    assert all(not store.has(k) for k in resumed[-1]["retired"])


def test_all_keeps_every_checkpoint_and_none_is_the_default(tmp_path: Path) -> None:
    state = open_in(tmp_path / "all", "all")[-1]
    assert state["keep"] is None and state["retired"] == []
    assert all(DirectoryStore(tmp_path / "all").has(c["key"]) for c in state["checkpoints"])
    assert _keep(None) == KEEP and _keep(" 7 ") == 7 and _keep(1) == 1


@pytest.mark.parametrize("bad", [0, "0", -1, "", "two", "2.5", 2.5, True, "\uff11"])
def test_a_keep_that_is_not_a_whole_number_from_1_is_refused_by_name(bad: Any) -> None:
    with pytest.raises(ValueError, match="keep the last checkpoints"):
        _keep(bad)
