"""An awaitable that is already done: what a synchronous device returns where the browser's devices
return a pending promise, so the session code awaits both the same way."""

from __future__ import annotations

from collections.abc import Generator
from typing import Generic, TypeVar

T = TypeVar("T")


class Ready(Generic[T]):
    def __init__(self, value: T) -> None:
        self.value = value

    def __await__(self) -> Generator[None, None, T]:
        return self.value
        yield  # a generator, so `await` works
