"""The page's re-run of a share link (scellis.app.open_replay, then the run's verdict) uses verify's
comparison: a link whose steps, data versions, seed or engine version were doctored is not "verified",
and the verdict names the claim; what a link does not pin is said. A link to a program without a name
(the name is optional) is refused by name, never with a KeyError."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from scellis import __version__
from scellis.app import Driven, open_replay, open_run
from scellis.datasets import digits_csv, read_digits, to_files
from scellis.engine import engine_files
from scellis.examples import digits_mlp
from scellis.manifest import Shared, read_share_link, share_link
from scellis.manifest.pins import DataVersion
from scellis.store import DirectoryStore

BUILD = json.dumps({"package_version": __version__, "engine_files": engine_files(), "tools": {"pyodide": "314.0.7"}})
FILES = to_files(*read_digits(digits_csv().read_bytes()))
BASE = "http://127.0.0.1:8000/"


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Shared:
    """What the share link of a page run (one epoch of the digits MLP at debug) carries."""

    async def go() -> str:
        run = await open_run(
            "site",
            FILES,
            json.dumps(digits_mlp()),
            device_kind="cpu",
            level="debug",
            seed="3",
            epochs=1,
            build=BUILD,
            store=DirectoryStore(tmp_path_factory.mktemp("run")),
        )
        assert isinstance(run, Driven), run
        while not json.loads(await run.advance(1000))["done"]:
            pass
        return json.loads(await run.manifest(BASE))["link"]

    return read_share_link(asyncio.run(go()))


def verdict_of(link: str, store: Path) -> dict[str, Any]:
    async def go() -> dict[str, Any]:
        run, _ = await open_replay("site", FILES, link, "cpu", BUILD, store=DirectoryStore(store))
        assert isinstance(run, Driven), run
        while not json.loads(await run.advance(1000))["done"]:
            pass
        return json.loads(await run.verdict())

    return asyncio.run(go())


def test_the_undoctored_link_verifies_and_says_what_it_does_not_pin(shared: Shared, tmp_path: Path) -> None:
    verdict = verdict_of(share_link(shared, BASE), tmp_path)
    assert verdict["verified"], verdict["lines"]
    assert any(line.startswith("not pinned by a share link: the program key") for line in verdict["lines"])
    assert verdict["lines"][-1].startswith("verified: the re-run reached the pinned final checkpoint")


def _examples(s: Shared) -> Shared:
    train, test = s.settings.data
    data = (train, DataVersion(test.split, test.sha256, test.examples - 1, test.shape))
    return replace(s, settings=replace(s.settings, data=data))


DOCTORED: list[tuple[str, Callable[[Shared], Shared], str]] = [
    ("steps", lambda s: replace(s, settings=replace(s.settings, steps=20)), "final: pinned "),
    ("seed", lambda s: replace(s, settings=replace(s.settings, seed=4)), "final: pinned "),
    ("data examples", _examples, "data[1].examples: pinned 358, recomputed 359"),
    (
        "engine version",
        lambda s: replace(s, ran_on=replace(s.ran_on, engine_version="0.0.1+000000000000")),
        'ran_on.engine_version: pinned "0.0.1+000000000000"',
    ),
]


@pytest.mark.parametrize(("change", "said"), [d[1:] for d in DOCTORED], ids=[d[0] for d in DOCTORED])
def test_a_doctored_link_is_not_verified_on_the_page(
    shared: Shared, tmp_path: Path, change: Callable[[Shared], Shared], said: str
) -> None:
    verdict = verdict_of(share_link(change(shared), BASE), tmp_path)
    assert not verdict["verified"]
    assert verdict["lines"][0].startswith(("MISMATCH: ", "DIFFERENT: ")), verdict["lines"]
    assert any(line.strip().startswith(said) for line in verdict["lines"]), verdict["lines"]


def test_a_link_to_an_unnamed_program_is_refused_by_name(shared: Shared, tmp_path: Path) -> None:
    program = {k: v for k, v in shared.program.items() if k != "name"}
    link = share_link(replace(shared, program=program), BASE)
    refused = open_replay("none", {}, link, "cpu", BUILD, store=DirectoryStore(tmp_path))
    with pytest.raises(ValueError, match=r"this run of the program read data \(train, test\): give it that data"):
        asyncio.run(refused)
