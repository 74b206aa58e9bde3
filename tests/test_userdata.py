"""The user's own data in the engine: the files the page's importers write (datasets.from_user_files),
checked by name; whether a program fits a data set (datafit), with every mismatch named; starter programs
that train on what they were written for; and the page's calls on each data source, on the CPU path under
wasmtime."""

from __future__ import annotations

import asyncio
import json
import math
import re
import struct
import tempfile
from pathlib import Path
from typing import Any

import pytest

from scellis import __version__
from scellis.app import DataMismatch, Driven, data_json, open_run, plan_example, starter_json
from scellis.datafit import fit_problems, program_classes, starter_program
from scellis.datasets import DIGITS_INFO, DataInfo, from_user_files
from scellis.engine import engine_files
from scellis.examples import char_transformer, digits_mlp
from scellis.pipeline import compile_program
from scellis.store import DirectoryStore

BUILD = json.dumps({"package_version": __version__, "engine_files": engine_files(), "tools": {"pyodide": "314.0.7"}})


def user_files(info: dict[str, Any], train: tuple[list, list], test: tuple[list, list]) -> dict[str, bytes]:
    """The five files, features and labels packed as the info says."""
    fx = "f" if info["feature_type"] == "float32" else "i"
    ly = "i" if info["label_type"] == "int32" else "f"
    out = {"dataset.json": json.dumps(info).encode()}
    for split, (x, y) in (("train", train), ("test", test)):
        out[f"{split}-x"] = struct.pack(f"<{len(x)}{fx}", *x)
        out[f"{split}-y"] = struct.pack(f"<{len(y)}{ly}", *y)
    return out


def meta(shape: list[int], feature_type: str = "float32", classes: list[str] | None = None) -> dict[str, Any]:
    return {
        "format": "scellis.data/1",
        "name": "points.csv",
        "example_shape": shape,
        "feature_type": feature_type,
        "label_type": "float32" if classes is None else "int32",
        "classes": classes,
    }


def blobs(n: int, seed: int) -> tuple[list[float], list[int]]:
    """Two well-separated classes of points in 4 dimensions: class k near (2k - 1) in every coordinate."""
    x, y = [], []
    state = seed
    for i in range(n):
        label = i % 2
        for _ in range(4):
            state = (state * 1103515245 + 12345) % 2**31
            x.append((2 * label - 1) + (state / 2**31 - 0.5))
        y.append(label)
    return x, y


def test_user_files_read_back_as_splits_with_their_description() -> None:
    files = user_files(meta([4], classes=["no", "yes"]), blobs(64, 1), blobs(16, 2))
    train, test, info = from_user_files(files)
    assert (train.n, test.n, train.width) == (64, 16, 4)
    assert info == DataInfo("points.csv", (4,), "float32", "int32", ("no", "yes"))
    table = {**meta([4], classes=["no", "yes"]), "columns": ["w", "h", "d", "e", "class"], "target": "class"}
    _, _, named = from_user_files(user_files(table, blobs(8, 1), blobs(4, 2)))
    assert (named.columns, named.target) == (("w", "h", "d", "e", "class"), "class")
    assert named.to_json()["target"] == "class"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda f: f.pop("test-y"), "the data files lack test-y"),
        (lambda f: f.update({"dataset.json": b"{"}), "dataset.json: Expecting property name enclosed in double quotes"),
        (lambda f: f.update({"dataset.json": b"[" * 100_000}), "dataset.json: nested deeper than 64 levels at line 1"),
        (lambda f: f.update({"dataset.json": b'{"a": "\xff"}'}), "dataset.json: not UTF-8 text"),
        (lambda f: f.update({"dataset.json": b"[]"}), "dataset.json: expected an object, got list"),
        (
            lambda f: f.update({"train-x": f["train-x"][:-4]}),
            "train-x: 1,020 bytes is not a whole number of examples of 4 float32",
        ),
        (lambda f: f.update({"train-y": f["train-y"][:-4]}), "train-x holds 64 examples but train-y holds 63 labels"),
        (
            lambda f: f.update({"test-y": struct.pack("<16i", *([0] * 15 + [2]))}),
            "test-y: example 15's label is 2, not a class from 0 to 1",
        ),
        (
            lambda f: f.update({"train-x": struct.pack("<f", math.nan) + f["train-x"][4:]}),
            "train-x: example 0, value 0 is nan, not a finite number",
        ),
    ],
)
def test_bad_user_files_are_named_with_the_example(change: Any, message: str) -> None:
    files = user_files(meta([4], classes=["no", "yes"]), blobs(64, 1), blobs(16, 2))
    change(files)
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        from_user_files(files)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("format", "scellis.data/2", "format must be 'scellis.data/1'"),
        ("example_shape", [4, 0], "example_shape must be a list of positive whole numbers"),
        ("feature_type", "float16", "feature_type must be 'float32' or 'int32'"),
        ("classes", ["only"], "classes must list the names of two or more classes"),
        ("name", "", "name must be a non-empty text"),
        ("columns", ["a"], "columns must list the names of a table's two or more columns"),
        ("target", "age", "the target column 'age' is none of the table's columns ('a', 'b', 'y')"),
    ],
)
def test_bad_descriptions_name_their_field(field: str, value: Any, message: str) -> None:
    info = {**meta([4], classes=["no", "yes"]), "columns": ["a", "b", "y"], "target": "y", field: value}
    with pytest.raises(ValueError, match=re.escape(f"dataset.json: {message}")):
        from_user_files(
            user_files({**info, "feature_type": "float32"}, blobs(8, 1), blobs(4, 2))
            | {"dataset.json": json.dumps(info).encode()}
        )


