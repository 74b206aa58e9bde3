"""Forged tensor files, checkpoint objects and history segments (a fixed seed, a fixed count): the tensor
file reader, the checkpoint reader (`load`, with its history) and the resume checks on the loop state
raise only their named errors, finish in bounded time, and never accept bytes as something they are not:
what `decode` accepts the `safetensors` package reads the same; a checkpoint `load` accepts is exactly
the object stored under its key; damaged bytes under a checkpoint's key are refused as corrupt."""

from __future__ import annotations

import asyncio
import json
import random
import signal
import struct
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np
from memstore import MemoryStore
from safetensors.numpy import load as reference_load

from scellis.levels import Level
from scellis.loop import LoopState
from scellis.rng import RngState
from scellis.session import checked_loop
from scellis.store import Checkpoint, FormatError, ResumeError, StoreError, Tensor, decode, load, save
from scellis.store.history import History

PROGRAM = "sha256:" + "ab" * 32
SEED, CASES, BOUND_S = 19, 600, 5
NUMPY = {"F32": "<f4", "F16": "<f2", "I32": "<i4", "U32": "<u4", "BOOL": "bool"}
VALUES: list[Any] = [None, True, -1, 0, 2**70, 1.5, "", "x" * 1000, [], {}, [1, 2], {"a": 1}, "sha256:" + "0" * 64]


class Hang(Exception):
    pass


def original() -> tuple[MemoryStore, str, Checkpoint]:
    """A store holding a checkpoint as a session writes them (loop fields, two earlier checkpoints)."""
    store = MemoryStore()
    earlier = []
    for step in (10, 20):
        history = History(tuple((s, 1, "checkpoint") for s in range(10, step + 1, 10)), tuple(earlier))
        base = (history.reference().key, len(history.events), len(history.written))
        store.put(history.segment())
        earlier.append((step, store.put(f"checkpoint {step}".encode())))
    history = History(((10, 1, "checkpoint"), (20, 1, "checkpoint"), (25, 2, "lr x0.5")), tuple(earlier), *base)
    loop = {
        "state": {"lr_scale": 0.5, "best": {"1": 0.25}, "waits": {}, "skipped": 0, "stopped": False},
        "order_drawn": True,
        "by_rule": False,
        "best": [0.25, 20, earlier[1][1]],
        "loss": 0.5,
    }
    tensors = {
        "param/w": Tensor("F32", (2, 3), struct.pack("<6f", *range(6))),
        "opt.t": Tensor("I32", (1,), struct.pack("<i", 25)),
        "mask": Tensor("BOOL", (3,), bytes([0, 1, 1])),
    }
    checkpoint = Checkpoint(PROGRAM, Level.DEBUG, "cpu", 25, 2, 3, RngState(7, {"shuffle": 3}), loop, tensors, history)
    return store, asyncio.run(save(store, checkpoint)), checkpoint


def header_of(data: bytes) -> tuple[dict[str, Any], bytes]:
    (n,) = struct.unpack_from("<Q", data)
    return json.loads(data[8 : 8 + n]), data[8 + n :]


def with_header(header: object, body: bytes, rng: random.Random) -> bytes:
    text = json.dumps(header, sort_keys=rng.random() < 0.8, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8 if rng.random() < 0.8 else rng.randrange(3))
    return struct.pack("<Q", len(text)) + text + body


def mutate_value(value: Any, rng: random.Random, depth: int = 0) -> Any:
    """`value` with one part replaced (a dict entry, a list item, or the whole) or one key dropped."""
    if isinstance(value, dict) and value and depth < 4 and rng.random() < 0.7:
        key = rng.choice(sorted(value))
        if rng.random() < 0.15:
            return {k: v for k, v in value.items() if k != key}
        return {**value, key: mutate_value(value[key], rng, depth + 1)}
    if isinstance(value, list) and value and depth < 4 and rng.random() < 0.7:
        i = rng.randrange(len(value))
        return [*value[:i], mutate_value(value[i], rng, depth + 1), *value[i + 1 :]]
    return rng.choice([*VALUES, "[" * 5000 + "]" * 5000])


def flipped(data: bytes, rng: random.Random) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        out[rng.randrange(len(out))] ^= 1 << rng.randrange(8)
    return bytes(out)


def resized(data: bytes, rng: random.Random) -> bytes:
    return data[: rng.randrange(len(data))] if rng.random() < 0.6 else data + rng.randbytes(rng.randint(1, 64))


def lying_length(data: bytes, rng: random.Random) -> bytes:
    n = rng.choice([0, 1, 7, len(data), 2**40, 2**64 - 1, rng.randrange(len(data))])
    return struct.pack("<Q", n) + data[8:]


def new_structure(data: bytes, rng: random.Random) -> bytes:
    header, body = header_of(data)
    return with_header(mutate_value(header, rng), body, rng)


def new_text(data: bytes, rng: random.Random) -> bytes:
    header, body = header_of(data)
    field = rng.choice(sorted(header["__metadata__"]))
    texts = ["[" * 100_000, "NaN", "1e999", '"\\ud800"', "{}", "null", "-1", '{"a":', json.dumps(VALUES[7])]
    return with_header({**header, "__metadata__": {**header["__metadata__"], field: rng.choice(texts)}}, body, rng)


