"""Pinned runs: what a manifest or a share link claims, compared claim by claim with what a re-run
recomputed, and with the checkpoint objects a store holds.

`differences(pinned, recomputed, unchecked)` walks the pinned JSON (a manifest's `manifest_json`, a link's
`link_json`) against the recomputed JSON in the same layout and returns one Difference per field path that
differs, is missing from one side or is added on the other. A pinned path listed in `unchecked` is never
compared: it is returned as not checked, with the reason, so nothing is accepted silently.

`check_stored(store, pinned)` reads every checkpoint object a manifest pins (a link pins only the final
one) and names each that is missing, corrupt, not a checkpoint, or another checkpoint than the manifest
says (its step, program, level or device).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from scellis.manifest.fields import join
from scellis.store.checkpoint import Checkpoint
from scellis.store.objects import Store, StoreError, settle
from scellis.store.tensorfile import FormatError

ABSENT: Any = object()  # a field one side has and the other has not
SHOWN = 160  # characters of a value a difference shows


def show_value(value: Any) -> str:
    if value is ABSENT:
        return "nothing"
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(", ", ": "))
    return text if len(text) <= SHOWN else text[: SHOWN - 1] + "…"


@dataclass(frozen=True)
class Difference:
    """One claim (`path`, as in the manifest's JSON) whose pinned value is not what was found (`found`):
    recomputed by the re-run, or read from the store (`source`)."""

    path: str
    pinned: Any
    found: Any
    source: str = "recomputed"

    def __str__(self) -> str:
        if self.source != "recomputed":
            return f"{self.path}: pinned {show_value(self.pinned)}; {self.source}: {self.found}"
        line = f"{self.path}: pinned {show_value(self.pinned)}, recomputed {show_value(self.found)}"
        numbers = (self.pinned, self.found)
        if all(isinstance(v, int | float) and not isinstance(v, bool) for v in numbers):
            line += f" (difference {self.found - self.pinned:+.3g})"
        return line


def differences(pinned: Any, recomputed: Any, unchecked: dict[str, str], path: str = "") -> list[Difference]:
    """Each field path where `pinned` and `recomputed` differ (module docstring), in the pinned order;
    the paths of `unchecked` (and everything under them) are left out. Iterative: the JSON's depth was
    bounded when it was read, and an explicit stack keeps Pyodide's small one out of it."""
    out: list[Difference] = []
    stack = [(path, pinned, recomputed)]
    while stack:
        where, want, got = stack.pop()
        if where in unchecked:
            continue
        if isinstance(want, dict) and isinstance(got, dict):
            names = [*want, *(n for n in got if n not in want)]
            stack += [(join(where, n), want.get(n, ABSENT), got.get(n, ABSENT)) for n in reversed(names)]
        elif isinstance(want, list) and isinstance(got, list):
            longest = max(len(want), len(got))
            items = [(want[i] if i < len(want) else ABSENT, got[i] if i < len(got) else ABSENT) for i in range(longest)]
            stack += [(join(where, i), w, g) for i, (w, g) in reversed(list(enumerate(items)))]
        elif want is ABSENT or got is ABSENT or type(want) is not type(got) or want != got:
            out.append(Difference(where, want, got))
    return out


def unchecked_lines(unchecked: dict[str, str], pinned: dict[str, Any]) -> list[str]:
    """The claims left unchecked, grouped by why: one line per reason (only paths the run pins)."""
    by_reason: dict[str, list[str]] = {}
    for path, reason in unchecked.items():
        if _has(pinned, path):
            by_reason.setdefault(reason, []).append(path)
    return [f"not checked: {', '.join(paths)} ({reason})" for reason, paths in by_reason.items()]


def _has(value: Any, path: str) -> bool:
    """Whether `path` (as `join` writes it, for object fields) names a field of `value`; list indexes are
    taken as present (they are only listed when the caller found them)."""
    head = path.split("[", maxsplit=1)[0]
    for name in head.split("."):
        if not isinstance(value, dict) or name not in value:
            return False
        value = value[name]
    return True


@dataclass(frozen=True)
class StoredClaim:
    """A checkpoint object the run pins: where the manifest names it, its key and what it must be."""

    path: str
    key: str
    step: int | None  # the step it was written at (None: not pinned)


async def check_stored(
    store: Store, claims: list[StoredClaim], *, program: str | None, level: str, device: str, where: str
) -> list[Difference]:
    """Each pinned checkpoint object of `claims` that `store` (described as `where`) does not hold as the
    manifest says: missing, corrupt, not a checkpoint, or a checkpoint of another step, program (when
    `program`, a program key, is pinned), level or device."""
    out = []
    for claim in claims:
        found = await _read_checkpoint(store, claim.key)
        if isinstance(found, str):
            out.append(Difference(claim.path, claim.key, found, where))
            continue
        seen = [
            ("step", claim.step, found.step),
            ("program key", program, found.program),
            ("level", level, found.level.value),
            ("device", device, found.device),
        ]
        for what, want, got in seen:
            if want is not None and want != got:
                said = f"the object there is a checkpoint of {what} {show_value(got)}, not {show_value(want)}"
                out.append(Difference(claim.path, claim.key, said, where))
    return out


async def _read_checkpoint(store: Store, key: str) -> Checkpoint | str:
    """The checkpoint stored under `key`, or why there is none (missing, corrupt, not a checkpoint)."""
    try:
        data = await settle(store.get(key))
    except StoreError as error:
        return str(error)
    except OSError as error:  # a folder where the object should be, a file that cannot be read
        return f"the object cannot be read ({error.strerror or error})"
    try:
        return Checkpoint.from_bytes(data)
    except (FormatError, ValueError, RecursionError) as error:
        return f"the object is not a checkpoint ({error})"
