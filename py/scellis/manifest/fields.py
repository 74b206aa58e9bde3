"""Pinned runs: reading untrusted JSON field by field. Every problem becomes an Issue naming its path (as
graph.validate names a program's), and all of them are reported at once in a ManifestError.

Nothing read here is ever executed: values are checked against their expected types and bounds, and the
JSON parser refuses what JSON does not allow (NaN, Infinity), repeated fields and deep nesting.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from typing import Any

from scellis.graph.errors import Issue, show
from scellis.jsontext import MAX_DEPTH, nesting_depth
from scellis.store.objects import BadKey, check_key

MAX_TEXT = 4096  # characters of any one string field
NON_FINITE = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}  # how JSON, which has no NaN, holds one


class ManifestError(ValueError):
    """Every problem found in a manifest (or, as LinkError, a share link) at once."""

    what = "manifest"

    def __init__(self, issues: list[Issue]) -> None:
        self.issues = list(issues)
        lines = "\n".join(f"  - {issue if issue.path else issue.message}" for issue in self.issues)
        super().__init__(f"the {self.what} has {len(self.issues)} problem(s):\n{lines}")


def _no_repeats(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for name, value in pairs:
        if name in seen:
            raise ValueError(f"the field {name!r} appears twice in one object")
        seen[name] = value
    return seen


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def parse_json(text: str | bytes, limit: int, what: str) -> tuple[Any, list[Issue]]:
    """The value `text` holds, or the issues saying why it holds none (too long, not UTF-8, nested deeper
    than scellis.jsontext.MAX_DEPTH, not JSON). Nothing that reads the value recurses deeper than that."""
    if len(text) > limit:
        unit = "characters" if isinstance(text, str) else "bytes"
        return None, [Issue("", f"the {what} is {len(text):,} {unit} long; at most {limit:,} are read")]
    if not isinstance(text, str):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as error:
            return None, [Issue("", f"the {what} is not UTF-8 text ({error.reason} at byte {error.start})")]
    _, too_deep = nesting_depth(text)
    if too_deep >= 0:
        line = text.count("\n", 0, too_deep) + 1
        column = too_deep - (text.rfind("\n", 0, too_deep) + 1) + 1
        where = f"line {line}, column {column}"
        return None, [Issue("", f"the {what} nests its JSON deeper than {MAX_DEPTH} levels (at {where})")]
    try:
        return json.loads(text, object_pairs_hook=_no_repeats, parse_constant=_no_constants), []
    except RecursionError:  # cannot happen below MAX_DEPTH; kept so that nothing raw escapes
        return None, [Issue("", f"the {what} nests its JSON too deeply")]
    except ValueError as error:  # json.JSONDecodeError is one; so is an integer too long to read
        return None, [Issue("", f"the {what} is not JSON: {error}")]


def join(path: str, name: str | int) -> str:
    if isinstance(name, int):
        return f"{path}[{name}]"
    return f"{path}.{name}" if path else name


class Reader:
    """Checks values read from untrusted JSON. Each method returns the checked value, or None after adding
    an issue at `path` (so one reading finds every problem)."""

    def __init__(self) -> None:
        self.issues: list[Issue] = []

    def fail(self, path: str, message: str) -> None:
        self.issues.append(Issue(path, message))

    def record(self, value: Any, path: str, required: Iterable[str], optional: Iterable[str] = ()) -> dict | None:
        """An object with every `required` field and nothing but those and the `optional` ones; None when
        it is no object or lacks a required field (an unknown field is reported, and the rest is read)."""
        required, optional = tuple(required), tuple(optional)
        if not isinstance(value, dict):
            self.fail(path, f"must be an object, got {show(value)}")
            return None
        known = ", ".join((*required, *optional))
        for name in value:
            if name not in required and name not in optional:
                self.fail(join(path, str(name)), f"unknown field (known: {known})")
        missing = [name for name in required if name not in value]
        for name in missing:
            self.fail(join(path, name), "is missing")
        return None if missing else value

    def integer(self, value: Any, path: str, low: int = 0, high: int = 2**63 - 1) -> int | None:
        if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
            self.fail(path, f"must be an integer from {low:,} to {high:,}, got {show(value)}")
            return None
        return value

    def text(self, value: Any, path: str, limit: int = MAX_TEXT) -> str | None:
        if not isinstance(value, str) or len(value) > limit:
            self.fail(path, f"must be a string of at most {limit:,} characters, got {show(value)}")
            return None
        return value

    def maybe_text(self, value: Any, path: str) -> str | None:
        """A string, or null (returned as None: the caller tells the two apart by the value it gave)."""
        return None if value is None else self.text(value, path)

    def choice(self, value: Any, path: str, choices: Iterable[str]) -> str | None:
        options = tuple(choices)
        if value not in options or not isinstance(value, str):
            self.fail(path, f"must be one of {', '.join(options)}, got {show(value)}")
            return None
        return value

    def key(self, value: Any, path: str) -> str | None:
        """An object key: 'sha256:' and 64 lowercase hex digits."""
        try:
            return check_key(value)
        except BadKey:
            self.fail(path, f"must be a key ('sha256:' and 64 lowercase hex digits), got {show(value)}")
            return None

    def number(self, value: Any, path: str) -> float | None:
        """A number, or one of the strings 'nan', 'inf', '-inf' (a metric may not be finite)."""
        if isinstance(value, str) and value in NON_FINITE:
            return NON_FINITE[value]
        if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
            self.fail(path, f"must be a number (or 'nan', 'inf', '-inf'), got {show(value)}")
            return None
        return float(value)

    def array(self, value: Any, path: str, limit: int) -> list | None:
        if not isinstance(value, list):
            self.fail(path, f"must be a list, got {show(value)}")
            return None
        if len(value) > limit:
            self.fail(path, f"holds {len(value):,} entries; at most {limit:,} are allowed")
            return None
        return value


def number_json(value: float) -> float | str:
    """A float as JSON holds it: itself when finite, else 'nan', 'inf' or '-inf'."""
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return value
