"""`scellis run` and `scellis verify` on the CPU path (wasmtime): a digits MLP run pins a manifest that verifies
bit for bit; a manifest whose final key, data hash or seed was changed fails with the promised message; data
other than the pinned fails before any training."""

from __future__ import annotations

import asyncio
import io
import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from scellis import cli
from scellis.datasets import digits_csv, read_digits, to_files
from scellis.examples import digits_mlp
from scellis.levels import Level
from scellis.manifest import Settings, Shared, read_manifest, read_share_link, share_link
from scellis.manifest.replay import checkpoints_as, new_session
from scellis.runtime.cpu.device import CpuDevice
from scellis.session import Session, checkpoints_to
from scellis.store import DirectoryStore, key_of

RULES = [{"on": "step", "if": {"every": 10}, "then": ["checkpoint"]}]


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The digits as the app's data files, and the digits MLP checkpointing every 10 steps."""
    root = tmp_path_factory.mktemp("run")
    (root / "data").mkdir()
    for name, data in to_files(*read_digits(digits_csv().read_bytes())).items():
        (root / "data" / name).write_bytes(data)
    program = digits_mlp()
    program["loop"] = {**program["loop"], "rules": RULES}
    (root / "mlp.json").write_text(json.dumps(program))
    return root


def run(folder: Path, level: str, name: str, capsys: pytest.CaptureFixture[str], data: str | None = None) -> str:
    """`scellis run` for 2 epochs at seed 7; returns what it printed. The manifest is `name`."""
    argv = ["run", str(folder / "mlp.json"), "--data", data or str(folder / "data"), "--device", "cpu"]
    argv += ["--determinism", level, "--seed", "7", "--epochs", "2", "--store", str(folder / "store")]
    assert cli.main([*argv, "--manifest", str(folder / name)]) == 0
    return capsys.readouterr().out


@pytest.fixture(scope="module")
def pinned(folder: Path) -> dict[str, Any]:
    """The manifest of a run at debug (what it printed goes to the first test's capture, unread)."""
    argv = ["run", str(folder / "mlp.json"), "--data", str(folder / "data"), "--device", "cpu"]
    argv += ["--determinism", "debug", "--seed", "7", "--epochs", "2", "--store", str(folder / "store")]
    assert cli.main([*argv, "--manifest", str(folder / "debug.json")]) == 0
    return json.loads((folder / "debug.json").read_text())


def verify(
    folder: Path,
    manifest: dict[str, Any],
    capsys: pytest.CaptureFixture[str],
    data: str | None = None,
    store: Path | None = None,
) -> tuple[int, str, str]:
    """`scellis verify` of `manifest` on the data files (or `data`), reading the pinned objects in `store`."""
    capsys.readouterr()  # drop what came before (a module fixture's run)
    path = folder / "tampered.json"
    path.write_text(json.dumps(manifest))
    argv = ["verify", str(path), "--data", data or str(folder / "data")]
    status = cli.main(argv if store is None else [*argv, "--store", str(store)])
    out = capsys.readouterr()
    return status, out.out, out.err


