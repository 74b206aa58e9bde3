"""DirectoryStore: objects at objects/ab/cdef…, idempotent atomic writes, every read verified."""

from __future__ import annotations

import errno
import os
import re
from pathlib import Path

import pytest

from scellis.store import BadKey, CorruptObject, DirectoryStore, MissingObject, StoreFull, key_of

ABSENT = key_of(b"never stored")


@pytest.fixture
def store(tmp_path: Path) -> DirectoryStore:
    return DirectoryStore(tmp_path / "store")


def files(store: DirectoryStore) -> list[Path]:
    return sorted(p for p in store.root.rglob("*") if p.is_file())


def test_put_get_and_the_object_path(store: DirectoryStore) -> None:
    key = store.put(b"abc")
    assert key == "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    assert files(store) == [store.root / "objects" / "ba" / (key[9:])]
    assert store.get(key) == b"abc"
    assert store.has(key) and not store.has(ABSENT)


def test_put_is_idempotent(store: DirectoryStore) -> None:
    key = store.put(b"state")
    path = store.path(key)
    before = path.stat()
    assert store.put(b"state") == key
    assert path.stat().st_mtime_ns == before.st_mtime_ns and path.stat().st_ino == before.st_ino
    assert files(store) == [path]


def test_keys_lists_objects_only(store: DirectoryStore) -> None:
    assert store.keys() == []
    stored = sorted(store.put(bytes([i]) * i) for i in range(5))
    (store.objects / "zz").mkdir()  # not a key's folder
    (store.objects / "ab").mkdir(exist_ok=True)
    (store.objects / "ab" / ".tmp-leftover").write_bytes(b"half")  # what a crash mid-write leaves
    assert store.keys() == stored


def test_one_changed_byte_is_detected_on_read(store: DirectoryStore) -> None:
    data = os.urandom(4096)
    key = store.put(data)
    path = store.path(key)
    corrupt = bytearray(data)
    corrupt[1234] ^= 0x01
    path.write_bytes(bytes(corrupt))
    with pytest.raises(CorruptObject) as caught:
        store.get(key)
    assert caught.value.key == key and caught.value.found == key_of(bytes(corrupt))
    assert f"object {key} in the store at {store.root} is corrupt" in str(caught.value)


def test_a_truncated_object_is_detected(store: DirectoryStore) -> None:
    key = store.put(b"0123456789")
    store.path(key).write_bytes(b"01234")
    with pytest.raises(CorruptObject, match="its 5 bytes hash to"):
        store.get(key)


def test_missing_object(store: DirectoryStore) -> None:
    with pytest.raises(MissingObject, match=f"no object {ABSENT} in the store at {store.root}"):
        store.get(ABSENT)
    with pytest.raises(MissingObject):
        store.delete(ABSENT)


def test_delete_only_what_is_asked(store: DirectoryStore) -> None:
    keep, drop = store.put(b"keep"), store.put(b"drop")
    store.delete(drop)
    assert store.keys() == [keep] and not store.has(drop)


@pytest.mark.parametrize("method", ["get", "has", "delete", "path"])
def test_malformed_keys_are_refused(store: DirectoryStore, method: str) -> None:
    with pytest.raises(BadKey, match=re.escape("'sha256:../../etc'")):
        getattr(store, method)("sha256:../../etc")


def test_writes_leave_no_temporary_files(store: DirectoryStore) -> None:
    keys = [store.put(os.urandom(n)) for n in (0, 1, 100_000)]
    assert files(store) == sorted(store.path(k) for k in keys)


def test_a_failed_write_leaves_nothing_under_the_key(store: DirectoryStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """A crash between writing and renaming: no half object, no temporary file."""
    earlier = store.put(b"earlier")

    def crash(src: object, dst: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(KeyboardInterrupt):
        store.put(b"interrupted")
    assert not store.has(key_of(b"interrupted"))
    assert files(store) == [store.path(earlier)]


def test_a_full_disk_is_store_full_and_earlier_objects_stay(
    store: DirectoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    earlier = store.put(b"earlier")
    real_fsync = os.fsync

    def full(handle: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(StoreFull) as caught:
        store.put(b"x" * 5000)
    monkeypatch.setattr(os, "fsync", real_fsync)
    assert caught.value.size == 5000
    assert f"the store at {store.root} is full: writing object {key_of(b'x' * 5000)} (5,000 bytes)" in str(caught.value)
    assert store.keys() == [earlier] and store.get(earlier) == b"earlier"
    assert files(store) == [store.path(earlier)]
