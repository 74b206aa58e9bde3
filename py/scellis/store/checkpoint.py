"""Checkpoints: everything a run needs to continue exactly, as one tensor file, stored under its hash.

The tensors (parameters and optimizer state, by their input names) are the file's tensors; the rest is
its `__metadata__`, one entry per field, each value the field's JSON text (compact, sorted keys, so the
same checkpoint always has the same bytes and key). Resuming takes a key and either returns the
checkpoint the run expects or raises ResumeError saying what differs: there is no fresh-start fallback.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any

from scellis.jsontext import JsonTextError, parse
from scellis.levels import Level
from scellis.rng import RngState
from scellis.store.history import History, LogRef, legacy_history, read_history
from scellis.store.objects import BadKey, CorruptObject, MissingObject, Store, StoreError, check_key, key_of, settle
from scellis.store.tensorfile import FormatError, Tensor, decode, encode

FORMAT = "scellis.checkpoint/2"
FIELDS = ("format", "program", "level", "device", "step", "epoch", "cursor", "rng", "loop", "log")
# Read, never written: its loop state held the decision log and the earlier keys, growing with the run.
# It resumes as a saved state: with its log and earlier checkpoints, as a history of its own (no base).
LEGACY = "scellis.checkpoint/1"


class ResumeError(RuntimeError):
    """A run cannot resume from the key it was given. `reasons` says why, one entry per fault:
    'bad key', 'missing', 'corrupt', 'not a checkpoint', 'program' or 'level'."""

    def __init__(self, key: object, reasons: list[str], details: list[str]) -> None:
        super().__init__(f"cannot resume from {key}: " + "; ".join(details))
        self.key, self.reasons = key, reasons


@dataclass(frozen=True)
class Checkpoint:
    """A run's state between two steps.

    program: the key of the program the run executes (ir.key: 'sha256:…').
    level: the determinism level it runs at; device: the device's name, as recorded.
    step: steps taken so far; epoch: the epoch under way; cursor: the position inside that epoch
    (what the loop counts there: examples or batches taken).
    rng: the seed and each substream's next position. loop: the loop's own state (learning rate,
    plateau counters, best metric...), a JSON object kept as given.
    tensors: parameters and optimizer state by input name.
    history: the decision log and earlier checkpoints (store.history), kept as objects of their own: the
    metadata holds only its reference, so its size does not grow with the run. A checkpoint read from
    bytes alone holds that reference (a LogRef); `load` reads the history itself."""

    program: str
    level: Level
    device: str
    step: int
    epoch: int
    cursor: int
    rng: RngState
    loop: dict[str, Any] = field(default_factory=dict)
    tensors: dict[str, Tensor] = field(default_factory=dict)
    history: History | LogRef = field(default_factory=History)

    def __post_init__(self) -> None:
        try:
            check_key(self.program)
        except BadKey:
            raise ValueError(
                f"program must be a program key ('sha256:' and 64 hex digits), not {self.program!r}"
            ) from None
        if not isinstance(self.level, Level):
            raise ValueError(f"level must be a Level, not {self.level!r}")
        if not isinstance(self.device, str):
            raise ValueError(f"device must be a name, not {self.device!r}")
        for name in ("step", "epoch", "cursor"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"{name} must be a non-negative integer, not {value!r}")
        if not isinstance(self.rng, RngState):
            raise ValueError(f"rng must be an RngState, not {self.rng!r}")
        if not isinstance(self.loop, dict):
            raise ValueError(f"loop must be a JSON object, not {self.loop!r}")
        if not isinstance(self.history, History | LogRef):
            raise ValueError(f"history must be a History or a LogRef, not {self.history!r}")

    def metadata(self) -> dict[str, str]:
        values = {
            "format": FORMAT,
            "program": self.program,
            "level": self.level.value,
            "device": self.device,
            "step": self.step,
            "epoch": self.epoch,
            "cursor": self.cursor,
            "rng": self.rng.to_json(),
            "loop": self.loop,
            "log": self.history.reference().to_json(),
        }
        return {name: _json(name, value) for name, value in values.items()}

    def to_bytes(self) -> bytes:
        return encode(self.tensors, self.metadata())

    @classmethod
    def from_bytes(cls, data: bytes) -> Checkpoint:
        """The checkpoint in a tensor file; FormatError naming the field that is wrong otherwise."""
        tensors, metadata = decode(data)
        legacy = "log" not in metadata and _parse("format", metadata.get("format", "null")) == LEGACY
        fields = tuple(name for name in FIELDS if name != "log") if legacy else FIELDS
        if set(metadata) != set(fields):
            missing, extra = sorted(set(fields) - set(metadata)), sorted(set(metadata) - set(fields))
            raise FormatError(f"checkpoint metadata: missing {missing}, unexpected {extra}")
        values = {name: _parse(name, metadata[name]) for name in fields}
        history: History | LogRef
        if legacy:
            values["format"], (values["loop"], history) = FORMAT, _upgraded(values["loop"])
        else:
            history = LogRef.from_json(values["log"])
        if values["format"] != FORMAT:
            raise FormatError(f"checkpoint metadata 'format' is {_shown(values['format'])}, expected {FORMAT!r}")
        levels = {level.value: level for level in Level}
        if not isinstance(values["level"], str) or values["level"] not in levels:
            raise FormatError(
                f"checkpoint metadata 'level' is {_shown(values['level'])}, not one of {', '.join(levels)}"
            )
        if not isinstance(values["rng"], dict):
            raise FormatError(f"checkpoint metadata 'rng' must be a JSON object, not {_shown(values['rng'])}")
        try:
            return cls(
                program=values["program"],
                level=levels[values["level"]],
                device=values["device"],
                step=values["step"],
                epoch=values["epoch"],
                cursor=values["cursor"],
                rng=RngState.from_json(values["rng"]),
                loop=values["loop"],
                tensors=tensors,
                history=history,
            )
        except ValueError as error:
            raise FormatError(f"checkpoint metadata: {_shown(str(error), 300)}") from None


async def save(store: Store, checkpoint: Checkpoint) -> str:
    """Store `checkpoint` and return its key (the same state always has the same key). Its history's
    segment is stored first, so no stored checkpoint ever names a segment that is not there."""
    if isinstance(checkpoint.history, History):
        await settle(store.put(checkpoint.history.segment()))
    return await settle(store.put(checkpoint.to_bytes()))


async def load(store: Store, key: str, *, expect_program: str, expect_level: Level) -> Checkpoint:
    """The checkpoint stored under `key`, for a run of `expect_program` at `expect_level`; ResumeError
    naming every difference otherwise (a malformed, missing or corrupt object, bytes that are not a
    checkpoint, another program, another level)."""
    try:
        data = await settle(store.get(key))
    except StoreError as error:
        reason = {BadKey: "bad key", MissingObject: "missing", CorruptObject: "corrupt"}.get(type(error), "store")
        raise ResumeError(key, [reason], [str(error)]) from error
    try:
        checkpoint = Checkpoint.from_bytes(data)
    except FormatError as error:
        raise ResumeError(key, ["not a checkpoint"], [f"the object is not a checkpoint ({error})"]) from error
    legacy = isinstance(checkpoint.history, History)  # an earlier format's, its history inside it
    if not legacy and key_of(checkpoint.to_bytes()) != key:  # resuming reads what the run would write again
        detail = "the object is a tensor file, but not a checkpoint in its canonical form"
        raise ResumeError(key, ["not a checkpoint"], [detail])
    if not legacy:
        checkpoint = await _with_history(store, key, checkpoint)
    reasons, details = [], []
    if checkpoint.program != expect_program:
        reasons.append("program")
        details.append(f"it was saved by program {checkpoint.program}, and this run's program is {expect_program}")
    if checkpoint.level is not expect_level:
        reasons.append("level")
        details.append(f"it was saved at level {checkpoint.level.value}, and this run is at level {expect_level.value}")
    if reasons:
        raise ResumeError(key, reasons, details)
    return checkpoint


async def _with_history(store: Store, key: str, checkpoint: Checkpoint) -> Checkpoint:
    """`checkpoint` with its history read from `store`; ResumeError naming the segment at fault."""
    try:
        return replace(checkpoint, history=await read_history(store, checkpoint.history.reference()))
    except StoreError as error:
        reason = {MissingObject: "missing", CorruptObject: "corrupt"}.get(type(error), "store")
        raise ResumeError(key, [reason], [f"its history cannot be read: {error}"]) from error
    except FormatError as error:
        raise ResumeError(key, ["not a checkpoint"], [f"its history is not valid: {error}"]) from error


def _upgraded(loop: object) -> tuple[dict[str, Any], History]:
    """A LEGACY checkpoint's loop state as this format's (no best or loss known; not a rule's, since its key
    in this format is another), and its history; FormatError naming what is malformed."""
    state = loop.get("state") if isinstance(loop, dict) else None
    if not isinstance(loop, dict) or not isinstance(state, dict):
        raise FormatError("checkpoint metadata 'loop' (format 1) has no 'state' object")
    history = legacy_history(state.get("events"), loop.get("checkpoints", []))
    state = {k: v for k, v in state.items() if k != "events"}
    order = loop.get("order_drawn") is True
    return {"state": state, "order_drawn": order, "by_rule": False, "best": None, "loss": None}, history


def _json(name: str, value: object) -> str:
    try:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as error:
        raise ValueError(f"checkpoint field {name!r} is not JSON: {error}") from None


def _parse(name: str, text: str) -> Any:
    try:
        value = parse(text, what=f"checkpoint metadata {name!r}")
        _json(name, value).encode()  # an escaped lone surrogate parses, but is no text a checkpoint can hold
    except (JsonTextError, ValueError) as error:  # UnicodeEncodeError is a ValueError
        raise FormatError(_shown(str(error), 300)) from None
    return value


def _shown(value: object, limit: int = 80) -> str:
    """`value` as an error message quotes it: its repr, cut short (forged metadata may be huge)."""
    text = value if isinstance(value, str) and limit > 80 else repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"
