"""`scellis run` killed (SIGKILL) at random moments, mid-checkpoint write included, ten times with a fixed
seed: each time the run resumes (`--resume` the newest checkpoint in the store, or starts again when none
landed) and ends on the uninterrupted run's final key at level debug; no object is ever corrupt; `scellis
gc` removes the temporaries the kills left, after which `scellis fsck` finds the store sound and retention
has kept it to its bound. Half the kills fall while an object is being written (its
temporary file is there). Each run is a whole CLI run in a process of its own (`python -m scellis`), killed
from outside; a run that does not end within its bound fails the test as a hang."""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from scellis import cli
from scellis.datasets import Split, digits_csv, read_digits, to_files
from scellis.examples import digits_mlp
from scellis.store import Checkpoint, DirectoryStore, FormatError
from scellis.store.fsck import check

SEED, TRIALS, EVERY, KEEP = 23, 10, 2, 3
HANG_S = 600  # a run past this is a hang
ROWS, HELD_OUT = 320, 64  # five steps an epoch, two epochs


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("kill")
    train, test = read_digits(digits_csv().read_bytes())

    def head(split: Split, n: int) -> Split:
        return Split(split.features[: n * split.width * 4], split.labels[: n * 4], split.width)

    (root / "data").mkdir()
    for name, data in to_files(head(train, ROWS), head(test, HELD_OUT)).items():
        (root / "data" / name).write_bytes(data)
    program = digits_mlp()
    program["loop"] = {**program["loop"], "rules": [{"on": "step", "if": {"every": EVERY}, "then": ["checkpoint"]}]}
    (root / "mlp.json").write_text(json.dumps(program))
    return root


def argv(folder: Path, store: Path, resume: str | None) -> list[str]:
    out = ["run", str(folder / "mlp.json"), "--data", str(folder / "data"), "--device", "cpu", "--determinism"]
    out += ["debug", "--seed", "5", "--epochs", "2", "--store", str(store), "--keep-checkpoints", str(KEEP)]
    out += ["--manifest", str(store.parent / f"{store.name}.json")]
    return out + ([] if resume is None else ["--resume", resume])


def started(args: list[str]) -> subprocess.Popen[bytes]:
    """A process running `scellis run` (its output dropped). A new process, not a fork: forking a process
    that holds threads (a device's, a server's) may copy a lock some thread held, and hang the child."""
    quiet = subprocess.DEVNULL
    return subprocess.Popen([sys.executable, "-m", "scellis", *args], stdout=quiet, stderr=quiet, stdin=quiet)


def finished(run: subprocess.Popen[bytes]) -> int:
    return run.wait(timeout=HANG_S)


def run_whole(folder: Path, store: Path, resume: str | None = None) -> str:
    assert finished(started(argv(folder, store, resume))) == 0
    return json.loads((store.parent / f"{store.name}.json").read_text())["final"]


def writing(root: Path, nth: int, *, began: float, limit: float) -> None:
    """Return once the `nth` temporary seen under root/objects is there (or the run is past `limit` s)."""
    seen: set[str] = set()
    while time.perf_counter() - began < limit:
        with contextlib.suppress(OSError):  # folders come and go under us
            for folder in os.scandir(root / "objects"):
                for entry in os.scandir(folder.path):
                    if entry.name.startswith(".tmp-") and entry.name not in seen:
                        seen.add(entry.name)
                        if len(seen) >= nth:
                            return


def newest(store: DirectoryStore) -> str | None:
    """The key of the checkpoint with the most steps in the store (what a user resumes from)."""
    best: tuple[int, str] | None = None
    keys = store.keys()
    for key in keys:
        try:
            step = Checkpoint.from_bytes(store.get(key)).step
        except (FormatError, ValueError):
            continue
        if best is None or step > best[0]:
            best = (step, key)
    return None if best is None else best[1]


def test_killed_runs_resume_to_the_same_final_key(folder: Path, fault_log: Callable[..., None]) -> None:
    began = time.perf_counter()
    whole = run_whole(folder, folder / "whole")
    span = time.perf_counter() - began  # a whole run's time, start-up included: kills fall inside it
    rng = random.Random(SEED)
    same = corrupt = left = mid_write = 0
    for trial in range(TRIALS):
        path = folder / f"trial-{trial}"
        store = DirectoryStore(path)
        run = started(argv(folder, path, None))
        if trial % 2:  # at a random moment of the run
            time.sleep(rng.uniform(0.3, 0.95) * span)
        else:  # while the n-th object is being written (its temporary is there, its name not yet)
            writing(path, rng.randint(1, 12), began=time.perf_counter(), limit=span * 3)
        run.send_signal(signal.SIGKILL)
        assert finished(run) in (-signal.SIGKILL, 0)
        _, damage = check(store)
        corrupt += sum(d.kind != "temporary" for d in damage)
        temporaries = sum(d.kind == "temporary" for d in damage)
        mid_write += temporaries > 0
        final = run_whole(folder, path, newest(store))
        same += final == whole
        assert cli.main(["gc", str(path), "--older-than", "0"]) == 0
        whole_after, damage = check(store)
        left += len(damage)
        keys = store.keys()
        checkpoints = sum(1 for key in keys if _is_checkpoint(store, key))
        assert checkpoints <= KEEP + 1 + 2  # the last 3, the best, and at most the two final states
        assert whole_after == len(keys)
    fault_log(
        "cli-sigkill-resume",
        trials=TRIALS,
        kills=TRIALS,
        kills_mid_write=mid_write,
        resumed_same_key=same,
        corrupt_objects=corrupt,
        stale_after_gc=left,
        crashes=0,
        hangs=0,
        silent_wrong=TRIALS - same,
    )
    assert (same, corrupt, left) == (TRIALS, 0, 0)


def _is_checkpoint(store: DirectoryStore, key: str) -> bool:
    try:
        Checkpoint.from_bytes(store.get(key))
    except (FormatError, ValueError):
        return False
    return True
