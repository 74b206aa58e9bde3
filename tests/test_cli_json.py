"""Every `scellis` command that reads a JSON file (compile, plan and run a program file; verify a manifest
or a share link) refuses bad JSON text by name, with exit 2: nested deeper than scellis.jsontext allows,
not UTF-8, not JSON, NaN. Never a raw exception (RecursionError, UnicodeDecodeError), whatever the depth."""

from __future__ import annotations

import base64
import json
import zlib
from pathlib import Path

import pytest

from scellis import cli
from scellis.examples import digits_mlp
from scellis.jsontext import MAX_DEPTH

DEEP = "[" * 100_000 + "]" * 100_000  # beyond any parser's recursion
SHALLOW_DEEP = "[" * 900 + "]" * 900  # json.loads reads it; what reads the value after must not recurse on it

COMMANDS = {
    "compile": ["compile", "{path}", "--level", "debug"],
    "plan": ["plan", "{path}", "--device", "cpu", "--level", "debug"],
    "run": ["run", "{path}", "--device", "cpu", "--determinism", "debug", "--seed", "1", "--store", "{store}"],
    "verify": ["verify", "{path}"],
}


def _program_with(value: str) -> str:
    """The digits MLP's JSON with its learning rate replaced by the JSON text `value`."""
    return json.dumps(digits_mlp()).replace('"lr": 0.003', f'"lr": {value}')


def _texts() -> dict[str, bytes]:
    return {
        "deep list": DEEP.encode(),
        "deep object": ('{"a":' * 100_000 + "1" + "}" * 100_000).encode(),
        "deep inside": _program_with(SHALLOW_DEEP).encode(),
        "just too deep": _program_with("[" * MAX_DEPTH + "]" * MAX_DEPTH).encode(),
        "not UTF-8": b'{"name": "\xff\xfe"}',
        "not JSON": b'{"name": ',
        "NaN": _program_with("NaN").encode(),
    }


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize("kind", list(_texts()))
def test_bad_json_files_are_refused_by_name(
    command: str, kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "input.json"
    path.write_bytes(_texts()[kind])
    argv = [a.format(path=path, store=tmp_path / "store") for a in COMMANDS[command]]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"scellis {command}: "), err
    assert str(path) in err
    if "deep" in kind:
        assert "deeper than 64 levels" in err, err


def _link(text: str) -> str:
    return "http://127.0.0.1:8000/#run=" + base64.urlsafe_b64encode(zlib.compress(text.encode())).rstrip(b"=").decode()


@pytest.mark.parametrize("text", [DEEP, _program_with(SHALLOW_DEEP)], ids=["deep", "deep inside"])
def test_a_deeply_nested_share_link_is_refused_by_name(text: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["verify", _link(text)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("scellis verify: the share link: the share link has 1 problem(s):"), err
    assert "deeper than 64 levels" in err
