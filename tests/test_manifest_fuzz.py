"""Fuzzing the readers of manifests and share links that the CLI and the page use (a fixed seed, fixed
counts): mutations of a real manifest and of real links, at the JSON level (wrong types, huge numbers,
deep nesting, unicode, fields removed, added, repeated, reordered) and the byte level (flips, cuts,
insertions, invalid UTF-8, broken compression, broken base64).

Each input goes through read_manifest / read_share_link, the page's read_link and open_replay, and the
CLI's Pins. Only the named errors may come out (ManifestError, LinkError, and open_replay's refusals by
message), each within a time bound. An accepted manifest must read back as the JSON it holds, and must
pass `verify`'s comparison only if every claim it changed is one the comparison names as not checked:
otherwise it is a silent wrong result. Figures go to fault_log."""

from __future__ import annotations

import asyncio
import base64
import copy
import json
import random
import signal
import time
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from scellis import __version__, app
from scellis.datasets import Split, digits_csv, read_digits, to_files
from scellis.engine import engine_files
from scellis.examples import digits_mlp
from scellis.levels import Level
from scellis.manifest import (
    LinkError,
    ManifestError,
    Shared,
    build_manifest,
    installed_engine,
    read_manifest,
    read_share_link,
    share_link,
)
from scellis.manifest.claims import differences
from scellis.manifest.link import link_json
from scellis.manifest.pins import Engine, Settings, check_data
from scellis.manifest.record import Manifest, manifest_json, to_json
from scellis.manifest.replay import (
    NotedDevice,
    Outcome,
    Pins,
    compare,
    new_session,
    replay,
    replay_session,
    unchecked_claims,
)
from scellis.runtime.cpu.device import CpuDevice
from scellis.session import checkpoints_to
from scellis.store import DirectoryStore, save

SEED = 19
MANIFESTS = LINKS = 1_000
BOUND_S = 10.0  # one reading (or one re-run of an accepted manifest) takes less, or it is a hang
RULES = [{"on": "step", "if": {"every": 10}, "then": ["checkpoint"]}]
BUILD = json.dumps({"package_version": __version__, "engine_files": engine_files(), "tools": {"pyodide": "0.27.0"}})
REFUSALS = (  # open_replay's own refusals, by message (ValueError)
    "the link shares a program that has not been run",
    "this run of ",
    "the train split does not match",
    "the test split does not match",
)


class Hang(Exception):
    pass


@contextmanager
def bounded(seconds: float) -> Iterator[None]:
    """Interrupt the block with Hang after `seconds` (a hang must not stall the suite)."""

    def interrupt(signum: int, frame: Any) -> None:
        raise Hang

    previous = signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@pytest.fixture(scope="module")
def real(tmp_path_factory: pytest.TempPathFactory) -> tuple[Manifest, Outcome, Engine, Split, Split, NotedDevice]:
    """Two epochs of the digits MLP at debug on the CPU path: its manifest, what a re-run recomputes (the
    same run: at debug on the CPU path a re-run is the same bits), the data and the device (re-runs reuse
    it: opening the CPU path compiles its module)."""
    train, test = read_digits(digits_csv().read_bytes())
    program = digits_mlp()
    program["loop"] = {**program["loop"], "epochs": 2, "rules": RULES}
    device = NotedDevice(asyncio.run(CpuDevice.open()))
    session = new_session(program, device, level=Level.DEBUG, seed=5, train=train, test=test)
    store = DirectoryStore(tmp_path_factory.mktemp("store"))
    session.checkpointer = checkpoints_to(store)

    async def run() -> str:
        await session.fit(train, test)
        return await save(store, await session.checkpoint())

    final = asyncio.run(run())
    engine = installed_engine()
    manifest = build_manifest(session, train, test, device_kind="cpu", epochs=2, final=final, engine=engine)
    outcome = Outcome.of(session, final, train, test, device_kind="cpu", epochs=2)
    return manifest, outcome, engine, train, test, device


# -- mutations ------------------------------------------------------------------------------------------

WEIRD: list[Any] = [
    None,
    True,
    False,
    0,
    -1,
    1.5,
    2**53 + 1,
    2**63,
    2**64,
    -(2**63) - 1,
    1e308,
    "",
    "x" * 5000,
    "\u0000",
    "\ud800",
    "é🙂\u202e",
    "nan",
    "inf",
    "-inf",
    "sha256:" + "0" * 64,
    "sha256:" + "A" * 64,
    [],
    {},
    [0] * 300,
    {"k": "v"},
]


