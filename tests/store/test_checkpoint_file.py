"""Checkpoints: every field survives the file, the same state has the same key, and resuming refuses,
by name, anything but the checkpoint the run expects."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import struct
from pathlib import Path

import pytest

from scellis.levels import Level
from scellis.rng import RngState
from scellis.store import Checkpoint, DirectoryStore, FormatError, ResumeError, Tensor, decode, encode, load, save
from scellis.store.checkpoint import FIELDS

PROGRAM = "sha256:" + "ab" * 32
OTHER = "sha256:" + "cd" * 32


def checkpoint(**change: object) -> Checkpoint:
    base = Checkpoint(
        program=PROGRAM,
        level=Level.DEBUG,
        device="lavapipe",
        step=200,
        epoch=3,
        cursor=40,
        rng=RngState(1234, {"shuffle": 3, "dropout": 200, "init": 1}),
        loop={"lr": 5e-4, "plateau": {"evaluations": 2, "best": 0.25}, "events": ["epoch 2: lr 1e-3 -> 5e-4"]},
        tensors={
            "param/w": Tensor("F32", (2, 2), struct.pack("<4f", 0.5, -1.0, 2.0, 0.125)),
            "opt.m/w": Tensor("F32", (2, 2), bytes(16)),
            "opt.t": Tensor("I32", (1,), struct.pack("<i", 200)),
        },
    )
    return dataclasses.replace(base, **change)  # type: ignore[arg-type]


def run(coroutine: object) -> object:
    return asyncio.run(coroutine)  # type: ignore[arg-type]


@pytest.fixture
def store(tmp_path: Path) -> DirectoryStore:
    return DirectoryStore(tmp_path)


def test_every_field_round_trips() -> None:
    original = checkpoint()
    back = Checkpoint.from_bytes(original.to_bytes())
    assert back == dataclasses.replace(original, history=original.history.reference())  # the history: by key
    assert back.rng.positions == {"dropout": 200, "init": 1, "shuffle": 3}


def test_fields_are_json_text_in_the_metadata() -> None:
    _, metadata = decode(checkpoint().to_bytes())
    assert sorted(metadata) == sorted(FIELDS)
    assert metadata["format"] == '"scellis.checkpoint/2"'
    assert metadata["program"] == json.dumps(PROGRAM) and metadata["level"] == '"debug"'
    assert metadata["step"] == "200" and metadata["cursor"] == "40"
    assert json.loads(metadata["rng"]) == {
        "format": "scellis.rng/1",
        "seed": 1234,
        "positions": {"dropout": 200, "init": 1, "shuffle": 3},
    }
    assert (
        metadata["loop"]
        == '{"events":["epoch 2: lr 1e-3 -> 5e-4"],"lr":0.0005,"plateau":{"best":0.25,"evaluations":2}}'
    )


def test_the_same_state_has_the_same_key(store: DirectoryStore) -> None:
    a = run(save(store, checkpoint()))
    shuffled = checkpoint(
        rng=RngState(1234, {"init": 1, "dropout": 200, "shuffle": 3}),
        loop={"events": ["epoch 2: lr 1e-3 -> 5e-4"], "plateau": {"best": 0.25, "evaluations": 2}, "lr": 5e-4},
        tensors=dict(reversed(list(checkpoint().tensors.items()))),
    )
    assert run(save(store, shuffled)) == a
    assert run(save(store, checkpoint(step=201))) != a
    assert run(save(store, checkpoint(rng=RngState(1234, {"shuffle": 3, "dropout": 201, "init": 1})))) != a
    assert len(store.keys()) == 4  # three checkpoints and the one (empty) history they share


def test_load_returns_the_checkpoint_saved(store: DirectoryStore) -> None:
    key = run(save(store, checkpoint()))
    assert run(load(store, key, expect_program=PROGRAM, expect_level=Level.DEBUG)) == checkpoint()


def resume_error(store: DirectoryStore, key: object, program: str = PROGRAM, level: Level = Level.DEBUG) -> ResumeError:
    with pytest.raises(ResumeError) as caught:
        run(load(store, key, expect_program=program, expect_level=level))  # type: ignore[arg-type]
    return caught.value


def test_another_program_is_refused_showing_both_keys(store: DirectoryStore) -> None:
    key = run(save(store, checkpoint()))
    error = resume_error(store, key, program=OTHER)
    assert error.reasons == ["program"]
    assert (
        str(error) == f"cannot resume from {key}: it was saved by program {PROGRAM}, and this run's program is {OTHER}"
    )


def test_another_level_is_refused_showing_both(store: DirectoryStore) -> None:
    key = run(save(store, checkpoint()))
    error = resume_error(store, key, level=Level.PROD)
    assert error.reasons == ["level"]
    assert "it was saved at level debug, and this run is at level prod" in str(error)
    assert resume_error(store, key, program=OTHER, level=Level.FAST).reasons == ["program", "level"]


def test_missing_corrupt_and_malformed_keys_are_refused(store: DirectoryStore) -> None:
    key = run(save(store, checkpoint()))
    absent = "sha256:" + "0" * 64
    error = resume_error(store, absent)
    assert error.reasons == ["missing"] and f"no object {absent} in the store at {store.root}" in str(error)
    path = store.path(key)
    data = bytearray(path.read_bytes())
    data[-3] ^= 0x80  # one bit of one parameter
    path.write_bytes(bytes(data))
    error = resume_error(store, key)
    assert error.reasons == ["corrupt"] and f"object {key} in the store at {store.root} is corrupt" in str(error)
    assert resume_error(store, "latest").reasons == ["bad key"]


def test_an_object_that_is_not_a_checkpoint_is_refused(store: DirectoryStore) -> None:
    key = store.put(encode({"w": Tensor("F32", (1,), bytes(4))}, {"format": '"scellis.checkpoint/1"'}))
    error = resume_error(store, key)
    assert error.reasons == ["not a checkpoint"] and "missing ['cursor', 'device'" in str(error)
    assert resume_error(store, store.put(b"plain text")).reasons == ["not a checkpoint"]


def metadata_with(**change: str) -> bytes:
    tensors, metadata = decode(checkpoint().to_bytes())
    return encode(tensors, {**metadata, **change})


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"format": '"scellis.checkpoint/1"'}, "'format' is 'scellis.checkpoint/1', expected 'scellis.checkpoint/2'"),
        ({"level": '"turbo"'}, "'level' is 'turbo', not one of debug, prod, fast"),
        ({"program": '"sha256:abc"'}, "program must be a program key"),
        ({"step": "-1"}, "step must be a non-negative integer, not -1"),
        ({"epoch": "1.5"}, "epoch must be a non-negative integer, not 1.5"),
        ({"cursor": "true"}, "cursor must be a non-negative integer, not True"),
        ({"device": "3"}, "device must be a name, not 3"),
        ({"rng": "[]"}, r"'rng' must be a JSON object, not \[\]"),
        ({"rng": '{"format": "x"}'}, "not an RNG state"),
        ({"loop": "[]"}, r"loop must be a JSON object, not \[\]"),
        ({"loop": "{"}, "checkpoint metadata 'loop': Expecting property name"),
        ({"loop": "[" * 100_000 + "]" * 100_000}, "checkpoint metadata 'loop': nested deeper than 64 levels"),
        ({"log": '{"key": "sha256:12", "events": 0, "written": 0}'}, "metadata 'log.key': not an object key"),
        ({"log": '{"key": null}'}, "checkpoint metadata 'log' must be an object of key, events, written"),
        ({"extra": '"1"'}, r"unexpected \['extra'\]"),
    ],
)
def test_from_bytes_names_the_field_at_fault(change: dict[str, str], message: str) -> None:
    with pytest.raises(FormatError, match=message):
        Checkpoint.from_bytes(metadata_with(**change))


def test_state_that_json_cannot_hold_is_refused_when_written() -> None:
    with pytest.raises(ValueError, match="checkpoint field 'loop' is not JSON"):
        checkpoint(loop={"best": float("inf")}).to_bytes()
    with pytest.raises(ValueError, match="checkpoint field 'loop' is not JSON"):
        checkpoint(loop={"when": object()}).to_bytes()
    with pytest.raises(ValueError, match="program must be a program key"):
        checkpoint(program="sha256:nope")
