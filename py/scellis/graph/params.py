"""Typed node parameters: what each op accepts, its default, its allowed range, and how a JSON value is
checked and normalised (e.g. a kernel size `3` becomes `(3, 3)`)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from scellis.graph.errors import show

REQUIRED: Any = object()  # marks a parameter without a default
INT_LIMIT = 2**31 - 1  # sizes, axes, counts and steps are int32 on every device: larger integers are refused


@dataclass(frozen=True)
class Param:
    """One parameter. kinds: int, float, bool, str (one of `choices`; a name when there are none), key (a
    tensor's name in a weights file), pair (int or [int, int]), ints (list of ints), axes (list of ints or
    null for all axes)."""

    name: str
    kind: str
    default: Any = REQUIRED
    low: float | None = None
    high: float | None = None
    choices: tuple[str, ...] = ()
    doc: str = ""
    optional: bool = False  # null is allowed (and means what `doc` says)

    def describe(self) -> dict[str, Any]:
        """JSON-ready description for the app's node palette."""
        out: dict[str, Any] = {"name": self.name, "kind": self.kind, "doc": self.doc}
        if self.default is not REQUIRED:
            out["default"] = list(self.default) if isinstance(self.default, tuple) else self.default
        for key, value in (("low", self.low), ("high", self.high)):
            if value is not None:
                out[key] = value
        if self.choices:
            out["choices"] = list(self.choices)
        return out


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _range_error(p: Param, value: float) -> str | None:
    if isinstance(value, int) and not -INT_LIMIT <= value <= INT_LIMIT:
        return f"must be an integer from {-INT_LIMIT} to {INT_LIMIT}, got {show(value)}"
    if p.low is not None and value < p.low:
        return f"must be at least {p.low:.15g}, got {show(value)}"
    if p.high is not None and value > p.high:
        return f"must be at most {p.high:.15g}, got {show(value)}"
    return None


Checked = tuple[Any, str | None]


def _int(p: Param, value: Any) -> Checked:
    if not _is_int(value):
        return None, f"must be an integer, got {show(value)}"
    return value, _range_error(p, value)


def _float(p: Param, value: Any) -> Checked:
    number = None
    if isinstance(value, float) or _is_int(value):
        try:
            number = float(value)
        except OverflowError:  # an integer beyond the float range
            number = None
    if number is None or not math.isfinite(number):
        return None, f"must be a finite number, got {show(value)}"
    return number, _range_error(p, number)


def _bool(p: Param, value: Any) -> Checked:
    return value, None if isinstance(value, bool) else f"must be true or false, got {show(value)}"


NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]{0,63}\Z")


def _str(p: Param, value: Any) -> Checked:
    if not p.choices:  # a name (e.g. a substream's)
        if isinstance(value, str) and NAME.match(value):
            return value, None
        return None, f"must be a name of letters, digits, _ or - (not starting with a digit), got {show(value)}"
    if not isinstance(value, str) or value not in p.choices:
        return None, f"must be one of {', '.join(map(repr, p.choices))}, got {show(value)}"
    return value, None


KEY_LIMIT = 256  # characters of a tensor's name in a weights file


def _key(p: Param, value: Any) -> Checked:
    if isinstance(value, str) and 0 < len(value) <= KEY_LIMIT and value.isprintable():
        return value, None
    return None, f"must be a tensor's name: 1 to {KEY_LIMIT} printable characters, got {show(value)}"


def _pair(p: Param, value: Any) -> Checked:
    pair = (value, value) if _is_int(value) else tuple(value) if isinstance(value, list) else None
    if pair is None or len(pair) != 2 or not all(_is_int(v) for v in pair):
        return None, f"must be an integer or a list of two integers, got {show(value)}"
    errors = [e for e in (_range_error(p, v) for v in pair) if e]
    return pair, errors[0] if errors else None


def _ints(p: Param, value: Any) -> Checked:
    if not isinstance(value, list) or not all(_is_int(v) for v in value):
        return None, f"must be a list of integers, got {show(value)}"
    errors = [e for e in (_range_error(p, v) for v in value) if e]
    return tuple(value), errors[0] if errors else None


CHECKS = {
    "int": _int, "float": _float, "bool": _bool, "str": _str, "key": _key, "pair": _pair, "ints": _ints, "axes": _ints,
}  # fmt: skip


def check(p: Param, value: Any) -> Checked:
    """The normalised value, or an error message (then the value is meaningless)."""
    if value is None and (p.optional or p.kind == "axes"):
        return None, None
    return CHECKS[p.kind](p, value)
