"""Validation errors that name exactly what is wrong and where: node id, port or field, reason."""

from __future__ import annotations

from dataclasses import dataclass


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
