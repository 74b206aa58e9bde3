"""`scellis verify` compares every claim of a manifest it can recompute: a doctored-manifest set, one variant
per claim (a digits MLP run at debug on the CPU path, then one field changed, added, removed or reordered),
each rejected with exit 1 naming the claim's field path, the pinned and the recomputed value; the
undoctored manifest verifies. Claims no re-run can recompute are listed as not checked, never taken as
matching. With --store, the pinned checkpoint objects are read and each missing, corrupt or other one is
named."""

from __future__ import annotations

import base64
import json
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from scellis import cli
from scellis.datasets import digits_csv, read_digits, to_files
from scellis.examples import digits_mlp
from scellis.manifest import read_manifest, read_share_link, share_link
from scellis.manifest.link import link_json
from scellis.manifest.record import FIELDS
from scellis.manifest.replay import UNCHECKED
from scellis.store import DirectoryStore

RULES = [{"on": "step", "if": {"every": 10}, "then": ["checkpoint"]}]
OTHER_KEY = "sha256:" + "3" * 64


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The digits as data files, the digits MLP checkpointing every 10 steps, its run's manifest and store."""
    root = tmp_path_factory.mktemp("claims")
    (root / "data").mkdir()
    for name, data in to_files(*read_digits(digits_csv().read_bytes())).items():
        (root / "data" / name).write_bytes(data)
    program = digits_mlp()
    program["loop"] = {**program["loop"], "rules": RULES}
    (root / "mlp.json").write_text(json.dumps(program))
    argv = ["run", str(root / "mlp.json"), "--data", str(root / "data"), "--device", "cpu", "--determinism", "debug"]
    argv += ["--seed", "7", "--epochs", "2", "--store", str(root / "store"), "--manifest", str(root / "run.json")]
    assert cli.main(argv) == 0
    return root


@pytest.fixture
def pinned(folder: Path) -> dict[str, Any]:
    return json.loads((folder / "run.json").read_text())


def verify(
    folder: Path, pinned: Any, capsys: pytest.CaptureFixture[str], store: Path | None = None
) -> tuple[int, str, str]:
    capsys.readouterr()
    path = folder / "doctored.json"
    path.write_text(json.dumps(pinned))
    argv = ["verify", str(path), "--data", str(folder / "data")]
    status = cli.main(argv if store is None else [*argv, "--store", str(store)])
    out = capsys.readouterr()
    return status, out.out, out.err


