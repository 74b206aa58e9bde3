"""A put over a damaged object repairs it; `check` (scellis fsck) lists every kind of damage; `collect`
(scellis gc) removes what no checkpoint keeps and stale temporaries, and nothing else; the medium's own
refusals (a folder where an object belongs) are named errors, not raw OSErrors."""

from __future__ import annotations

import asyncio
import os
import struct
from pathlib import Path

import pytest

from scellis import cli
from scellis.levels import Level
from scellis.rng import RngState
from scellis.store import Checkpoint, CorruptObject, DirectoryStore, Tensor, Unreadable, encode, key_of, save
from scellis.store.fsck import check, collect
from scellis.store.history import History

PROGRAM = "sha256:" + "ab" * 32


@pytest.fixture
def store(tmp_path: Path) -> DirectoryStore:
    return DirectoryStore(tmp_path / "store")


def checkpoint(step: int, written: tuple[tuple[int, str], ...] = ()) -> Checkpoint:
    history = History(((step, 1, "checkpoint"),), written)
    tensor = Tensor("F32", (1,), struct.pack("<f", step))
    return Checkpoint(PROGRAM, Level.DEBUG, "cpu", step, 1, 0, RngState(1), {}, {"w": tensor}, history)


def test_put_over_a_corrupt_object_repairs_it(store: DirectoryStore) -> None:
    data = os.urandom(1000)
    key = store.put(data)
    path = store.path(key)
    for damaged in (data[:-1] + bytes([data[-1] ^ 1]), data[:500], data + b"x", b""):
        path.write_bytes(damaged)
        with pytest.raises(CorruptObject):
            store.get(key)
        assert store.put(data) == key
        assert store.get(key) == data and path.read_bytes() == data
    assert not [p for p in path.parent.iterdir() if p.name.startswith(".tmp-")]


def test_put_of_a_whole_object_leaves_it_alone(store: DirectoryStore) -> None:
    key = store.put(b"state")
    before = store.path(key).stat()
    store.put(b"state")
    after = store.path(key).stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


def test_a_folder_in_an_objects_place_is_a_named_error(store: DirectoryStore) -> None:
    key = key_of(b"x")
    store.path(key).mkdir(parents=True)
    for call in (lambda: store.get(key), lambda: store.put(b"x"), lambda: store.delete(key)):
        with pytest.raises(Unreadable, match="is a folder, not an object file"):
            call()
    assert not store.has(key)
    (store.root / "file").write_bytes(b"")
    with pytest.raises(Unreadable, match="cannot be read or written"):
        DirectoryStore(store.root / "file").put(b"y")  # a store under a file: its folders cannot be made


def test_check_lists_each_kind_of_damage(store: DirectoryStore) -> None:
    good = store.put(b"good")
    bad = store.put(b"bad")
    store.path(bad).write_bytes(b"bAd")
    folder = store.path(good).parent
    (folder / ".tmp-abc").write_bytes(b"half")
    (folder / "README").write_text("not an object")
    (store.objects / "zz").mkdir()
    unreadable = key_of(b"dir")
    store.path(unreadable).mkdir(parents=True)
    whole, damage = check(store)
    kinds = sorted((d.kind, d.path.name) for d in damage)
    assert whole == 1
    assert kinds == sorted(
        [
            ("corrupt", bad[9:]),
            ("temporary", ".tmp-abc"),
            ("misnamed", "README"),
            ("misnamed", "zz"),
            ("unreadable", unreadable[9:]),
        ]
    )
    assert f"hash to {key_of(b'bAd')}" in str(next(d for d in damage if d.kind == "corrupt"))


def test_collect_keeps_checkpoints_and_their_histories(store: DirectoryStore) -> None:
    first = asyncio.run(save(store, checkpoint(10)))
    second = asyncio.run(save(store, checkpoint(20, ((10, first),))))
    orphan = store.put(History(((5, 1, "lost"),)).segment())  # a segment whose checkpoint never landed
    stray = store.put(b"nothing refers to this")
    earlier = store.put(encode({"w": Tensor("F32", (1,), bytes(4))}, {"format": '"scellis.checkpoint/1"'}))
    corrupt = store.put(b"corrupt one")
    store.path(corrupt).write_bytes(b"corrupt 1")
    folder = store.path(first).parent
    old, new = folder / ".tmp-old", folder / ".tmp-new"
    old.write_bytes(b"x" * 100)
    new.write_bytes(b"y" * 10)
    os.utime(old, (1000.0, 1000.0))
    listed = collect(store, dry_run=True, now=5000.0, min_age_s=600)
    assert sorted(r.path.name for r in listed) == sorted([".tmp-old", orphan[9:], stray[9:]])
    assert old.exists() and store.has(orphan)
    removed = collect(store, now=5000.0, min_age_s=600)
    assert removed == listed and not old.exists() and new.exists()
    assert not store.has(orphan) and not store.has(stray)
    assert store.has(first) and store.has(second) and store.has(corrupt)  # damage is fsck's to report
    assert store.has(earlier)  # a checkpoint of an earlier format is kept: it is no garbage
    kept = {checkpoint(10).history.reference().key, checkpoint(20, ((10, first),)).history.reference().key}
    assert kept <= set(store.keys())
    assert collect(store, now=5000.0) == []


def test_cli_fsck_and_gc(store: DirectoryStore, capsys: pytest.CaptureFixture[str]) -> None:
    key = asyncio.run(save(store, checkpoint(10)))
    assert cli.main(["fsck", str(store.root)]) == 0
    assert capsys.readouterr().out.strip().endswith(f"2 objects whole, 0 damaged: {store.root} is sound")
    store.path(key).write_bytes(b"broken")
    (store.path(key).parent / ".tmp-x").write_bytes(b"x")
    assert cli.main(["fsck", str(store.root)]) == 1
    out = sorted(capsys.readouterr().out.splitlines())
    assert out[0] == "1 objects whole, 2 damaged"
    assert out[1].startswith(f"corrupt: {store.path(key)}: its 6 bytes hash to ")
    assert out[2] == f"temporary: {store.path(key).parent / '.tmp-x'}: a write that did not finish"
    stray = store.put(b"stray")
    assert cli.main(["gc", str(store.root), "--dry-run", "--older-than", "0"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert store.has(stray) and out[-1].startswith("would remove 3 entries, ")
    assert cli.main(["gc", str(store.root), "--older-than", "0"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert f"removed object {store.path(stray)} (5 bytes)" in out
    assert out[-1].startswith("removed 3 entries, ") and out[-1].endswith(" bytes freed")
    assert cli.main(["fsck", str(store.root), "--delete-damaged"]) == 1
    assert cli.main(["fsck", str(store.root)]) == 0
    capsys.readouterr()
    assert cli.main(["fsck", str(store.root / "nope")]) == 2
    assert "is not an object store" in capsys.readouterr().err