def test_a_numeric_target_has_no_classes_and_finite_numbers() -> None:
    x, _ = blobs(32, 1)
    files = user_files(meta([4]), (x, [float(i) for i in range(32)]), (x[:16], [0.5] * 4))
    _, test, info = from_user_files(files)
    assert info.classes is None and info.label_type == "float32" and test.n == 4
    files["test-y"] = struct.pack("<4f", 0, 0, math.inf, 0)
    with pytest.raises(ValueError, match="test-y: example 2's target is inf, not a finite number"):
        from_user_files(files)


def test_fit_problems_name_the_input_node_and_both_sides() -> None:
    program = digits_mlp()
    compiled = compile_program(program)
    assert program_classes(compiled) == 10
    assert fit_problems(program, compiled, DIGITS_INFO) == []
    three_hundred = DataInfo("big.csv", (3, 10, 10), "float32", "int32", tuple(str(i) for i in range(12)))
    assert fit_problems(program, compiled, three_hundred) == [
        "input 'pixels' takes examples of shape [64] (64 values); "
        "the data's examples have shape [3, 10, 10] (300 values)",
        "the program tells 10 classes apart (its logits' last axis); the data has 12",
    ]
    numbers = DataInfo("prices.csv", (64,), "float32", "float32", None)
    assert fit_problems(program, compiled, numbers) == [
        "input 'digit' takes int32 labels; the data's labels are numbers (float32)"
    ]
    # the same number of values in another shape is read row by row: no problem
    assert fit_problems(program, compiled, DataInfo("img", (8, 8, 1), "float32", "int32", ("a", "b"))) == []


def test_the_character_transformer_fits_the_characters_and_not_the_digits() -> None:
    program = char_transformer()
    compiled = compile_program(program)
    problems = fit_problems(program, compiled, DIGITS_INFO)
    assert problems[1] == "input 'context' takes int32 values; the data's features are numbers (float32)"


def run_on(source: str, files: dict[str, bytes], program: str, epochs: int) -> dict[str, Any]:
    """The page's run on this data, driven to its end: the last epoch's row."""

    async def drive() -> dict[str, Any]:
        with tempfile.TemporaryDirectory(prefix="scellis-userdata-") as scratch:
            run = await open_run(
                source,
                files,
                program,
                device_kind="cpu",
                level="debug",
                seed="5",
                epochs=epochs,
                build=BUILD,
                store=DirectoryStore(Path(scratch)),
            )
            assert isinstance(run, Driven)
            rows: list[dict[str, Any]] = []
            while True:
                state = json.loads(await run.advance(50))
                rows += state["epochs_done"]
                if state["done"]:
                    return rows[-1]

    return asyncio.run(drive())


def test_a_starter_program_learns_two_blobs_from_user_files() -> None:
    files = user_files(meta([4], classes=["no", "yes"]), blobs(256, 1), blobs(64, 2))
    info = json.loads(data_json("user", files))
    assert info["example_shape"] == [4] and [v["split"] for v in info["versions"]] == ["train", "test"]
    program = starter_json("user", files)
    last = run_on("user", files, program, 3)
    assert last["test"]["metric/accuracy"] == 1.0


def test_a_starter_program_regresses_a_numeric_target() -> None:
    x, _ = blobs(256, 1)
    target = [sum(x[i * 4 : i * 4 + 4]) for i in range(256)]  # a linear function of the features
    tx, _ = blobs(64, 2)
    held_out = [sum(tx[i * 4 : i * 4 + 4]) for i in range(64)]
    files = user_files(meta([4]), (x, target), (tx, held_out))
    program = starter_json("user", files)
    assert "mse" in program
    last = run_on("user", files, program, 5)
    variance = sum(t * t for t in held_out) / 64 - (sum(held_out) / 64) ** 2  # the loss of a constant guess
    assert last["test"]["loss"] < 0.1 * variance and "metric/accuracy" not in last["test"]


def test_image_and_token_starters_compile_for_their_data() -> None:
    images = DataInfo("pets.zip", (16, 16, 3), "float32", "int32", ("cat", "dog"))
    program = starter_program(images)
    assert [n["op"] for n in program["nodes"]][:3] == ["input", "permute", "conv2d"]
    assert fit_problems(program, compile_program(program), images) == []
    tokens = DataInfo("tokens.npz", (16,), "int32", "int32", tuple("abc"))
    with pytest.raises(ValueError, match="token windows need the vocabulary size"):
        starter_program(tokens)
    program = starter_program(tokens, vocab=40)
    assert fit_problems(program, compile_program(program), tokens) == []


def test_the_page_plans_and_refuses_a_program_that_does_not_fit() -> None:
    files = user_files(meta([4], classes=["no", "yes"]), blobs(64, 1), blobs(16, 2))
    answer = json.loads(asyncio.run(plan_example("user", files, json.dumps(digits_mlp()), "cpu", "prod", cap=None)))
    unfit = answer["unfit"]
    assert unfit["data"] == "points.csv" and unfit["fits"] == ["site"]
    assert unfit["problems"] == [
        "input 'pixels' takes examples of shape [64] (64 values); the data's examples have shape [4] (4 values)"
    ]
    with pytest.raises(DataMismatch, match=r"the program does not fit the data 'points\.csv': input 'pixels'"):
        run_on("user", files, json.dumps(digits_mlp()), 1)


def test_the_characters_train_the_character_transformer() -> None:
    answer = json.loads(asyncio.run(plan_example("chars", {}, json.dumps(char_transformer()), "cpu", "prod", cap=None)))
    assert answer["verdict"]["color"] == "green"
    info = json.loads(data_json("chars", {}))
    assert info["feature_type"] == "int32" and len(info["classes"]) == info["vocab"] == 32
    with pytest.raises(ValueError, match="unknown data source 'mine'"):
        data_json("mine", {})
