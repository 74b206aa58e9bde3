"""Pinned runs (scellis.manifest): a manifest built from a digits MLP run on the CPU path (wasmtime) pins what
the run used and wrote, survives its JSON round trip, and every malformed manifest or share link is refused
with the path of what is wrong; share links round-trip a manifest's program and settings."""

from __future__ import annotations

import asyncio
import base64
import copy
import hashlib
import json
import math
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from scellis import __version__
from scellis.assets import WASM_NAME, read_asset
from scellis.datasets import Split, digits_csv, read_digits, to_files
from scellis.engine import engine_files, installed_engine_version
from scellis.examples import digits_mlp
from scellis.levels import Level
from scellis.manifest import (
    LinkError,
    Manifest,
    ManifestError,
    RanOn,
    Settings,
    Shared,
    build_manifest,
    installed_engine,
    read_manifest,
    read_share_link,
    share_link,
    to_json,
)
from scellis.manifest.link import MAX_JSON, MAX_PAYLOAD
from scellis.manifest.pins import DataVersion, check_data, engine_of
from scellis.manifest.record import MAX_EVENTS, MAX_MANIFEST
from scellis.manifest.replay import NotedDevice, new_session
from scellis.runtime.cpu.device import CpuDevice
from scellis.session import checkpoints_to
from scellis.store import DirectoryStore, key_of, save
from scellis.store.checkpoint import load

RULES = [{"on": "step", "if": {"every": 10}, "then": ["checkpoint"]}]


def program() -> dict[str, Any]:
    data = digits_mlp()
    data["loop"] = {**data["loop"], "epochs": 2, "rules": RULES}
    return data


@pytest.fixture(scope="module")
def digits() -> tuple[Split, Split]:
    return read_digits(digits_csv().read_bytes())


@pytest.fixture(scope="module")
def ran(digits: tuple[Split, Split], tmp_path_factory: pytest.TempPathFactory) -> tuple[Manifest, DirectoryStore]:
    """Two epochs of the digits MLP at debug, checkpointing every 10 steps, and the manifest of the run."""
    train, test = digits
    device = NotedDevice(asyncio.run(CpuDevice.open()))
    session = new_session(program(), device, level=Level.DEBUG, seed=5, train=train, test=test)
    store = DirectoryStore(tmp_path_factory.mktemp("store"))
    session.checkpointer = checkpoints_to(store)

    async def run() -> str:
        await session.fit(train, test)
        return await save(store, await session.checkpoint())

    final = asyncio.run(run())
    engine = installed_engine()
    manifest = build_manifest(
        session, train, test, device_kind="cpu", epochs=2, final=final, engine=engine, budget=device.noted
    )
    assert [(w.step, w.key) for w in manifest.checkpoints] == session.checkpoints
    assert manifest.program_key == session.compiled.at(Level.DEBUG, frozenset()).key
    assert manifest.plan.bytes == session.plan.total and manifest.plan.verdict == "green"
    assert manifest.plan.budget is not None and manifest.plan.budget_how is not None
    assert manifest.events == tuple(session.loop.events) and manifest.metrics == session.last_metrics
    return manifest, store


def test_a_manifest_pins_what_the_run_used_and_wrote(ran: tuple[Manifest, DirectoryStore], digits: tuple) -> None:
    manifest, store = ran
    pinned = manifest.settings
    assert (pinned.level, pinned.seed, pinned.device, pinned.epochs, pinned.steps) == (Level.DEBUG, 5, "cpu", 2, 44)
    assert [w.step for w in manifest.checkpoints] == [10, 20, 30, 40]
    final = asyncio.run(load(store, pinned.final, expect_program=manifest.program_key, expect_level=Level.DEBUG))
    assert final.step == 44 and final.device == manifest.environment.device
    assert all(store.has(w.key) for w in manifest.checkpoints[-3:])  # retention keeps the last 3 and the best
    files = to_files(*digits)  # a split's hash: its two data files' bytes, features first
    train_bytes = files["digits-train-x.f32"] + files["digits-train-y.i32"]
    assert pinned.data[0] == DataVersion("train", key_of(train_bytes), 1438, (64,))
    assert pinned.data[1].split == "test" and pinned.data[1].examples == 359
    assert manifest.engine.wasm == key_of(read_asset(WASM_NAME))
    assert manifest.engine.package_version == __version__
    assert manifest.engine.engine_version == installed_engine_version()
    assert manifest.environment.device.startswith("CPU path (WebAssembly) via wasmtime")
    assert manifest.environment.browser is None and manifest.program == program()


