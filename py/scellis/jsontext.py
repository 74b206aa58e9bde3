"""JSON text from outside (files, links, stored objects) parsed with bounds, or refused by name.

`parse(text, what=...)` returns what `json.loads` would, and guarantees:
- text nested deeper than `max_depth` (64 unless given) arrays/objects is refused before parsing, so no
  reader downstream (validators, the parser's own recursion, Pyodide's smaller stack) ever recurses on it;
- every refusal is a `JsonTextError` (a ValueError) whose message names `what` and where (line, column):
  bad syntax, too deep, not text (bytes that are not UTF-8), NaN/Infinity literals;
- nothing else escapes: no RecursionError, no JSONDecodeError, no UnicodeDecodeError.
"""

from __future__ import annotations

import json
import re
from typing import Any

MAX_DEPTH = 64
# A JSON string (escapes included) or one bracket: the depth scan steps over strings whole.
_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.DOTALL)


class JsonTextError(ValueError):
    """JSON text that cannot be read; the message names what it was and where the fault is."""

    def __init__(self, what: str, message: str) -> None:
        super().__init__(f"{what}: {message}")
        self.what = what
        self.reason = message


def _where(text: str, pos: int) -> str:
    line = text.count("\n", 0, pos) + 1
    column = pos - (text.rfind("\n", 0, pos) + 1) + 1
    return f"line {line}, column {column}"


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def nesting_depth(text: str, limit: int = MAX_DEPTH) -> tuple[int, int]:
    """(deepest nesting reached, position where it first passed `limit`, or -1), scanning without recursion."""
    depth = deepest = 0
    for match in _TOKENS.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > deepest:
                deepest = depth
                if depth > limit:
                    return deepest, match.start()
        elif token in "]}":
            depth -= 1
    return deepest, -1


def parse(text: str | bytes, *, what: str, max_depth: int = MAX_DEPTH) -> Any:
    """The value of JSON `text`; `what` names it in any error (e.g. "program file p.json")."""
    if isinstance(text, (bytes, bytearray, memoryview)):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as err:
            raise JsonTextError(what, f"not UTF-8 text (byte {err.start})") from None
    if not isinstance(text, str):
        raise JsonTextError(what, f"expected JSON text, got {type(text).__name__}")
    _, too_deep = nesting_depth(text, max_depth)
    if too_deep >= 0:
        raise JsonTextError(what, f"nested deeper than {max_depth} levels at {_where(text, too_deep)}")
    try:
        return json.loads(text, parse_constant=_refuse_constant)
    except json.JSONDecodeError as err:
        raise JsonTextError(what, f"{err.msg} at {_where(text, err.pos)}") from None
    except ValueError as err:  # NaN/Infinity, or an integer too long for int()
        raise JsonTextError(what, str(err)) from None
    except RecursionError:  # cannot happen below max_depth; kept so nothing raw escapes
        raise JsonTextError(what, "nested too deeply to read") from None