def new_value(data: bytes, rng: random.Random) -> bytes:
    header, body = header_of(data)
    meta = header["__metadata__"]
    field = rng.choice(sorted(meta))
    text = json.dumps(mutate_value(json.loads(meta[field]), rng), sort_keys=True, separators=(",", ":"))
    return with_header({**header, "__metadata__": {**meta, field: text}}, body, rng)


def scrambled(data: bytes, rng: random.Random) -> bytes:
    cut = rng.randrange(9, len(data))
    return data[:8] + data[8:cut][::-1] + data[cut:]


# bit flips; cut short or grown; a header length that lies; the header's structure (offsets, shapes, dtypes,
# metadata) changed; a metadata field's text replaced (deep nesting, NaN, not JSON); its value changed
FORGERS = (flipped, resized, lying_length, new_structure, new_text, new_value, scrambled)


def forge(data: bytes, rng: random.Random) -> bytes:
    return rng.choice(FORGERS)(data, rng)


def forge_segment(store: MemoryStore, checkpoint: Checkpoint, rng: random.Random) -> bytes:
    """The checkpoint, naming a forged history segment stored under its own key."""
    assert isinstance(checkpoint.history, History)
    segment = json.loads(checkpoint.history.segment())
    forged = mutate_value(segment, rng) if rng.random() < 0.8 else segment | {"previous": checkpoint.history.base}
    text = json.dumps(forged, sort_keys=rng.random() < 0.8, separators=(",", ":")).encode()
    ref = checkpoint.history.reference()
    counts = {"events": ref.events + rng.choice([0, 0, 1, -1]), "written": ref.written + rng.choice([0, 0, 1])}
    ref = replace(ref, key=store.put(text), **{k: max(v, 0) for k, v in counts.items()})
    return replace(checkpoint, history=ref).to_bytes()


def same_as_reference(data: bytes, tensors: dict[str, Tensor], metadata: dict[str, str]) -> bool:
    try:
        theirs = reference_load(data)
    except Exception:  # the reference refuses what we accepted
        return False
    (n,) = struct.unpack_from("<Q", data)
    header = json.loads(data[8 : 8 + n])
    ok = header.get("__metadata__", {}) == metadata and sorted(theirs) == sorted(tensors)
    for name, array in theirs.items():
        tensor = tensors[name]
        ok = ok and np.dtype(NUMPY[tensor.dtype]) == array.dtype and tuple(array.shape) == tensor.shape
        ok = ok and array.tobytes() == tensor.data
    return ok


def judged(case: Callable[[], bool]) -> str:
    """'refused', 'accepted', 'crash', 'hang' or 'wrong' for one forged input."""
    signal.alarm(BOUND_S)
    began = time.perf_counter()
    try:
        outcome = "accepted" if case() else "wrong"
    except (FormatError, ResumeError, StoreError):
        outcome = "refused"
    except Hang:
        outcome = "hang"
    except Exception:
        outcome = "crash"
    finally:
        signal.alarm(0)
    return "hang" if time.perf_counter() - began > BOUND_S else outcome


def test_forged_tensor_files_and_checkpoints(fault_log: Callable[..., None]) -> None:
    def on_alarm(signum: int, frame: object) -> None:
        raise Hang

    previous = signal.signal(signal.SIGALRM, on_alarm)
    rng = random.Random(SEED)
    store, key, checkpoint = original()
    data = store.get(key)
    program = {"expect_program": PROGRAM, "expect_level": Level.DEBUG}
    counts: dict[str, int] = {}
    failures: list[str] = []
    try:
        for i in range(CASES):
            forged = forge(data, rng) if i % 4 else forge_segment(store, checkpoint, rng)

            def read_file(forged: bytes = forged) -> bool:
                tensors, metadata = decode(forged)
                return same_as_reference(forged, tensors, metadata)

            def read_checkpoint(forged: bytes = forged) -> bool:
                got = asyncio.run(load(store, store.put(forged), **program))
                loop_state, _ = checked_loop(got)
                LoopState.from_json((), {**got.loop["state"], "events": [list(e) for e in loop_state.events]})
                return got.to_bytes() == forged

            def under_its_key(forged: bytes = forged) -> bool:
                damaged = MemoryStore()
                damaged.objects = {**store.objects, key: forged}
                return asyncio.run(load(damaged, key, **program)) == asyncio.run(load(store, key, **program))

            for name, case in (("file", read_file), ("checkpoint", read_checkpoint), ("corrupt", under_its_key)):
                outcome = judged(case)
                counts[outcome] = counts.get(outcome, 0) + 1
                if outcome in ("crash", "hang", "wrong"):
                    failures.append(f"case {i} {name}: {outcome}")
    finally:
        signal.signal(signal.SIGALRM, previous)
    inputs = 3 * CASES
    fault_log(
        "forged-checkpoints",
        inputs=inputs,
        forged_objects=CASES,
        refused=counts.get("refused", 0),
        accepted=counts.get("accepted", 0),
        crashes=counts.get("crash", 0),
        hangs=counts.get("hang", 0),
        silent_wrong=counts.get("wrong", 0),
    )
    assert not failures, failures[:20]
    assert counts.get("refused", 0) > inputs // 2  # the forgeries mostly are refused, not waved through