def test_the_undoctored_manifest_verifies_and_lists_what_it_did_not_check(
    folder: Path, pinned: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    status, out, err = verify(folder, pinned, capsys, folder / "store")
    assert status == 0, err
    lines = out.splitlines()
    assert f"store {folder / 'store'}: checked the 4 of 5 checkpoint object(s) the run pins that the store" in out
    assert lines[-2] == "every other claim of the manifest that the re-run recomputes matches too"
    assert lines[-1].startswith(f"verified: the re-run reached the pinned final checkpoint {pinned['final']} bit ")
    said = "not checked: environment.adapter, environment.browser, environment.python (where the run ran"
    assert said in out
    assert "not checked: plan.verdict, plan.reasons, plan.budget (the memory the run's device had" in out
    assert "not checked: environment.device (checked only through the checkpoint keys" in out


def test_every_field_a_manifest_holds_is_compared_or_named_unchecked() -> None:
    """A new manifest field cannot be accepted silently: each top-level field is recomputed (replay.recomputed
    covers these) or its every part is in UNCHECKED."""
    recomputed = {"format", "program", "level", "seed", "device", "epochs", "steps", "data", "final"}
    recomputed |= {"checkpoints", "engine", "plan", "metrics", "events"}
    assert set(FIELDS) - recomputed == {"environment"}
    assert {path.split(".")[0] for path in UNCHECKED} == {"environment", "plan", "ran_on"}


def _set(path: str, value: Any) -> Callable[[dict], None]:
    """A change that sets the field at `path` ('a.b', 'a[1].b') to `value`."""

    def change(manifest: dict) -> None:
        *parents, last = _steps(path)
        target = manifest
        for step in parents:
            target = target[step]
        target[last] = value

    return change


def _steps(path: str) -> list[str | int]:
    out: list[str | int] = []
    for part in path.replace("]", "").split("."):
        name, *indexes = part.split("[")
        out += [name, *(int(i) for i in indexes)] if name else [int(i) for i in indexes]
    return out


def _swap_keys(m: dict) -> None:
    first, second = m["checkpoints"][0], m["checkpoints"][1]
    first["key"], second["key"] = second["key"], first["key"]


# (claim, change, field paths the rejection must name)
DOCTORED: list[tuple[str, Callable[[dict], Any], list[str]]] = [
    ("metric value", _set("metrics.metric/accuracy", 0.999), ["metrics.metric/accuracy: pinned 0.999, recomputed "]),
    ("loss value", lambda m: m["metrics"].update(loss=m["metrics"]["loss"] / 2), ["metrics.loss: pinned "]),
    ("metric added", _set("metrics.metric/f1", 0.5), ["metrics.metric/f1: pinned 0.5, recomputed nothing"]),
    ("metric removed", lambda m: m["metrics"].pop("loss"), ["metrics.loss: pinned nothing, recomputed "]),
    ("checkpoint key changed", _set("checkpoints[1].key", OTHER_KEY), [f'checkpoints[1].key: pinned "{OTHER_KEY}"']),
    ("checkpoint step changed", _set("checkpoints[1].step", 15), ["checkpoints[1].step: pinned 15, recomputed 20"]),
    ("checkpoint removed", lambda m: m["checkpoints"].pop(3), ["checkpoints[3]: pinned nothing, recomputed {"]),
    (
        "checkpoint added",
        lambda m: m["checkpoints"].append({"step": 44, "key": m["final"]}),
        ["checkpoints[4]: pinned {", "recomputed nothing"],
    ),
    ("checkpoints reordered", _swap_keys, ["checkpoints[0].key: pinned ", "checkpoints[1].key: pinned "]),
    (
        "decision edited",
        _set("events[0].text", "checkpoint, every 5 steps"),
        ['events[0].text: pinned "checkpoint, every 5 steps", recomputed "checkpoint, every 10 steps"'],
    ),
    ("decision moved", _set("events[1].step", 21), ["events[1].step: pinned 21, recomputed 20"]),
    ("decision removed", lambda m: m["events"].pop(), ["events[3]: pinned nothing, recomputed {"]),
    (
        "decision added",
        lambda m: m["events"].append({"step": 44, "epoch": 2, "text": "stop: accuracy above 0.99"}),
        ["events[4]: pinned {"],
    ),
    ("program key", _set("program.key", OTHER_KEY), [f'program.key: pinned "{OTHER_KEY}"']),
    (
        "loop rule changed",
        _set("program.json.loop.rules", [{"on": "step", "if": {"every": 11}, "then": ["checkpoint"]}]),
        ["checkpoints[0].step: pinned 10, recomputed 11", 'events[0].text: pinned "checkpoint, every 10 steps"'],
    ),
    ("program changed, key kept", _set("program.json.optimizer.lr", 0.004), ["program.key: pinned ", "final: pinned "]),
    (
        "final key",
        _set("final", OTHER_KEY),
        ["MISMATCH: the re-run's final checkpoint is", f'final: pinned "{OTHER_KEY}"'],
    ),
    ("seed", _set("seed", 8), ["final: pinned ", "checkpoints[0].key: pinned ", "metrics.loss: pinned "]),
    ("level", _set("level", "prod"), ["final: pinned ", "checkpoints[0].key: pinned "]),
    ("epochs fewer than the steps", _set("epochs", 1), ["steps: pinned 44, recomputed 22"]),
    ("steps beyond the epochs", _set("steps", 50), ["steps: pinned 50, recomputed 44"]),
    ("steps cut short", _set("steps", 40), ["final: pinned ", "metrics.loss: pinned "]),
    ("data examples", _set("data[0].examples", 1500), ["data[0].examples: pinned 1500, recomputed 1438"]),
    ("data shape", _set("data[1].shape", [65]), ["data[1].shape[0]: pinned 65, recomputed 64"]),
    ("engine version", _set("engine.engine_version", "0.0.9+000000000000"), ['engine.engine_version: pinned "0.0.9+']),
    ("engine package", _set("engine.package_version", "9.9.9"), ['engine.package_version: pinned "9.9.9"']),
    ("engine wasm", _set("engine.wasm", OTHER_KEY), [f'engine.wasm: pinned "{OTHER_KEY}"']),
    ("engine wgsl", _set("engine.wgsl", OTHER_KEY), [f'engine.wgsl: pinned "{OTHER_KEY}"']),
    ("plan bytes", lambda m: m["plan"].update(bytes=m["plan"]["bytes"] + 1), ["plan.bytes: pinned "]),
    (
        "device name, keys kept",
        _set("environment.device", "CPU path (WebAssembly) via another runtime"),
        ["checkpoints[0].key: pinned ", "final: pinned "],
    ),
]


@pytest.mark.parametrize(("change", "said"), [d[1:] for d in DOCTORED], ids=[d[0] for d in DOCTORED])
def test_a_doctored_manifest_is_rejected_naming_the_claim(
    folder: Path, pinned: dict[str, Any], capsys: pytest.CaptureFixture[str], change: Callable, said: list[str]
) -> None:
    change(pinned)
    read_manifest(json.dumps(pinned))  # still a well-formed manifest: only verify can tell
    status, out, err = verify(folder, pinned, capsys)
    assert status == 1, out + err
    headline = next(line for line in err.splitlines() if not line.startswith("note: "))
    assert "verified" not in out and headline.startswith(("MISMATCH: ", "DIFFERENT: ")), err
    for words in said:
        assert words in err, err


def test_the_doctored_set_covers_every_claim_verify_recomputes() -> None:
    """One variant at least per recomputed top-level claim (format is refused on reading)."""
    named = " ".join(path for _, _, paths in DOCTORED for path in paths)
    for claim in ("program.key", "final", "checkpoints", "events", "metrics", "steps", "data", "engine", "plan"):
        assert f"{claim}" in named, claim


def test_what_cannot_be_recomputed_is_named_not_checked(
    folder: Path, pinned: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    """An unchecked claim changed does not fail verify, and is not silently taken either: it is listed."""
    pinned["environment"]["browser"] = "Mozilla/5.0 (something else)"
    pinned["plan"]["verdict"] = "yellow"
    pinned["epochs"] = 3  # the run's 44 steps end before 3 epochs: a paused run, whose epochs no re-run sets
    status, out, err = verify(folder, pinned, capsys)
    assert status == 0, err
    assert "environment.browser" in out and "plan.verdict" in out
    assert "not checked: epochs (the run stopped at step 44, before the end of its 3 epochs (paused)" in out


def test_with_a_store_each_pinned_object_is_read(
    folder: Path, pinned: dict[str, Any], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The run's store with objects lost, damaged or another's: each named; a store holding none of them
    (not the run's) is said to be unchecked."""
    status, out, err = verify(folder, pinned, capsys, tmp_path / "elsewhere")
    assert status == 0, err
    assert f"{tmp_path / 'elsewhere'}: not checked: the store holds none of the 5 checkpoint object(s)" in out

    store = DirectoryStore(tmp_path / "copy")  # the run's store, one object lost and one damaged
    source = DirectoryStore(folder / "store")
    for key in [c["key"] for c in pinned["checkpoints"][1:]] + [pinned["final"]]:
        store.put(source.get(key))
    damaged = store.path(pinned["checkpoints"][2]["key"])
    data = bytearray(damaged.read_bytes())
    data[-1] ^= 1
    damaged.write_bytes(bytes(data))
    status, out, err = verify(folder, pinned, capsys, tmp_path / "copy")
    assert status == 1 and err.startswith(f"MISMATCH: the re-run reached the pinned final checkpoint {pinned['final']}")
    assert "not checked: checkpoints[0].key, not in the store (a run keeps only its last few" in out + err
    assert "checkpoints[0].key: pinned" not in err, err  # deleted by retention: named, not a difference
    assert "checkpoints[2].key: pinned " in err and "is corrupt" in err, err
    assert "checkpoints[1].key" not in err and "checkpoints[3].key" not in err and "final:" not in err

    store.delete(pinned["final"])  # the final state is never deleted by retention: its absence is a difference
    status, _, err = verify(folder, pinned, capsys, tmp_path / "copy")
    assert status == 1 and f'final: pinned "{pinned["final"]}"; in the store: no object' in err, err

    pinned["checkpoints"][0]["key"] = pinned["checkpoints"][1]["key"]  # the object of another step
    status, _, err = verify(folder, pinned, capsys, folder / "store")
    assert status == 1
    assert "checkpoints[0].key: pinned " in err and "a checkpoint of step 20, not 10" in err, err


def verify_link(folder: Path, shared: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    link = share_link(read_share_link(_link_of(shared)))
    capsys.readouterr()
    status = cli.main(["verify", link, "--data", str(folder / "data")])
    out = capsys.readouterr()
    return status, out.out, out.err


def _link_of(payload: dict[str, Any]) -> str:
    text = json.dumps(payload, separators=(",", ":")).encode()
    return "#run=" + base64.urlsafe_b64encode(zlib.compress(text)).rstrip(b"=").decode()


LINKS: list[tuple[str, Callable[[dict], Any], str]] = [
    ("steps", _set("steps", 40), "final: pinned "),
    ("data examples", _set("data[1].examples", 300), "data[1].examples: pinned 300, recomputed 359"),
    ("engine version", _set("ran_on.engine_version", "0.0.9+000000000000"), 'ran_on.engine_version: pinned "0.0.9+'),
    ("seed", _set("seed", 9), "final: pinned "),
]


@pytest.mark.parametrize(("change", "said"), [d[1:] for d in LINKS], ids=[d[0] for d in LINKS])
def test_a_doctored_share_link_is_rejected_naming_the_claim(
    folder: Path, pinned: dict[str, Any], capsys: pytest.CaptureFixture[str], change: Callable, said: str
) -> None:
    shared = link_json(read_share_link(share_link(read_manifest(json.dumps(pinned)))))
    status, out, err = verify_link(folder, shared, capsys)
    assert status == 0 and "not pinned by a share link: the program key" in out, err
    change(shared)
    status, out, err = verify_link(folder, shared, capsys)
    assert status == 1 and said in err, err
