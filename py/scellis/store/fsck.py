"""Checking a directory store object by object (`check`) and collecting its garbage (`collect`).

`check` reads every file under `objects/` and says what is wrong, one `Damage` each: a corrupt object
(its bytes hash to another key), one the medium will not read (a folder in its place, a permission), a
misnamed entry (a name no key gives), a stray temporary (`.tmp-…`, what a write cut short leaves).

`collect` deletes what nothing keeps: the roots are every tensor file in the store, checkpoints of any
format (retention, not the collector, decides which checkpoints go: store.retention), unless the caller
names them; an object is kept
when it is a root or the history a root names (store.history: its chain of segments). Temporaries older
than `min_age_s` go too (a younger one may be a write under way). Damaged objects are left for `check` to
report: the collector deletes only objects it has read whole.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from scellis.store.checkpoint import Checkpoint
from scellis.store.directory import DirectoryStore
from scellis.store.history import segment_references
from scellis.store.objects import PREFIX, StoreError, key_of
from scellis.store.tensorfile import FormatError, decode

_FOLDER = re.compile(r"[0-9a-f]{2}")
_REST = re.compile(r"[0-9a-f]{62}")
TEMPORARY = ".tmp-"
STALE_S = 600.0  # a temporary this old is no write under way


@dataclass(frozen=True)
class Damage:
    kind: str  # "corrupt", "unreadable", "misnamed" or "temporary"
    path: Path
    detail: str

    def __str__(self) -> str:
        return f"{self.kind}: {self.path}: {self.detail}"


@dataclass(frozen=True)
class Removed:
    kind: str  # "object" or "temporary"
    path: Path
    size: int


def _entries(store: DirectoryStore) -> Iterable[tuple[Path, str | None]]:
    """Every entry under objects/ with its key (None: a name no key gives, or a temporary)."""
    if not store.objects.is_dir():
        return
    for folder in sorted(store.objects.iterdir()):
        if not (folder.is_dir() and _FOLDER.fullmatch(folder.name)):
            yield folder, None
            continue
        for entry in sorted(folder.iterdir()):
            yield entry, (PREFIX + folder.name + entry.name) if _REST.fullmatch(entry.name) else None


def check(store: DirectoryStore) -> tuple[int, list[Damage]]:
    """(objects read whole, damage found), every object's bytes hashed against its name."""
    whole, damage = 0, []
    for path, key in _entries(store):
        if key is None:
            temporary = path.name.startswith(TEMPORARY) and path.parent != store.objects
            kind = "temporary" if temporary else "misnamed"
            detail = "a write that did not finish" if temporary else "no object key names this"
            damage.append(Damage(kind, path, detail))
            continue
        try:
            data = path.read_bytes()
        except OSError as error:
            what = "a folder, not an object file" if path.is_dir() else (error.strerror or str(error))
            damage.append(Damage("unreadable", path, what))
            continue
        found = key_of(data)
        if found != key:
            damage.append(Damage("corrupt", path, f"its {len(data)} bytes hash to {found}, not {key}"))
        else:
            whole += 1
    return whole, damage


def references(data: bytes) -> tuple[bool, list[str]]:
    """Whether an object is a tensor file (a checkpoint of this format or an earlier one: a root unless
    the caller names the roots), and the objects it keeps: a checkpoint its history's last segment, a
    segment the one before it; anything else keeps nothing."""
    try:
        return True, [Checkpoint.from_bytes(data).history.reference().key]
    except FormatError:
        pass
    try:
        decode(data)
    except FormatError:
        pass
    else:
        return True, []
    try:
        previous = segment_references(data)
    except FormatError:
        return False, []
    return False, [] if previous is None else [previous]


def collect(
    store: DirectoryStore,
    roots: Iterable[str] | None = None,
    *,
    dry_run: bool = False,
    min_age_s: float = STALE_S,
    now: float | None = None,
) -> list[Removed]:
    """Delete (or with `dry_run` only list) the objects nothing keeps and the stale temporaries."""
    found: dict[str, tuple[int, bool, list[str]]] = {}  # key -> size, whether a checkpoint, what it keeps
    stale: list[Removed] = []
    now = time.time() if now is None else now
    for path, key in _entries(store):
        if key is None:
            if path.name.startswith(TEMPORARY) and path.is_file() and now - path.stat().st_mtime >= min_age_s:
                stale.append(Removed("temporary", path, path.stat().st_size))
            continue
        try:
            data = store.get(key)
        except StoreError:
            continue  # damaged: check reports it
        found[key] = (len(data), *references(data))
    start = [k for k, (_, checkpoint, _) in found.items() if checkpoint] if roots is None else list(roots)
    kept: set[str] = set()
    while start:
        key = start.pop()
        if key not in kept:
            kept.add(key)
            start += found[key][2] if key in found else []
    removed = stale + [Removed("object", store.path(k), size) for k, (size, _, _) in found.items() if k not in kept]
    if not dry_run:
        for item in removed:
            item.path.unlink(missing_ok=True)
    return removed
