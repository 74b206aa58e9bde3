"""Pinned runs: the share link. A URL whose fragment `#run=<payload>` carries a program and the settings
that reproduce its run (level, seed, device kind, epochs, steps, data versions, final key), so opening it
loads them and asks for the data; a fragment never reaches a server.

The payload is base64url (no padding) of the zlib-compressed compact JSON
{"format": "scellis.link/1", "program": ..., <pins.Settings fields>, "ran_on": ...}: `ran_on` is null for a
program not run yet, else {"device", "engine_version"}: the device's name as its checkpoints record it and
the engine's version, which a re-run needs to compare its final key and to know what the level promises.

Reading a link is reading untrusted data: its length, its characters, its compressed and inflated sizes
and every field are checked, and each problem is named (LinkError).
"""

from __future__ import annotations

import base64
import json
import re
import zlib
from dataclasses import dataclass
from typing import Any

from scellis.graph.errors import Issue, show
from scellis.manifest.fields import ManifestError, Reader, parse_json
from scellis.manifest.pins import SETTINGS_FIELDS, Settings, read_settings
from scellis.manifest.record import Manifest, read_program

FORMAT = "scellis.link/1"
MAX_PAYLOAD = 512 * 1024  # characters of the fragment's payload
MAX_JSON = 8 * 2**20  # bytes the payload may inflate to
_BASE64URL = re.compile(r"[A-Za-z0-9_-]*")


class LinkError(ManifestError):
    what = "share link"


@dataclass(frozen=True)
class RanOn:
    """Where a shared run ran: its device's name (as its checkpoints record it) and the engine's version."""

    device: str
    engine_version: str


@dataclass(frozen=True)
class Shared:
    """What a share link carries: a program (JSON, validated), the settings of its run, and where it ran
    (None for a program not run yet, which pins no steps and no final key)."""

    program: dict[str, Any]
    settings: Settings
    ran_on: RanOn | None = None

    def __post_init__(self) -> None:
        if (self.ran_on is None) != (self.settings.final is None):
            raise ValueError("a shared run pins both its final key and where it ran, or neither")


def share_link(run: Manifest | Shared, base: str = "") -> str:
    """`base` (the app's address; any fragment it has is replaced) with the fragment that reproduces `run`:
    a manifest's program and settings, or a program and settings not yet run (steps and final None)."""
    shared = _of_manifest(run) if isinstance(run, Manifest) else run
    text = json.dumps(link_json(shared), separators=(",", ":"), sort_keys=True, ensure_ascii=False, allow_nan=False)
    packed = base64.urlsafe_b64encode(zlib.compress(text.encode(), 9)).rstrip(b"=").decode("ascii")
    if len(packed) > MAX_PAYLOAD:
        raise ValueError(f"the program is too large for a link: {len(packed):,} characters, at most {MAX_PAYLOAD:,}")
    return f"{base.partition('#')[0]}#run={packed}"


def link_json(shared: Shared) -> dict[str, Any]:
    """The JSON a share link carries for `shared` (the module docstring's layout)."""
    ran = shared.ran_on
    ran_on = None if ran is None else {"device": ran.device, "engine_version": ran.engine_version}
    return {"format": FORMAT, "program": shared.program, **shared.settings.to_json(), "ran_on": ran_on}


def read_share_link(url: Any) -> Shared:
    """The program and settings a share link carries (the whole URL, or just its fragment from '#'), checked
    as untrusted data; LinkError names every problem otherwise. Nothing in it is run."""
    inflated = _inflate(_payload(url))
    value, issues = parse_json(inflated, MAX_JSON, "share link")
    if issues:
        raise LinkError(issues)
    r = Reader()
    raw = r.record(value, "", ("format", "program", *SETTINGS_FIELDS, "ran_on"))
    if raw is None:
        raise LinkError(r.issues)
    if raw["format"] != FORMAT:
        r.fail("format", f"must be {FORMAT!r}, got {show(raw['format'])}")
    program = read_program(raw["program"], "program", r, keyed=False)
    settings = read_settings(raw, r, ran=False)
    ran_on = _read_ran_on(raw["ran_on"], r)
    if settings is not None and (ran_on is None) != (settings.final is None):
        r.fail("ran_on", "a link pinning a final key must say where it ran, and one pinning none must not")
    if r.issues or program is None or settings is None:
        raise LinkError(r.issues)
    return Shared(program[0], settings, ran_on)


def _of_manifest(manifest: Manifest) -> Shared:
    ran_on = RanOn(manifest.environment.device, manifest.engine.engine_version)
    return Shared(manifest.program, manifest.settings, ran_on)


def _read_ran_on(value: Any, r: Reader) -> RanOn | None:
    if value is None:
        return None
    raw = r.record(value, "ran_on", ("device", "engine_version"))
    if raw is None:
        return None
    device = r.text(raw["device"], "ran_on.device")
    version = r.text(raw["engine_version"], "ran_on.engine_version", 200)
    return None if device is None or version is None else RanOn(device, version)


def _fail(message: str) -> LinkError:
    return LinkError([Issue("", message)])


def _payload(url: Any) -> str:
    """The `run=` parameter of the fragment, checked to be base64url of a sensible length."""
    if not isinstance(url, str):
        raise _fail(f"a share link is text, got {type(url).__name__}")
    if "#" not in url:
        raise _fail("the link has no fragment: a share link ends in '#run=...'")
    params = url.partition("#")[2].split("&")
    runs = [p.removeprefix("run=") for p in params if p.startswith("run=")]
    if len(runs) != 1:
        raise _fail(f"the link's fragment must hold one 'run=' parameter, it holds {len(runs)}")
    payload = runs[0]
    if len(payload) > MAX_PAYLOAD:
        raise _fail(f"the link's payload is {len(payload):,} characters long; at most {MAX_PAYLOAD:,} are read")
    bad = _BASE64URL.match(payload)
    assert bad is not None
    if bad.end() != len(payload):
        where = bad.end()
        raise _fail(f"the payload is not base64url: {payload[where]!r} at character {where + 1}")
    if len(payload) % 4 == 1:
        raise _fail(f"the payload is not base64url: {len(payload)} characters cannot be whole bytes")
    return payload


def _inflate(payload: str) -> bytes:
    """The JSON bytes a payload holds: base64url-decoded, then inflated to at most MAX_JSON bytes."""
    packed = base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))
    inflater = zlib.decompressobj()
    try:
        data = inflater.decompress(packed, MAX_JSON + 1)
    except zlib.error as error:
        raise _fail(f"the payload is not zlib-compressed data ({error})") from None
    if len(data) > MAX_JSON:
        raise _fail(f"the payload inflates to more than {MAX_JSON:,} bytes")
    if not inflater.eof:
        raise _fail("the payload is cut short: its compressed data does not end")
    if inflater.unused_data:
        raise _fail(f"the payload has {len(inflater.unused_data)} bytes after its compressed data")
    return data
