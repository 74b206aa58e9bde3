"""The object store in the page: IndexedDB through app/src/store.js (the engine worker's
`scellis_host.openStore`), reached through Pyodide's FFI. IndexedDB answers asynchronously, so every method is
a coroutine; the page's module hashes what it writes and verifies what it reads with crypto.subtle."""

from __future__ import annotations

from typing import Any

import scellis_host  # the engine worker's (app/src/enginehost.js): its IndexedDB store
from pyodide.ffi import JsException, to_js

from scellis.store.objects import BadKey, CorruptObject, MissingObject, StoreError, StoreFull, check_key


class BrowserStore:
    """One IndexedDB database of objects (the page's default is "scellis"); a store.Store whose
    answers are awaited."""

    def __init__(self, handle: Any, name: str) -> None:
        self.handle = handle
        self.where = f'IndexedDB database "{name}"'

    @classmethod
    async def open(cls, name: str = "scellis") -> BrowserStore:
        return cls(await _call(scellis_host.openStore(name)), name)

    async def put(self, data: bytes) -> str:
        return str(await _call(self.handle.put(to_js(data))))

    async def get(self, key: str) -> bytes:
        found = await _call(self.handle.get(check_key(key)))
        return bytes(found.to_bytes())

    async def has(self, key: str) -> bool:
        return bool(await _call(self.handle.has(check_key(key))))

    async def keys(self) -> list[str]:
        return [str(key) for key in await _call(self.handle.keys())]

    async def delete(self, key: str) -> None:
        await _call(self.handle.delete(check_key(key)))


async def _call(promise: Any) -> Any:
    """The promise's value; the page's store errors (named as ours: app/src/store.js) as ours."""
    try:
        return await promise
    except JsException as error:
        raise _translated(error) from None


def _translated(error: JsException) -> Exception:
    detail: Any = getattr(error, "detail", None)
    if detail is None:
        return StoreError(f"{error.name}: {error.message}")
    if error.name == "MissingObject":
        return MissingObject(str(detail.key), str(detail.where))
    if error.name == "CorruptObject":
        return CorruptObject(str(detail.key), str(detail.where), str(detail.found), int(detail.size))
    if error.name == "StoreFull":
        return StoreFull(str(detail.key), int(detail.size), str(detail.where), str(detail.why))
    if error.name == "BadKey":
        return BadKey(str(detail.key))
    return StoreError(f"{error.name}: {error.message}")