def _nodes(value: Any, path: tuple = ()) -> list[tuple]:
    """Every path into `value` (dict keys, list indexes), iteratively."""
    out, stack = [], [(path, value)]
    while stack:
        where, v = stack.pop()
        out.append(where)
        if isinstance(v, dict):
            stack += [((*where, k), v[k]) for k in v]
        elif isinstance(v, list):
            stack += [((*where, i), x) for i, x in enumerate(v)]
    return out


def _get(value: Any, path: tuple) -> Any:
    for step in path:
        value = value[step]
    return value


DEEP = "__deep__"  # a placeholder `dump` writes as nesting too deep for a writer's own recursion


def _deep(rng: random.Random) -> str:
    return f"{DEEP}{rng.choice([65, 200, 990, 3000, 100_000])}{rng.choice('[{')}"


def _nested(depth: int, opener: str) -> str:
    return ("[" * depth + "1" + "]" * depth) if opener == "[" else ('{"a":' * depth + "1" + "}" * depth)


def mutate_value(value: Any, rng: random.Random) -> Any:
    """`value` (JSON, copied) with one JSON-level change at a random place."""
    value = copy.deepcopy(value)
    field = rng.choice(list(value))  # a field first, then a place in it: every claim gets its share
    path = rng.choice([(field, *rest) for rest in _nodes(value[field])])
    parent, last = _get(value, path[:-1]), path[-1]
    old = parent[last]
    kind = rng.randrange(9)
    if kind == 0:
        parent[last] = rng.choice(WEIRD)
    elif kind == 1:
        parent[last] = _deep(rng)
    elif kind == 2:  # removed
        del parent[last]
    elif kind == 3 and isinstance(parent, dict):  # an unknown field beside
        parent[rng.choice(["extra", "Final", "steps ", "__proto__"])] = rng.choice(WEIRD)
    elif kind == 4 and isinstance(parent, list):  # repeated, or two swapped
        parent.insert(last, copy.deepcopy(old))
        if rng.random() < 0.5 and len(parent) > 1:
            i, j = rng.sample(range(len(parent)), 2)
            parent[i], parent[j] = parent[j], parent[i]
    elif isinstance(old, bool) or old is None:
        parent[last] = rng.choice([0, 1, "true", not old])
    elif isinstance(old, int | float):
        parent[last] = rng.choice([old + 1, old - 1, old * 2, -old, old + 0.5, old * 1.0001, str(old)])
    elif isinstance(old, str) and old:
        i = rng.randrange(len(old))
        parent[last] = old[:i] + rng.choice(["0", "f", "Z", "é", "", old[i].upper(), "\u200b"]) + old[i + 1 :]
    else:
        parent[last] = rng.choice(WEIRD)
    return value


def dump(value: Any) -> str:
    """JSON text of `value`; non-ASCII as escapes (a lone surrogate too), as any JSON writer may; each
    placeholder `_deep` made, as that deep a nesting."""
    text = json.dumps(value, allow_nan=False)
    while f'"{DEEP}' in text:
        start = text.index(f'"{DEEP}')
        end = text.index('"', start + 1)
        spec = text[start + 1 + len(DEEP) : end]
        text = text[:start] + _nested(int(spec[:-1]), spec[-1]) + text[end + 1 :]
    return text