def test_the_engine_comes_from_build_json_when_it_describes_this_engine(tmp_path: Path) -> None:
    build = {
        "package_version": __version__,
        "engine_version": installed_engine_version(),
        "engine_files": engine_files(),
        "tools": {"pyodide": "0.99.1"},
    }
    (tmp_path / "build.json").write_text(json.dumps(build))
    from_build, computed = installed_engine(tmp_path / "build.json"), installed_engine()
    assert from_build.pyodide == "0.99.1" and computed.pyodide is None
    assert (from_build.wgsl, from_build.wasm) == (computed.wgsl, computed.wasm)
    (tmp_path / "build.json").write_text(json.dumps({**build, "engine_version": "0.0.0+000000000000"}))
    assert installed_engine(tmp_path / "build.json") == computed  # a stale build says nothing of this engine


def test_the_wgsl_pin_hashes_the_templates_and_the_renderers_that_fill_them() -> None:
    files = engine_files()
    assert {"wgsl/matmul_tile64.wgsl", "scellis/codegen/wgsl_dense.py", "scellis/codegen/wgsl_template.py"} <= set(
        files
    )
    pinned = engine_of(__version__, files, None).wgsl

    def changed(name: str) -> str:
        return engine_of(__version__, {**files, name: "0" * 64}, None).wgsl

    assert changed("wgsl/matmul_tile64.wgsl") != pinned
    assert changed("scellis/codegen/wgsl_dense.py") != pinned
    assert changed("scellis/codegen/cpu.py") == pinned  # the CPU path's calls make no WGSL
    assert changed("scellis/session.py") == pinned


def test_round_trip(ran: tuple[Manifest, DirectoryStore]) -> None:
    manifest, _ = ran
    text = to_json(manifest)
    assert read_manifest(text) == manifest
    assert read_manifest(text.encode()) == manifest and read_manifest(json.loads(text)) == manifest
    assert to_json(read_manifest(text)) == text


def test_metrics_that_are_not_finite_round_trip(ran: tuple[Manifest, DirectoryStore]) -> None:
    manifest, _ = ran
    data = json.loads(to_json(manifest))
    data["metrics"] = {"loss": "nan", "metric/accuracy": "-inf"}
    back = read_manifest(json.dumps(data))
    assert math.isnan(back.metrics["loss"]) and back.metrics["metric/accuracy"] == -math.inf
    assert json.loads(to_json(back))["metrics"] == data["metrics"]


def test_data_that_differs_is_named_with_both_hashes(ran: tuple[Manifest, DirectoryStore], digits: tuple) -> None:
    manifest, _ = ran
    train, test = digits
    assert check_data(manifest.settings.data, train, test) == []
    changed = Split(test.features[:-4] + b"\0\0\x80\x7f", test.labels, test.width)
    [line] = check_data(manifest.settings.data, train, changed)
    pinned = manifest.settings.data[1].sha256
    assert line.startswith("the test split does not match the pinned data: its content hash is sha256:")
    assert line.endswith(f"the run pins {pinned}") and key_of(changed.features + changed.labels) in line
    shorter = Split(train.features[: 64 * 4 * 10], train.labels[:40], train.width)
    [line] = check_data(manifest.settings.data, shorter, test)
    assert "here: train" in line and "(10 examples of shape [64])" in line


def mutate(ran: tuple[Manifest, DirectoryStore], change: Callable[[dict], Any]) -> str:
    data = json.loads(to_json(ran[0]))
    change(data)
    return json.dumps(data)


