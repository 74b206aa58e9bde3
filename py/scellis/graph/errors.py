"""Validation errors that name exactly what is wrong and where: node id, port or field, reason."""

from __future__ import annotations

import reprlib
from dataclasses import dataclass
from typing import Any


class _Short(reprlib.Repr):
    """repr() cut to a readable length; never fails (huge ints, deep nesting, odd objects)."""

    def __init__(self) -> None:
        super().__init__()
        self.maxlevel, self.maxlist, self.maxdict, self.maxstring, self.maxlong, self.maxother = 3, 6, 6, 60, 40, 60

    def repr_int(self, x: int, level: int) -> str:
        if x.bit_length() > 128:  # str() of a huge int is slow, and refused past 4300 digits
            return f"{'-' if x < 0 else ''}<an integer of {x.bit_length()} bits>"
        return super().repr_int(x, level)


_SHORT = _Short()


def show(value: Any) -> str:
    """A value as an issue message quotes it: its repr, shortened."""
    try:
        return _SHORT.repr(value)
    except Exception:  # a message must never fail; the type still says what it was
        return f"<{type(value).__name__}>"


@dataclass(frozen=True)
class Issue:
    """One problem in a program. `path` is the JSON location, e.g. `nodes[3].params.features`."""

    path: str
    message: str
    node: str | None = None
    port: str | None = None

    def __str__(self) -> str:
        where = f"node {self.node!r}" if self.node is not None else self.path
        if self.node is not None and self.port is not None:
            where += f", port {self.port!r}"
        elif self.node is not None and self.path:
            where += f" ({self.path})"
        return f"{where}: {self.message}"

    def to_json(self) -> dict[str, str | None]:
        return {"path": self.path, "node": self.node, "port": self.port, "message": self.message}


class ProgramError(ValueError):
    """Every problem found in a program at once (never just the first)."""

    def __init__(self, issues: list[Issue]) -> None:
        self.issues = list(issues)
        lines = "\n".join(f"  - {issue}" for issue in self.issues)
        super().__init__(f"the program has {len(self.issues)} problem(s):\n{lines}")
