"""Object keys, the store protocol and its errors: every object is addressed by the SHA-256 of its bytes.

A key is `sha256:` and 64 lowercase hex digits, nothing else: the same bytes always have the same key,
so writing is idempotent, and a read proves what it returns by hashing it again.
"""

from __future__ import annotations

import hashlib
import inspect
import re
from collections.abc import Awaitable
from typing import Any, Protocol, TypeVar

PREFIX = "sha256:"
_KEY = re.compile(r"sha256:[0-9a-f]{64}")
T = TypeVar("T")


class StoreError(Exception):
    """Anything a store refuses or finds wrong."""


class BadKey(StoreError, ValueError):
    def __init__(self, key: object) -> None:
        super().__init__(f"not an object key: {key!r} (a key is 'sha256:' and 64 lowercase hex digits)")
        self.key = key


class MissingObject(StoreError):
    def __init__(self, key: str, where: str) -> None:
        super().__init__(f"no object {key} in {where}")
        self.key = key


class CorruptObject(StoreError):
    def __init__(self, key: str, where: str, found: str, size: int) -> None:
        super().__init__(f"object {key} in {where} is corrupt: its {size} bytes hash to {found}")
        self.key, self.found = key, found


class Unreadable(StoreError):
    """The medium refused to read or write an object for a reason of its own (not lack of space): a folder
    where the object's file belongs, a permission, an I/O error. `why` says which."""

    def __init__(self, key: str, where: str, why: str) -> None:
        super().__init__(f"object {key} in {where} cannot be read or written: {why}")
        self.key, self.why = key, why


class StoreFull(StoreError):
    """The medium refused a write for lack of space; the object was not stored and nothing else changed."""

    def __init__(self, key: str, size: int, where: str, why: str) -> None:
        super().__init__(f"{where} is full: writing object {key} ({size:,} bytes) failed ({why})")
        self.key, self.size = key, size


def key_of(data: bytes) -> str:
    return PREFIX + hashlib.sha256(data).hexdigest()


def check_key(key: object) -> str:
    """`key` itself, when it is a well-formed key."""
    if not isinstance(key, str) or not _KEY.fullmatch(key):
        raise BadKey(key)
    return key


def verified(key: str, data: bytes, where: str) -> bytes:
    """`data`, once its hash is shown to be `key`."""
    found = key_of(data)
    if found != key:
        raise CorruptObject(key, where, found, len(data))
    return data


class Store(Protocol):
    """Where objects live. Each method returns its result directly (DirectoryStore, CPython) or an
    awaitable of it (BrowserStore: IndexedDB answers asynchronously); callers that serve both `await
    settle(...)` the result, as they do a Device's.

    put(data) -> key, idempotent: an object already stored whole is left as it is; one whose stored bytes
    differ (corrupt, truncated) is replaced, atomically, so a put that returns has the object whole.
    get(key) -> bytes, verified: MissingObject, or CorruptObject when the bytes no longer hash to the key;
    Unreadable when the medium refuses the read (a folder in the object's place, a permission).
    has(key) -> bool; keys() -> sorted list; delete(key), only when asked (MissingObject if absent).
    A malformed key raises BadKey; a write the medium has no room for raises StoreFull and leaves every
    other object as it was."""

    def put(self, data: bytes) -> Any: ...

    def get(self, key: str) -> Any: ...

    def has(self, key: str) -> Any: ...

    def keys(self) -> Any: ...

    def delete(self, key: str) -> Any: ...


async def settle(value: T | Awaitable[T]) -> T:
    """A store's answer, awaited when it is awaitable."""
    if inspect.isawaitable(value):
        return await value
    return value
