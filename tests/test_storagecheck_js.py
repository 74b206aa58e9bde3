"""The storage check's logic under Node (app/src/storagecheck.js) over a store's objects as the engine
writes them: every damaged object found by kind (corrupt, not bytes, misnamed); the objects a kept
checkpoint names (its history's chain of segments) found as the engine's collector finds them
(store.fsck.collect), so the page and the CLI free the same objects; the roots are every key a Runs record
holds, a record of another shape included; and store.js's put compares stored bytes with what it writes."""

from __future__ import annotations

import asyncio
import struct
import sys
from pathlib import Path

from nodejs import run_node
from test_app_js import SRC

from scellis.levels import Level
from scellis.rng import RngState
from scellis.store import Checkpoint, DirectoryStore, Tensor, key_of, save
from scellis.store.fsck import collect
from scellis.store.history import History

sys.path.insert(0, str(Path(__file__).parent / "store"))
from memstore import MemoryStore

PRELUDE = f"""
import assert from "node:assert/strict";
import {{ readFileSync }} from "node:fs";
import * as check from "{SRC}/storagecheck.js";
import {{ sameBytes }} from "{SRC}/store.js";
const inputs = JSON.parse(readFileSync(process.argv[2], "utf8"));
const bytes = (hex) => new Uint8Array(Buffer.from(hex, "hex")).buffer;
const objects = new Map((inputs.objects ?? []).map(([k, v]) => [k, v === null ? {{ not: "bytes" }} : bytes(v)]));
const store = {{ keys: async () => [...objects.keys()].sort(), raw: async (k) => objects.get(k) }};
const out = {{}};
"""


def run_chain() -> tuple[dict[str, bytes], list[str], list[str]]:
    """A run's objects: three rule checkpoints chained by their histories, a final state, an orphan segment
    and a stray object. Returns the objects, the checkpoint keys in order and the extra keys."""
    store = MemoryStore()
    events: list[tuple[int, int, str]] = []
    written: list[tuple[int, str]] = []
    base: tuple[str | None, int, int] = (None, 0, 0)
    for step in (10, 20, 30, 31):
        if step != 31:
            events.append((step, 1, "checkpoint"))
        history = History(tuple(events), tuple(written), *base)
        tensor = Tensor("F32", (1,), struct.pack("<f", step))
        loop = {"by_rule": step != 31}
        state = Checkpoint(
            "sha256:" + "ab" * 32, Level.DEBUG, "cpu", step, 1, 0, RngState(1), loop, {"w": tensor}, history
        )
        key = asyncio.run(save(store, state))
        if step != 31:
            ref = history.reference()
            base = (ref.key, ref.events, ref.written)
            written.append((step, key))
    orphan = store.put(History(((99, 9, "lost"),)).segment())
    stray = store.put(b"nothing keeps this")
    return store.objects, [k for _, k in written] + [key], [orphan, stray]


def test_unused_objects_are_the_ones_the_engine_collects(tmp_path: Path) -> None:
    objects, checkpoints, extra = run_chain()
    directory = DirectoryStore(tmp_path)
    for data in objects.values():
        directory.put(data)
    roots = [checkpoints[2], checkpoints[3]]  # a record keeps the last rule checkpoint and the final state
    engine = sorted(key_of(Path(r.path).read_bytes()) for r in collect(directory, roots, dry_run=True))
    out = run_node(
        PRELUDE,
        """
        out.unused = (await check.unusedObjects(store, new Set(inputs.roots))).map((u) => u.key).sort();
        out.everything = (await check.unusedObjects(store, new Set())).length;
        """,
        {"objects": [[k, v.hex()] for k, v in objects.items()], "roots": roots},
    )
    assert out["unused"] == engine
    assert set(engine) == {checkpoints[0], checkpoints[1], *extra}  # their histories are the kept ones' chain
    assert out["everything"] == len(objects)


def test_damage_is_found_by_kind() -> None:
    good = b"whole"
    corrupt = key_of(b"was this")
    objects = [[key_of(good), good.hex()], [corrupt, b"is now this".hex()], ["latest", good.hex()]]
    objects.append([key_of(b"x"), None])
    out = run_node(
        PRELUDE,
        """
        const seen = [];
        const found = await check.checkObjects(store, (done, total) => seen.push([done, total]));
        out.whole = found.whole;
        out.damage = found.damage.map((d) => [d.key, d.kind, d.detail]);
        out.seen = seen;
        """,
        {"objects": objects},
    )
    assert out["whole"] == 1 and out["seen"][-1] == [4, 4]
    damage = {key: (kind, detail) for key, kind, detail in out["damage"]}
    assert damage[corrupt] == ("corrupt", f"11 bytes that hash to {key_of(b'is now this')}")
    assert damage["latest"][0] == "misnamed" and damage[key_of(b"x")][0] == "not bytes"


def test_roots_are_every_key_a_record_holds() -> None:
    a, b, c, d = ("sha256:" + ch * 64 for ch in "abcd")
    out = run_node(
        PRELUDE,
        f"""
        const record = {{ id: "1", checkpoints: [{{ step: 1, key: "{a}", kind: "rule" }}], final: "{b}",
          resumedFrom: null, rows: [] }};
        const other = {{ id: "2", format: 9, nested: {{ deep: [["{c}"]] }}, final: "{d}" }};  // another shape
        out.roots = [...check.rootsOf([record, other])].sort();
        const x = new Uint8Array([1, 2, 3]).buffer;
        out.same = [check.referencesOf(new Uint8Array(4)).length, sameBytes(x, x.slice(0)),
          sameBytes(x, new Uint8Array([1, 2, 4]).buffer), sameBytes(undefined, x), sameBytes("abc", x)];
        """,
    )
    assert out["roots"] == sorted([a, b, c, d])
    assert out["same"] == [0, True, False, False, False]
