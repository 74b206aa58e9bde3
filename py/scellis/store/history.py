"""A run's history beside its checkpoints: the decision log and the keys of the checkpoints its loop program
wrote, kept out of each checkpoint's metadata so that metadata stays the same size however long the run.

The history is a chain of small content-addressed objects (segments). A segment holds the log entries and
the rule checkpoints' (step, key) written since the segment before it, and that segment's key (`previous`,
null for the first): a checkpoint names the segment that ends its history, with the counts of entries and
keys it holds in all (a `LogRef`). Segments are written at checkpoints only; a rule checkpoint's segment
becomes the `base` the next one extends, a page's or a final checkpoint's does not, so saving a state
never changes what a later rule checkpoint holds (the same run always writes the same keys).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from scellis.jsontext import JsonTextError, parse
from scellis.store.objects import BadKey, Store, check_key, key_of, settle
from scellis.store.tensorfile import FormatError

FORMAT = "scellis.history/1"
SEGMENT_FIELDS = ("checkpoints", "events", "format", "previous")

Entry = tuple[int, int, str]  # a log entry: step, epoch, text
Written = tuple[int, str]  # a rule checkpoint: step, key


@dataclass(frozen=True)
class LogRef:
    """What a checkpoint's metadata holds of its history: the key of its last segment and the whole
    history's number of log entries and of earlier rule checkpoints."""

    key: str
    events: int
    written: int

    def reference(self) -> LogRef:
        return self

    def to_json(self) -> dict[str, Any]:
        return {"events": self.events, "key": self.key, "written": self.written}

    @classmethod
    def from_json(cls, value: object) -> LogRef:
        """The reference in a checkpoint's `log` field; FormatError naming what is wrong."""
        if not isinstance(value, dict) or set(value) != {"events", "key", "written"}:
            raise FormatError(
                f"checkpoint metadata 'log' must be an object of key, events, written, not {value!r}"[:300]
            )
        for name in ("events", "written"):
            if not _natural(value[name]):
                raise FormatError(f"checkpoint metadata 'log.{name}' must be a non-negative integer")
        try:
            return cls(check_key(value["key"]), value["events"], value["written"])
        except BadKey as error:
            raise FormatError(f"checkpoint metadata 'log.key': {error}") from None


@dataclass(frozen=True)
class History:
    """The whole decision log and rule checkpoints up to a checkpoint, and the segment (`base`, covering
    the first `base_events` entries and `base_written` keys) that this history's own segment extends."""

    events: tuple[Entry, ...] = ()
    written: tuple[Written, ...] = ()
    base: str | None = None
    base_events: int = 0
    base_written: int = 0

    def segment(self) -> bytes:
        """This history's segment: what it holds beyond its base (canonical JSON bytes)."""
        value = {
            "format": FORMAT,
            "previous": self.base,
            "events": [list(e) for e in self.events[self.base_events :]],
            "checkpoints": [list(w) for w in self.written[self.base_written :]],
        }
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()

    def reference(self) -> LogRef:
        return LogRef(key_of(self.segment()), len(self.events), len(self.written))


async def read_history(store: Store, ref: LogRef) -> History:
    """The history `ref` names, read segment by segment from `store` and checked against it (its
    reference() is `ref`); StoreError for a segment missing or corrupt, FormatError for one that is not a
    segment (in its canonical form) or a chain that disagrees with `ref`."""
    segments: list[dict[str, Any]] = []
    key: str | None = ref.key
    while key is not None:
        if len(segments) > ref.written + 1:  # each segment after the head holds a rule checkpoint's key
            raise FormatError(f"the history {ref.key} has more segments than its {ref.written} checkpoints allow")
        segment = _segment(key, await settle(store.get(key)))
        segments.append(segment)
        key = segment["previous"]
    events = tuple(e for s in reversed(segments) for e in s["events"])
    written = tuple(w for s in reversed(segments) for w in s["checkpoints"])
    if (len(events), len(written)) != (ref.events, ref.written):
        raise FormatError(
            f"the history {ref.key} holds {len(events)} log entries and {len(written)} checkpoints, "
            f"the checkpoint says {ref.events} and {ref.written}"
        )
    steps = [step for step, _ in written]
    if steps != sorted(steps):
        raise FormatError(f"the history {ref.key} lists its checkpoints out of step order")
    head = segments[0]
    covered = (len(events) - len(head["events"]), len(written) - len(head["checkpoints"]))
    history = History(events, written, head["previous"], *covered)
    if history.reference() != ref:
        raise FormatError(f"the history segment {ref.key} is not in its canonical form")
    return history


def legacy_history(events: object, written: object) -> History:
    """The history a checkpoint of format 1 held in its loop state (its log entries, its earlier keys)."""
    if not isinstance(events, list) or not all(_entry(e) for e in events):
        raise FormatError("checkpoint metadata 'loop.state.events' (format 1) must be a list of [step, epoch, text]")
    if not isinstance(written, list) or not all(_written(w) for w in written):
        raise FormatError("checkpoint metadata 'loop.checkpoints' (format 1) must be a list of [step, key]")
    return History(tuple((e[0], e[1], e[2]) for e in events), tuple((w[0], w[1]) for w in written))


def segment_references(data: bytes) -> str | None:
    """The segment a segment's bytes extend (None for the first); FormatError when they are not a segment."""
    return _segment("(the object)", data)["previous"]


def _segment(key: str, data: bytes) -> dict[str, Any]:
    try:
        value = parse(data, what=f"history segment {key}")
    except JsonTextError as error:
        raise FormatError(str(error)) from None
    if not isinstance(value, dict) or sorted(value) != list(SEGMENT_FIELDS) or value["format"] != FORMAT:
        raise FormatError(f"object {key} is not a history segment ({FORMAT})")
    previous = value["previous"]
    if previous is not None:
        try:
            check_key(previous)
        except BadKey as error:
            raise FormatError(f"history segment {key}: 'previous' {error}") from None
    events, written = value["events"], value["checkpoints"]
    if not isinstance(events, list) or not all(_entry(e) for e in events):
        raise FormatError(f"history segment {key}: 'events' must be a list of [step, epoch, text]")
    if not isinstance(written, list) or not all(_written(w) for w in written):
        raise FormatError(f"history segment {key}: 'checkpoints' must be a list of [step, key]")
    return {
        "previous": previous,
        "events": [(e[0], e[1], e[2]) for e in events],
        "checkpoints": [(w[0], w[1]) for w in written],
    }


def _entry(value: object) -> bool:
    return (
        isinstance(value, list)
        and len(value) == 3
        and _natural(value[0])
        and _natural(value[1])
        and isinstance(value[2], str)
    )


def _written(value: object) -> bool:
    if not (isinstance(value, list) and len(value) == 2 and _natural(value[0])):
        return False
    try:
        check_key(value[1])
    except BadKey:
        return False
    return True


def _natural(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0
