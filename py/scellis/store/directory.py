"""The object store in a directory (CPython, the CLI): `objects/ab/cdef…`, one file per object, named by
its key's hex digits with the first two as a folder."""

from __future__ import annotations

import contextlib
import errno
import os
import re
import tempfile
from pathlib import Path

from scellis.store.objects import PREFIX, MissingObject, StoreFull, Unreadable, check_key, key_of, verified

_FOLDER = re.compile(r"[0-9a-f]{2}")
_REST = re.compile(r"[0-9a-f]{62}")
_FULL = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}  # the medium has no room, not a fault of ours


class DirectoryStore:
    """Objects under `root/objects/`. Writes are atomic: an object's bytes go to a temporary file in its
    folder, reach the disk, and only then take the object's name, so a crash leaves either the whole
    object or none of it under its key (and at worst a `.tmp-` file, which no key can name)."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)
        self.objects = self.root / "objects"
        self.where = f"the store at {self.root}"

    def path(self, key: str) -> Path:
        hexdigits = check_key(key).removeprefix(PREFIX)
        return self.objects / hexdigits[:2] / hexdigits[2:]

    def put(self, data: bytes) -> str:
        """The key of `data`, once the object under it holds exactly `data`: an object already stored whole
        is left as it is; a damaged one (other bytes, a short file) is replaced atomically."""
        key = key_of(data)
        path = self.path(key)
        if self._holds(key, path, data):
            return key
        try:
            _write_atomically(path, data)
        except OSError as error:
            if error.errno in _FULL:
                raise StoreFull(key, len(data), self.where, os.strerror(error.errno)) from error
            raise Unreadable(key, self.where, _why(error, path)) from error
        return key

    def _holds(self, key: str, path: Path, data: bytes) -> bool:
        try:
            with path.open("rb") as file:  # reads no further than one byte past `data`
                return file.read(len(data) + 1) == data
        except FileNotFoundError:
            return False
        except OSError as error:
            raise Unreadable(key, self.where, _why(error, path)) from error

    def get(self, key: str) -> bytes:
        path = self.path(key)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            raise MissingObject(key, self.where) from None
        except OSError as error:
            raise Unreadable(key, self.where, _why(error, path)) from error
        return verified(key, data, self.where)

    def has(self, key: str) -> bool:
        return self.path(key).is_file()

    def keys(self) -> list[str]:
        if not self.objects.is_dir():
            return []
        found = []
        for folder in self.objects.iterdir():
            if folder.is_dir() and _FOLDER.fullmatch(folder.name):
                found += [PREFIX + folder.name + f.name for f in folder.iterdir() if _REST.fullmatch(f.name)]
        return sorted(found)

    def delete(self, key: str) -> None:
        path = self.path(key)
        try:
            path.unlink()
        except FileNotFoundError:
            raise MissingObject(key, self.where) from None
        except OSError as error:
            raise Unreadable(key, self.where, _why(error, path)) from error


def _why(error: OSError, path: Path) -> str:
    """An OSError in words, naming the path (IsADirectoryError: a folder stands where the object belongs)."""
    if isinstance(error, IsADirectoryError) or (error.errno == errno.EISDIR):
        return f"{path} is a folder, not an object file (scellis fsck lists such damage)"
    return f"{path}: {error.strerror or error}"


def _write_atomically(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(prefix=".tmp-", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    _sync_folder(path.parent)


def _sync_folder(folder: Path) -> None:
    """Make the rename itself durable (POSIX: the folder's entry is data of the folder). Platforms and
    file systems that cannot open or sync a folder (Windows, some network mounts) refuse with an OSError
    here; the object is already whole under its name, so that refusal is not a failed write."""
    try:
        handle = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):  # see above: the object is whole whether or not this lands
            os.fsync(handle)
    finally:
        os.close(handle)