MALFORMED: list[tuple[str, Callable[[dict], Any], str]] = [
    ("unknown field", lambda d: d.update(notes="hi"), "notes: unknown field (known: format, program, level"),
    ("missing field", lambda d: d.pop("events"), "events: is missing"),
    ("format", lambda d: d.update(format="scellis.manifest/2"), "format: must be 'scellis.manifest/1'"),
    ("seed type", lambda d: d.update(seed="5"), "seed: must be an integer from 0 to"),
    ("seed as bool", lambda d: d.update(seed=True), "seed: must be an integer"),
    ("negative seed", lambda d: d.update(seed=-1), "seed: must be an integer"),
    ("level", lambda d: d.update(level="exact"), "level: must be one of debug, prod, fast, got 'exact'"),
    ("device", lambda d: d.update(device="tpu"), "device: must be one of webgpu, cpu"),
    ("epochs", lambda d: d.update(epochs=0), "epochs: must be an integer from 1"),
    ("no steps", lambda d: d.update(steps=None), "steps: must be an integer"),
    ("final key", lambda d: d.update(final="sha256:ABC"), "final: must be a key ('sha256:' and 64 lowercase hex"),
    ("program key", lambda d: d["program"].update(key="md5:00"), "program.key: must be a key"),
    ("program field", lambda d: d["program"].update(text="x"), "program.text: unknown field (known: key, json)"),
    (
        "program itself",
        lambda d: d["program"]["json"]["nodes"][2]["params"].update(features="wide"),
        "program.json.nodes[2].params.features: node 'hidden': ",
    ),
    ("program nodes", lambda d: d["program"]["json"].update(nodes=7), "program.json.nodes: must be a non-empty list"),
    ("data split", lambda d: d["data"][1].update(split="valid"), "data[1].split: must be one of train, test"),
    ("data twice", lambda d: d["data"][1].update(split="train"), "data[1].split: the train split is pinned twice"),
    ("data missing", lambda d: d["data"].pop(), "data: must pin the test split"),
    ("data hash", lambda d: d["data"][0].update(sha256="00" * 32), "data[0].sha256: must be a key"),
    ("data shape", lambda d: d["data"][0].update(shape=[64, 0]), "data[0].shape[1]: must be an integer from 1"),
    ("data examples", lambda d: d["data"][0].update(examples=1.5), "data[0].examples: must be an integer"),
    ("checkpoint key", lambda d: d["checkpoints"][1].update(key="sha256:" + "g" * 64), "checkpoints[1].key: must be"),
    ("checkpoint order", lambda d: d["checkpoints"][1].update(step=5), "checkpoints[1].step: checkpoints are listed"),
    ("checkpoint late", lambda d: d["checkpoints"][3].update(step=50), "checkpoints: a checkpoint at step 50 is after"),
    ("engine field", lambda d: d["engine"].update(gpu="x"), "engine.gpu: unknown field"),
    ("engine wasm", lambda d: d["engine"].update(wasm=None), "engine.wasm: must be a key"),
    ("engine pyodide", lambda d: d["engine"].update(pyodide=3), "engine.pyodide: must be a string"),
    ("environment", lambda d: d["environment"].update(device=None), "environment.device: must be a string"),
    ("long text", lambda d: d["environment"].update(browser="x" * 5000), "environment.browser: must be a string of"),
    ("plan verdict", lambda d: d["plan"].update(verdict="blue"), "plan.verdict: must be one of green, yellow, red"),
    ("plan budget", lambda d: d["plan"]["budget"].update(bytes=-3), "plan.budget.bytes: must be an integer from 0"),
    ("plan reasons", lambda d: d["plan"]["reasons"].append(4), "plan.reasons[1]: must be a string"),
    ("metric", lambda d: d["metrics"].update(loss="low"), "metrics.loss: must be a number (or 'nan', 'inf', '-inf')"),
    ("metrics", lambda d: d.update(metrics=[1]), "metrics: must be an object of at most 256 metrics"),
    ("event", lambda d: d["events"][0].update(step="10"), "events[0].step: must be an integer"),
    ("event text", lambda d: d["events"][0].pop("text"), "events[0].text: is missing"),
    ("events", lambda d: d.update(events={"0": 1}), "events: must be a list"),
]