def mutate_bytes(data: bytes, rng: random.Random) -> bytes:
    """`data` with one byte-level change."""
    buf = bytearray(data)
    at = rng.randrange(len(buf) + 1)
    kind = rng.randrange(9)
    if kind == 0 and buf:
        buf[min(at, len(buf) - 1)] ^= 1 << rng.randrange(8)
    elif kind == 1:
        return bytes(buf[:at])
    elif kind == 2:
        del buf[at : at + rng.randrange(1, 64)]
    elif kind == 3:
        buf[at:at] = rng.choice([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x00", b"\xef\xbb\xbf", b"\\", b'"'])
    elif kind == 4:
        buf[at:at] = buf[at : at + rng.randrange(1, 200)]
    elif kind == 5:
        return b"\xef\xbb\xbf" + bytes(buf)
    elif kind == 6:  # a field repeated
        return bytes(buf).replace(b"{", b'{"seed": 1, ', 1)
    elif kind == 7:
        buf[at:at] = rng.choice([b"NaN", b"Infinity", b"-Infinity", b"1e999", b"9" * 5000, b"[" * 5000])
    else:
        return bytes(buf).replace(b": ", b": " + b"[" * 100 + b"1" + b"]" * 100 + b", ", 1)
    return bytes(buf)


def manifest_inputs(base: dict[str, Any], rng: random.Random) -> Iterator[bytes]:
    text = dump(base).encode()
    for i in range(MANIFESTS):
        yield dump(mutate_value(base, rng)).encode() if i % 2 == 0 else mutate_bytes(text, rng)


def pack(data: bytes) -> str:
    return base64.urlsafe_b64encode(zlib.compress(data, 9)).rstrip(b"=").decode("ascii")


ODD_LINKS: list[Any] = [
    None,
    42,
    b"#run=AAAA",
    "#run=" + pack(b" " * (9 * 2**20)),  # inflates past the cap
    "#run=" + "A" * (600 * 1024),  # longer than a payload may be
    "#run=",
    "#",
    "#run=A",
]


def link_inputs(bases: list[dict[str, Any]], rng: random.Random) -> Iterator[Any]:
    for i in range(LINKS):
        base = bases[i % len(bases)]
        text = dump(base).encode()
        kind = i % 5
        if kind == 0:
            yield "http://127.0.0.1:8000/#run=" + pack(dump(mutate_value(base, rng)).encode())
        elif kind == 1:
            yield "#run=" + pack(mutate_bytes(text, rng))
        elif kind == 2:  # the compressed bytes broken
            yield "#run=" + base64.urlsafe_b64encode(mutate_bytes(zlib.compress(text), rng)).rstrip(b"=").decode()
        elif kind == 3:  # the URL's text broken
            url = "http://127.0.0.1:8000/?a=1#run=" + pack(text)
            at = rng.randrange(len(url) + 1)
            cut = rng.choice([url[:at], url[:at] + rng.choice("=+/ %é\u0000&#") + url[at:], url + "&run=" + pack(text)])
            yield cut.replace("#", "", 1) if rng.random() < 0.05 else cut
        else:
            unnamed = {**base, "program": {k: v for k, v in base["program"].items() if k != "name"}}
            odd = ["#run=" + pack(dump(_deep(rng)).encode()), "#run=" + pack(dump(unnamed).encode())]
            yield rng.choice([*ODD_LINKS, *odd])


# -- the readers ----------------------------------------------------------------------------------------


def test_malformed_manifests(real: tuple, tmp_path: Path, fault_log: Callable[..., None]) -> None:
    manifest = real[0]
    base = manifest_json(manifest)
    assert read_manifest(to_json(manifest)) == manifest
    rng = random.Random(SEED)
    figures = dict.fromkeys(("crashes", "hangs", "silent_wrong", "accepted", "verified", "rerun"), 0)
    crashed: list[str] = []
    for data in manifest_inputs(base, rng):
        try:
            with bounded(BOUND_S):
                got = read_manifest(data)
                verified = _verify(got, real, tmp_path, figures)
        except ManifestError:
            continue
        except Hang:
            figures["hangs"] += 1
            continue
        except Exception as error:  # anything else is a crash
            figures["crashes"] += 1
            crashed.append(f"{type(error).__name__}: {error}"[:300])
            continue
        figures["accepted"] += 1
        figures["verified"] += verified
        if not _reads_back(got, data):
            figures["silent_wrong"] += 1
    fault_log("manifest-fuzz", inputs=MANIFESTS, **figures)
    assert figures["crashes"] == 0, crashed[:5]
    assert figures["hangs"] == 0 and figures["silent_wrong"] == 0
    assert figures["accepted"] > 50 and figures["verified"] > 5  # the mutations reach the comparison too


def _reads_back(got: Manifest, data: bytes) -> bool:
    """The manifest read is the JSON the text holds (a reference parser's value), field for field."""
    return manifest_json(got) == json.loads(data)


def _verify(got: Manifest, real: tuple, tmp_path: Path, figures: dict[str, int]) -> bool:
    """What `scellis verify` decides for `got`, the way it does: refused when its data hashes differ;
    re-run when what the re-run takes from the manifest differs from the real run's; else compared with
    the real run's outcome (the same bits). A silent wrong result is a verified manifest that differs from
    the real one in a claim the comparison does not name as not checked (the program aside: verify runs
    the program the manifest holds, so its results are checked for it)."""
    manifest, outcome, engine, train, test, device = real
    base, pins = manifest_json(manifest), Pins.of(got)
    if check_data(pins.settings.data, train, test):
        return False
    inputs = ("level", "seed", "device", "epochs", "steps")
    program = pins.claims["program"]["json"] != base["program"]["json"]
    if program or any(pins.claims[k] != base[k] for k in inputs) or pins.device != base["environment"]["device"]:
        if pins.settings.device != "cpu":
            return False  # verify would open this machine's WebGPU adapter: not one this test relies on
        figures["rerun"] += 1
        session = replay_session(pins, device.device, train, test, DirectoryStore(tmp_path))
        try:
            outcome = asyncio.run(replay(session, pins, train, test, report=None))
        except ValueError:  # verify: "cannot re-run it here", exit 2
            return False
    ok, _ = compare(pins, outcome, engine)
    # the program is what the re-run runs: one changed in ways that change nothing run (an unknown field
    # of an edge, a default spelled out) is checked by running it, as the original was
    unchecked = {**unchecked_claims(pins, outcome, engine), "program.json": "run"}
    if ok and differences(base, pins.claims, unchecked):
        figures["silent_wrong"] += 1
    return ok


def test_malformed_share_links(real: tuple, tmp_path: Path, fault_log: Callable[..., None]) -> None:
    manifest, _, _, train, test, _ = real
    ran = read_share_link(share_link(manifest))
    unrun = Shared(manifest.program, Settings(Level.DEBUG, 1, "cpu", 1, None, (), None))
    bases = [link_json(ran), link_json(unrun)]
    files = to_files(train, test)
    rng = random.Random(SEED)
    figures = dict.fromkeys(("crashes", "hangs", "silent_wrong", "accepted", "opened"), 0)
    crashed: list[str] = []
    slowest = 0.0
    for url in link_inputs(bases, rng):
        start = time.perf_counter()
        try:
            with bounded(BOUND_S):
                accepted = _read_link(url, files, tmp_path, figures)
        except Hang:
            figures["hangs"] += 1
            continue
        except Exception as error:
            figures["crashes"] += 1
            crashed.append(f"{type(error).__name__}: {error}"[:300])
            continue
        finally:
            slowest = max(slowest, time.perf_counter() - start)
        figures["accepted"] += accepted
    fault_log("link-fuzz", inputs=LINKS, slowest_ms=round(slowest * 1000), **figures)
    assert figures["crashes"] == 0, crashed[:5]
    assert figures["hangs"] == 0 and figures["silent_wrong"] == 0
    assert figures["accepted"] > 20 and figures["opened"] > 0


def _read_link(url: Any, files: dict[str, bytes], tmp_path: Path, figures: dict[str, int]) -> bool:
    """Every reader of a link the CLI and the page have; whether they accepted it. Named refusals only:
    anything else propagates (a crash)."""
    try:
        shared = read_share_link(url)
    except LinkError:
        for read in (app.read_link, lambda u: Pins.of(read_share_link(u))):
            with pytest.raises(LinkError):
                read(url)
        _open_replay(url, "none", {}, tmp_path, figures)
        return False
    if link_json(shared) != _payload(url):
        figures["silent_wrong"] += 1
    shown = json.loads(app.read_link(url))
    if json.loads(shown["program"]) != shared.program or shown["settings"] != shared.settings.to_json():
        figures["silent_wrong"] += 1
    if shared.ran_on is not None:
        Pins.of(shared)
    _open_replay(url, "none", {}, tmp_path, figures)
    if shared.ran_on is not None and figures["opened"] < 3:  # a few opened for real: their sessions compile
        _open_replay(url, "site", files, tmp_path, figures)
    return True


def _payload(url: str) -> Any:
    payload = url.partition("#")[2].split("run=", 1)[1].split("&")[0]
    return json.loads(zlib.decompress(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4))))


def _open_replay(url: Any, source: str, files: dict[str, bytes], tmp_path: Path, figures: dict[str, int]) -> None:
    async def go() -> None:
        opened, _ = await app.open_replay(source, files, url, "cpu", BUILD, store=DirectoryStore(tmp_path))
        if isinstance(opened, app.Driven):
            figures["opened"] += 1

    try:
        asyncio.run(go())
    except LinkError:
        pass
    except ValueError as error:
        if type(error) is not ValueError or not str(error).startswith(REFUSALS):
            raise
