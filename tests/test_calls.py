"""The seam between the page and the engine (scellis.calls): every call of the table resolves to a function
taking the arguments its entry documents, `answer` hands the page's keywords on (the data's files as bytes),
and every name the page calls is the table's or a handler of the engine's worker (app/src/enginehost.js)."""

from __future__ import annotations

import asyncio
import inspect
import json
import re
from pathlib import Path

import pytest

from scellis.app import data_json, palette_json
from scellis.calls import CALLS, answer, function_of
from scellis.datasets import digits_csv, read_digits, to_files

ROOT = Path(__file__).resolve().parents[1]
SOURCE = (ROOT / "py" / "scellis" / "calls.py").read_text()
# an entry's comment, "# (arguments) -> answer", possibly on two lines, then the entry itself
ENTRY = re.compile(r"# \(([^)]*)\)[^\n]*\n(?:\s*#[^\n]*\n)*\s*\"(\w+)\": \"([\w.:]+)\",")


def documented() -> dict[str, list[str]]:
    return {name: [a.strip() for a in args.split(",") if a.strip()] for args, name, _ in ENTRY.findall(SOURCE)}


def test_every_entry_documents_the_arguments_its_function_takes() -> None:
    assert set(documented()) == set(CALLS)
    for name, arguments in documented().items():
        parameters = inspect.signature(function_of(name)).parameters
        assert set(arguments) <= set(parameters), name
        required = {p for p, v in parameters.items() if v.default is inspect.Parameter.empty}
        assert required <= set(arguments), f"{name}: {required - set(arguments)} undocumented"


def test_answer_passes_keywords_and_gives_the_files_as_bytes() -> None:
    files = to_files(*read_digits(digits_csv().read_bytes()))
    views = {name: memoryview(data) for name, data in files.items()}  # as Pyodide's toPy gives buffers
    assert asyncio.run(answer("dataInfo", {"source": "site", "files": views})) == data_json("site", files)
    assert asyncio.run(answer("palette", {})) == palette_json()
    assert json.loads(asyncio.run(answer("check", {"program": "{"})))["issues"][0]["path"] == ""


def test_a_name_not_in_the_table_is_refused() -> None:
    with pytest.raises(KeyError):
        asyncio.run(answer("python", {"code": "1"}))


def worker_handlers() -> set[str]:
    """The calls enginehost.js answers itself: its handlers() and the test build's hooks."""
    text = (ROOT / "app" / "src" / "enginehost.js").read_text()
    handlers = text[text.index("  handlers() {") : text.index("\n  }\n", text.index("  handlers() {"))]
    hooks = text[text.index("function testHooks(") : text.index("\n}\n", text.index("function testHooks("))]
    return set(re.findall(r"^      (\w+):", handlers, re.M)) | set(re.findall(r"^    (\w+):", hooks, re.M))


def test_every_name_the_page_calls_is_answered() -> None:
    called = set()
    for path in [*(ROOT / "app").rglob("*.js"), *(ROOT / "app").rglob("*.jsx")]:
        called |= set(re.findall(r"\.call\(\"(\w+)\"", path.read_text()))
    assert {"plan", "guide", "openRun", "advance", "boot"} <= called  # the searches find what they look for
    assert {"boot", "advance", "openRun", "python", "script"} <= worker_handlers()
    assert called <= set(CALLS) | worker_handlers(), called - set(CALLS) - worker_handlers()
    assert not set(CALLS) & (worker_handlers() - {"openRun", "openReplay"})  # the worker shadows only these