@pytest.mark.parametrize(("change", "said"), [m[1:] for m in MALFORMED], ids=[m[0] for m in MALFORMED])
def test_malformed_manifests_are_refused_naming_the_path(
    ran: tuple[Manifest, DirectoryStore], change: Callable[[dict], Any], said: str
) -> None:
    with pytest.raises(ManifestError) as refused:
        read_manifest(mutate(ran, change))
    assert said in str(refused.value), str(refused.value)


def test_every_problem_is_reported_at_once(ran: tuple[Manifest, DirectoryStore]) -> None:
    def many(data: dict) -> None:
        data.update(seed="x", level="slow", extra=1)
        data["data"][0]["examples"] = -1
        data["events"][0]["epoch"] = None

    with pytest.raises(ManifestError) as refused:
        read_manifest(mutate(ran, many))
    paths = [issue.path for issue in refused.value.issues]
    assert paths == ["extra", "level", "seed", "data[0].examples", "events[0].epoch"]
    assert str(refused.value).startswith("the manifest has 5 problem(s):\n  - extra: unknown field")


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("{", "the manifest is not JSON: Expecting property name"),
        ('{"seed": NaN}', "the manifest is not JSON: NaN is not JSON"),
        ('{"seed": 1, "seed": 2}', "the field 'seed' appears twice in one object"),
        (b"\xff{}", "the manifest is not UTF-8 text"),
        ("[" * 200_000 + "]" * 200_000, "the manifest nests its JSON deeper than 64 levels (at line 1, column 65)"),
        ("[1]", "must be an object, got [1]"),
        (" " * (MAX_MANIFEST + 1), f"at most {MAX_MANIFEST:,} are read"),
    ],
    ids=["truncated", "nan", "repeated", "not utf-8", "deep", "list", "oversized"],
)
def test_text_that_is_no_manifest_is_refused(text: str | bytes, said: str) -> None:
    with pytest.raises(ManifestError) as refused:
        read_manifest(text)
    assert said in str(refused.value)


def test_too_many_events_are_refused(ran: tuple[Manifest, DirectoryStore]) -> None:
    event = {"step": 1, "epoch": 1, "text": "x"}
    with pytest.raises(ManifestError, match=f"events: holds 100,001 entries; at most {MAX_EVENTS:,}"):
        read_manifest(mutate(ran, lambda d: d.update(events=[event] * (MAX_EVENTS + 1))))


def test_share_link_round_trips_a_manifest(ran: tuple[Manifest, DirectoryStore]) -> None:
    manifest, _ = ran
    link = share_link(manifest, "https://example.org/scellis/#old")
    assert link.startswith("https://example.org/scellis/#run=") and "old" not in link
    ran_on = RanOn(manifest.environment.device, manifest.engine.engine_version)
    assert read_share_link(link) == Shared(manifest.program, manifest.settings, ran_on)
    fragment = "#view=guide&" + link.partition("#")[2]  # other parameters of the fragment are the app's
    assert read_share_link(fragment) == Shared(manifest.program, manifest.settings, ran_on)
    assert len(link) < len(to_json(manifest)) / 4  # compressed


def test_share_link_of_a_program_not_run_yet() -> None:
    settings = Settings(Level.PROD, 2**64 - 1, "webgpu", 3, None, (), None)
    shared = Shared(program(), settings)
    assert read_share_link(share_link(shared)) == shared


def link_of(payload: bytes, compress: bool = True) -> str:
    data = zlib.compress(payload) if compress else payload
    return "#run=" + base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def link_json(change: Callable[[dict], Any]) -> str:
    data = {
        "format": "scellis.link/1",
        "program": program(),
        **Settings(Level.DEBUG, 1, "cpu", 2, None, (), None).to_json(),
        "ran_on": None,
    }
    change(data)
    return link_of(json.dumps(data).encode())


