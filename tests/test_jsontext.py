"""scellis.jsontext: JSON from outside is parsed with bounds or refused with a named error."""

from __future__ import annotations

import json
import random
from collections.abc import Callable

import pytest

from scellis.jsontext import MAX_DEPTH, JsonTextError, nesting_depth, parse


def test_parses_what_json_parses() -> None:
    text = '{"a": [1, 2.5, "x]}{[", null, true], "b": {"c": "\\"["}}'
    assert parse(text, what="t") == json.loads(text)


@pytest.mark.parametrize("opener", ["[", '{"k":'])
def test_deep_nesting_is_refused_by_name_not_recursion(opener: str) -> None:
    closer = "]" if opener == "[" else "}"
    text = opener * 100_000 + "1" + closer * 100_000
    column = len(opener) * MAX_DEPTH + 1
    message = rf"^program\.json: nested deeper than 64 levels at line 1, column {column}$"
    with pytest.raises(JsonTextError, match=message):
        parse(text, what="program.json")
    ok = opener * MAX_DEPTH + "1" + closer * MAX_DEPTH
    assert nesting_depth(ok)[0] == MAX_DEPTH
    parse(ok, what="t")


def test_brackets_inside_strings_do_not_count() -> None:
    assert parse(json.dumps(["[" * 1000]), what="t") == ["[" * 1000]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"a": 1,}', r"^f: .* at line 1, column 9$"),
        ('{\n  "a": NaN}', r"^f: NaN is not JSON$"),
        (b"\xff\xfe", r"^f: not UTF-8 text \(byte 0\)$"),
        ("", r"^f: Expecting value at line 1, column 1$"),
    ],
)
def test_refusals_name_what_and_where(text: str | bytes, message: str) -> None:
    with pytest.raises(JsonTextError, match=message):
        parse(text, what="f")


def test_random_mutations_raise_only_the_named_error(fault_log: Callable[..., None]) -> None:
    rng = random.Random(19)
    seed = json.dumps({"nodes": [{"id": "a", "params": {"n": [1, 2, {"x": "y"}]}}], "edges": []})
    alphabet = '[]{}",:0123456789.eE+-truefalsnul \\\n\x00\u00e9'
    tried = refused = 0
    for _ in range(2000):
        chars = list(seed)
        for _ in range(rng.randint(1, 8)):
            i = rng.randrange(len(chars) + 1)
            op = rng.random()
            if op < 0.4:
                chars.insert(i, rng.choice(alphabet) * rng.choice([1, 1, 3, 200]))
            elif op < 0.7 and chars:
                del chars[min(i, len(chars) - 1)]
            elif chars:
                chars[min(i, len(chars) - 1)] = rng.choice(alphabet)
        tried += 1
        try:
            parse("".join(chars), what="m")
        except JsonTextError:
            refused += 1
    fault_log("json-text-mutations", inputs=tried, refused_by_name=refused, crashes=0)
    assert tried == 2000 and 0 < refused < tried
