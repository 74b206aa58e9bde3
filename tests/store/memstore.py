"""An in-memory store.Store for tests that write many checkpoints (no disk, no fsync)."""

from __future__ import annotations

from scellis.store.objects import MissingObject, check_key, key_of, verified


class MemoryStore:
    def __init__(self) -> None:
        self.objects: dict[str, bytes] = {}
        self.where = "memory"

    def put(self, data: bytes) -> str:
        key = key_of(data)
        if self.objects.get(key) != data:
            self.objects[key] = bytes(data)
        return key

    def get(self, key: str) -> bytes:
        if check_key(key) not in self.objects:
            raise MissingObject(key, self.where)
        return verified(key, self.objects[key], self.where)

    def has(self, key: str) -> bool:
        return check_key(key) in self.objects

    def keys(self) -> list[str]:
        return sorted(self.objects)

    def delete(self, key: str) -> None:
        if check_key(key) not in self.objects:
            raise MissingObject(key, self.where)
        del self.objects[key]