@pytest.mark.parametrize(
    ("link", "said"),
    [
        (None, "a share link is text, got NoneType"),
        ("https://example.org/", "the link has no fragment"),
        ("https://example.org/#view=1", "must hold one 'run=' parameter, it holds 0"),
        ("#run=AAAA&run=AAAA", "must hold one 'run=' parameter, it holds 2"),
        ("#run=ab+c", "the payload is not base64url: '+' at character 3"),
        ("#run=abcde", "5 characters cannot be whole bytes"),
        ("#run=" + "A" * (MAX_PAYLOAD + 1), f"at most {MAX_PAYLOAD:,} are read"),
        (link_of(b"not zlib", compress=False), "the payload is not zlib-compressed data"),
        (link_of(zlib.compress(b"{}" * 1000)[:-9], compress=False), "the payload is cut short"),
        (link_of(zlib.compress(b"{}") + b"xyz", compress=False), "the payload has 3 bytes after its compressed"),
        (link_of(b" " * (MAX_JSON + 1)), f"the payload inflates to more than {MAX_JSON:,} bytes"),
        (link_of(b'{"format": '), "the share link is not JSON"),
        (link_of(b"[]"), "must be an object, got []"),
        (link_json(lambda d: d.update(format="scellis.manifest/1")), "format: must be 'scellis.link/1'"),
        (link_json(lambda d: d.update(seed=-2)), "seed: must be an integer from 0"),
        (link_json(lambda d: d.update(steps="all")), "steps: must be an integer"),
        (link_json(lambda d: d.update(final="sha256:1")), "final: must be a key"),
        (link_json(lambda d: d.pop("level")), "level: is missing"),
        (link_json(lambda d: d.update(run="now")), "run: unknown field"),
        (link_json(lambda d: d["program"].update(loss="nowhere")), "program.loss: "),
        (link_json(lambda d: d.update(data=[{"split": "train"}])), "data[0].sha256: is missing"),
        (link_json(lambda d: d.update(final="sha256:" + "1" * 64)), "ran_on: a link pinning a final key must say"),
        (link_json(lambda d: d.update(ran_on={"device": "x", "engine_version": "y"})), "and one pinning none must not"),
        (link_json(lambda d: d.update(ran_on={"device": 3})), "ran_on.engine_version: is missing"),
        (link_json(lambda d: d.pop("ran_on")), "ran_on: is missing"),
    ],
    ids=[
        "not text",
        "no fragment",
        "no run",
        "two runs",
        "bad character",
        "bad length",
        "oversized",
        "not zlib",
        "truncated",
        "trailing",
        "zip bomb",
        "not json",
        "not an object",
        "format",
        "seed",
        "steps",
        "final",
        "missing",
        "unknown",
        "program",
        "data",
        "final without ran_on",
        "ran_on without final",
        "ran_on fields",
        "no ran_on",
    ],
)
def test_malformed_share_links_are_refused(link: Any, said: str) -> None:
    with pytest.raises(LinkError) as refused:
        read_share_link(link)
    assert said in str(refused.value), str(refused.value)
    assert str(refused.value).startswith("the share link has ")


def test_a_link_to_a_tampered_program_never_runs_it() -> None:
    """A program is data: an op the catalog lacks is refused by name, whatever it is called."""
    evil = copy.deepcopy(program())
    evil["nodes"][3]["op"] = "__import__('os').system('true')"
    with pytest.raises(LinkError, match=r"program.nodes\[3\].op: node 'relu': unknown op"):
        read_share_link(share_link(Shared(evil, Settings(Level.DEBUG, 1, "cpu", 1, None, (), None))))


def test_split_hash_is_sha256_of_the_files_in_order(digits: tuple[Split, Split]) -> None:
    train, test = digits
    digest = hashlib.sha256(test.features + test.labels).hexdigest()
    assert check_data((DataVersion("test", f"sha256:{digest}", test.n, (64,)),), train, test) == []