def test_run_prints_progress_and_decisions_and_pins_the_run(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = run(folder, "debug", "printed.json", capsys).splitlines()
    assert out[0].startswith("training digits-mlp on CPU path (WebAssembly) via wasmtime ")
    assert out[0].endswith(" at level debug, seed 7, 2 epochs")
    assert out[1].startswith("  step 22/44 (epoch 1/2), loss ") and " steps/s, " in out[1] and "held-out: " in out[1]
    assert out[2].startswith("  step 44/44 (epoch 2/2)") and "accuracy" in out[2]
    assert out[3:8] == [
        "decisions (4):",
        *(f"  step {s} (epoch {1 + s // 22}): checkpoint, every 10 steps" for s in (10, 20, 30, 40)),
    ]
    manifest = json.loads((folder / "printed.json").read_text())
    assert out[8] == f"final checkpoint {manifest['final']} in {folder / 'store'}"
    store = DirectoryStore(folder / "store")
    kept = manifest["checkpoints"][-3:]  # retention: the last 3 (and the best, none before an evaluation)
    assert all(store.has(c["key"]) for c in kept) and store.has(manifest["final"])
    assert [c["step"] for c in manifest["checkpoints"]] == [10, 20, 30, 40]
    assert (manifest["level"], manifest["seed"], manifest["device"], manifest["steps"]) == ("debug", 7, "cpu", 44)


def test_run_then_verify_passes(folder: Path, pinned: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = verify(folder, pinned, capsys, store=folder / "store")
    assert status == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("data matches the pinned versions: train sha256:")
    assert lines[1] == (
        f"store {folder / 'store'}: checked the 4 of 5 checkpoint object(s) the run pins that the store holds; "
        "not checked: checkpoints[0].key, not in the store (a run keeps only its last few checkpoints and its best)"
    )
    assert lines[2].startswith("re-running at level debug, seed 7, on CPU path (WebAssembly) via wasmtime")
    assert lines[-1] == (
        f"verified: the re-run reached the pinned final checkpoint {pinned['final']} bit for bit "
        "(level debug, seed 7, cpu, 44 steps)"
    )
    assert DirectoryStore(folder / "store").has(pinned["final"])


def test_the_shipped_digits_are_the_data_files(
    folder: Path, pinned: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    """`--data digits` reads scikit-learn's file; it pins the same hashes as the app's data files."""
    status, out, err = verify(folder, pinned, capsys, data="digits")
    assert status == 0 and "verified: " in out, err


def test_a_manifest_from_another_cpu_path_verifies(
    folder: Path, pinned: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    """The browser's CPU path names itself otherwise: its manifest's keys are those of checkpoints that carry
    its name, and the re-run here writes under that name, so equal states still have equal keys."""
    browser = "CPU path (WebAssembly) via browser WebAssembly"
    train, test = read_digits(digits_csv().read_bytes())
    program = json.loads((folder / "mlp.json").read_text())
    session = new_session(program, asyncio.run(CpuDevice.open()), level=Level.DEBUG, seed=7, train=train, test=test)
    session.checkpointer = checkpoints_as(DirectoryStore(folder / "browser-store"), browser)

    async def as_the_browser() -> str:
        """The run again, each checkpoint (and the history that names the earlier ones) under its name."""
        await session.start(train)
        await session.run(train, test, epochs=2)
        assert session.checkpointer is not None
        return await session.checkpointer(session, "the final state")

    manifest = json.loads(json.dumps(pinned))
    manifest["environment"].update(device=browser, adapter=None, browser="Mozilla/5.0 (X11; Linux) Chrome/139")
    manifest["final"] = asyncio.run(as_the_browser())
    manifest["checkpoints"] = [{"step": step, "key": key} for step, key in session.checkpoints]
    assert manifest["final"] != pinned["final"] and len(manifest["checkpoints"]) == len(pinned["checkpoints"])
    status, out, err = verify(folder, manifest, capsys)
    assert status == 0, err
    assert f"the run's was '{browser}'; the re-run's checkpoints carry the run's device name" in out
    assert f"verified: the re-run reached the pinned final checkpoint {manifest['final']}" in out


TAMPERED: list[tuple[str, Callable[[dict], Any], list[str]]] = [
    (
        "final key",
        lambda m: m.update(final="sha256:" + "0" * 64),
        [
            "MISMATCH: the re-run's final checkpoint is sha256:",
            "the run pins sha256:" + "0" * 64,
            "Level debug promises bit-identical results on the CPU path everywhere with one engine version",
        ],
    ),
    (
        "seed",
        lambda m: m.update(seed=8),
        [
            "MISMATCH: the re-run's final checkpoint is sha256:",
            '  checkpoints[0].key: pinned "sha256:',
            "  metrics.loss: pinned ",
        ],
    ),
]


@pytest.mark.parametrize(("change", "said"), [t[1:] for t in TAMPERED], ids=[t[0] for t in TAMPERED])
def test_a_tampered_manifest_fails_verify(
    folder: Path, pinned: dict[str, Any], capsys: pytest.CaptureFixture[str], change: Callable, said: list[str]
) -> None:
    manifest = json.loads(json.dumps(pinned))
    change(manifest)
    status, out, err = verify(folder, manifest, capsys)
    assert status == 1 and "verified" not in out
    for words in said:
        assert words in err, err


def test_a_tampered_data_hash_fails_before_any_training(
    folder: Path, pinned: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = json.loads(json.dumps(pinned))
    manifest["data"][1]["sha256"] = "sha256:" + "1" * 64
    status, out, err = verify(folder, manifest, capsys)
    assert status == 1 and out == ""
    here = pinned["data"][1]["sha256"]
    assert err.splitlines() == [
        f"scellis verify: the test split does not match the pinned data: its content hash is {here}, "
        f"the run pins sha256:{'1' * 64}",
        "scellis verify: nothing was run: give the data the run pins",
    ]


def test_other_data_fails_before_any_training(
    folder: Path, pinned: dict[str, Any], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    for name in ("digits-train-x.f32", "digits-test-x.f32", "digits-test-y.i32"):
        (tmp_path / name).write_bytes((folder / "data" / name).read_bytes())
    labels = bytearray((folder / "data" / "digits-train-y.i32").read_bytes())
    labels[0] ^= 1  # one label changed
    (tmp_path / "digits-train-y.i32").write_bytes(labels)
    status, out, err = verify(folder, pinned, capsys, data=str(tmp_path))
    assert status == 1 and out == "" and "re-running" not in err
    here = key_of((tmp_path / "digits-train-x.f32").read_bytes() + bytes(labels))
    said = f"its content hash is {here}, the run pins {pinned['data'][0]['sha256']}"
    assert f"scellis verify: the train split does not match the pinned data: {said}" in err


def test_at_fast_a_difference_is_reported_with_the_metrics(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run(folder, "fast", "fast.json", capsys)
    manifest = json.loads((folder / "fast.json").read_text())
    manifest["final"] = "sha256:" + "2" * 64
    manifest["metrics"]["loss"] += 0.25
    status, _, err = verify(folder, manifest, capsys)
    assert status == 1
    assert "DIFFERENT: the re-run's final checkpoint is sha256:" in err
    assert "Level fast does not promise the same bits here: another device or engine version may legitimately" in err
    assert f"  metrics.loss: pinned {manifest['metrics']['loss']!r}, recomputed " in err and "(difference -0.25)" in err


def test_unreadable_inputs_are_named(folder: Path, pinned: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    manifest = json.loads(json.dumps(pinned))
    manifest["seed"] = "seven"
    status, _, err = verify(folder, manifest, capsys)
    assert status == 2 and "tampered.json: the manifest has 1 problem(s):\n  - seed: must be an integer" in err
    status, _, err = verify(folder, pinned, capsys, data=str(folder / "nowhere"))
    assert status == 2 and "--data " in err and "a data folder holds digits-train-x.f32" in err
    argv = ["run", str(folder / "mlp.json"), "--data", str(folder / "data"), "--device", "cpu", "--seed", "1"]
    with pytest.raises(SystemExit):
        cli.main([*argv, "--determinism", "debug", "--epochs", "0"])
    assert "epochs must be at least 1" in capsys.readouterr().err


def verify_link(folder: Path, link: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    capsys.readouterr()
    status = cli.main(["verify", link, "--data", str(folder / "data"), "--store", str(folder / "store")])
    out = capsys.readouterr()
    return status, out.out, out.err


def test_a_share_link_verifies_like_its_manifest(
    folder: Path, pinned: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    link = share_link(read_manifest(json.dumps(pinned)), "http://127.0.0.1:8000/")
    status, out, err = verify_link(folder, link, capsys)
    assert status == 0, err
    verified = f"verified: the re-run reached the pinned final checkpoint {pinned['final']}"
    assert out.splitlines()[-1].startswith(verified)


def test_a_share_link_with_another_final_key_is_a_mismatch(
    folder: Path, pinned: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    shared = read_share_link(share_link(read_manifest(json.dumps(pinned))))
    other = replace(shared, settings=replace(shared.settings, final="sha256:" + "2" * 64))
    status, _, err = verify_link(folder, share_link(other), capsys)
    assert status == 1
    assert "MISMATCH: the re-run's final checkpoint is sha256:" in err and "the run pins sha256:" + "2" * 64 in err
    assert "(the link pins no metrics)" in err  # the re-run's metrics, for the user to judge


def test_a_share_link_of_a_program_not_run_yet_cannot_be_verified(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    unrun = Shared(json.loads((folder / "mlp.json").read_text()), Settings(Level.DEBUG, 1, "cpu", 1, None, (), None))
    status, out, err = verify_link(folder, share_link(unrun), capsys)
    assert (status, out) == (2, "")
    assert err == (
        "scellis verify: the share link: the link shares a program that has not been run: there is no result to "
        "compare with\n"
    )
    status, _, err = verify_link(folder, "http://127.0.0.1:8000/#run=AAAA&run=BBBB", capsys)
    assert status == 2 and "must hold one 'run=' parameter, it holds 2" in err


def test_the_progress_bar_draws_steps_rate_and_time_left() -> None:
    assert cli.progress_bar(0, 44, None, None, width=4) == "[....] step 0/44"
    assert cli.progress_bar(22, 44, 81.26, 0.27, width=4) == "[##..] step 22/44, 81.3 steps/s, 0 s left"
    assert cli.progress_bar(44, 44, 80.0, 0.0, width=4) == "[####] step 44/44, 80.0 steps/s, 0 s left"


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_on_a_terminal_the_run_goes_in_chunks_with_a_bar_and_the_same_bits(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    train, test = read_digits(digits_csv().read_bytes())
    device = asyncio.run(CpuDevice.open())

    async def final(bar: Terminal | None) -> str:
        session = Session(
            json.loads((folder / "mlp.json").read_text()), device, seed=7, level=Level.DEBUG, eval_rows=test.n
        )
        session.checkpointer = checkpoints_to(DirectoryStore(folder / "bar-store"))
        await session.start(train)
        await cli._drive(session, train, test, 2, bar)
        return key_of((await session.checkpoint()).to_bytes())

    terminal = Terminal()
    assert asyncio.run(final(terminal)) == asyncio.run(final(None))
    drawn = terminal.getvalue()
    assert drawn.count("step 44/44, ") == 1 and " steps/s, " in drawn and drawn.endswith("\r\x1b[K")
    printed = capsys.readouterr().out.splitlines()  # each epoch's line, once per run
    assert [line.split(",")[0] for line in printed] == ["  step 22/44 (epoch 1/2)", "  step 44/44 (epoch 2/2)"] * 2
