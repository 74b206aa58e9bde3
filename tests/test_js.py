"""The app's JS tests (tests/js/*.test.js, Node's own test runner, one run for them all) and what Python
checks on either side of them: it writes what they take from the engine (js_inputs.py), and reads with the
engine what they write for it (build/js-outputs/): the programs the editor writes validate, and the files
the page writes for the engine read back as the page describes them.

By hand: `.venv/bin/python tests/js_inputs.py`, then `node --test tests/js/`.
"""

from __future__ import annotations

import copy
import inspect
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from js_data_inputs import split_arrays
from js_inputs import EDITOR_EXAMPLES, EXAMPLES, NOT_PROGRAMS, check, write_inputs

from scellis import examples
from scellis.app import examples_json
from scellis.datasets import DATA_FILES, from_files, from_user_files
from scellis.graph import validate
from scellis.manifest.pins import data_versions

ROOT = Path(__file__).resolve().parents[1]
OUTPUTS = ROOT / "build" / "js-outputs"
# The page's modules are ES modules in a package.json without "type" (esbuild bundles them as they are):
# Node reads them as such, and this flag keeps it from saying so once per test file. A test that never
# settles (a port left open) fails on its own bound, naming itself, before the run's timeout.
NODE_TEST = [
    "--disable-warning=MODULE_TYPELESS_PACKAGE_JSON",
    "--test",
    "--test-timeout=120000",
    "--test-reporter=spec",
    "tests/js/",
]


@pytest.fixture(scope="module")
def node_run() -> subprocess.CompletedProcess[str]:
    node = shutil.which("node")
    assert node, "node is required (the build needs it too): run scripts/setup"
    shutil.rmtree(OUTPUTS, ignore_errors=True)
    write_inputs()
    return subprocess.run([node, *NODE_TEST], cwd=ROOT, capture_output=True, text=True, check=False, timeout=600)


def written(name: str, key: str) -> Any:
    """What the test file `name` wrote for Python under `key` (lib.js's forPython)."""
    return json.loads((OUTPUTS / name / f"{key}.json").read_text())


def test_the_js_tests_pass(node_run: subprocess.CompletedProcess[str]) -> None:
    assert node_run.returncode == 0, node_run.stdout + node_run.stderr


def test_the_programs_the_model_and_the_editor_write_validate(node_run: subprocess.CompletedProcess[str]) -> None:
    round_trips = written("graph_model", "round_trips")
    assert set(round_trips) == set(EXAMPLES)
    for program in round_trips.values():
        validate(program)
    validate(written("graph_model", "positioned"))  # a position given to a node the model placed
    validate(written("graph_model", "reconnected"))  # the wire the model refused, connected where it may go
    validate(written("editor", "edited"))  # added, connected, pasted, set, deleted, undone


def test_the_engine_reads_the_split_files_the_page_writes(node_run: subprocess.CompletedProcess[str]) -> None:
    out = written("data_import", "engine_files")
    written_files = [split[part] for split in out["files"] for part in ("features", "labels")]  # train, then test
    files = {name: bytes.fromhex(text) for name, text in zip(DATA_FILES, written_files, strict=True)}
    train, test = from_files(files)  # the engine's own reader accepts the files
    assert [v.__dict__ | {"shape": list(v.shape)} for v in data_versions(train, test)] == out["versions"]
    x, y = split_arrays()
    rows = out["indices"]
    assert train.features == x[rows["train"]].tobytes() and test.labels == y[rows["validation"]].astype("<i4").tobytes()


def test_the_engine_reads_back_what_the_data_card_writes(node_run: subprocess.CompletedProcess[str]) -> None:
    given = written("userdatamodel", "engine_files")
    files = {k: v.encode() if k == "dataset.json" else bytes.fromhex(v) for k, v in given.items()}
    train, test, info = from_user_files(files)
    assert (train.n, test.n, info.example_shape, info.classes) == (3, 2, (2, 2, 3), ("cat", "dog"))


# What the JS tests are given


def test_every_example_is_given_to_the_js_tests() -> None:
    public = {n for n, f in inspect.getmembers(examples, inspect.isfunction) if f.__module__ == examples.__name__}
    assert public == set(EXAMPLES) | NOT_PROGRAMS


def test_the_editors_examples_are_the_builders_own_page_example_first() -> None:
    given = json.loads(examples_json())
    names = ["digits-mlp", "digits-cnn", "char-transformer", "option-pricing", "ising", "logistic-bootstrap"]
    assert [e["name"] for e in given] == names
    assert [e["program"] for e in given] == [EXAMPLES[name] for name in EDITOR_EXAMPLES]
    assert [e["source"] for e in given] == ["site", "site", "chars", None, None, "cancer"]
    assert given[0]["summary"].startswith("scikit-learn's 8x8 digits: 64 -> 128 (ReLU) -> 10")
    assert all("\n" not in e["summary"] and e["summary"].endswith(".") for e in given)


def test_a_value_typed_that_is_not_one_is_named_by_the_engine() -> None:
    """The side panel keeps text it cannot read as the parameter's kind (tests/js/editor.test.js): the
    engine's check says what is wrong with it."""
    program = copy.deepcopy(EXAMPLES["digits_mlp"])
    program["nodes"][2]["params"]["features"] = "abc"
    assert [i["message"] for i in check(program)] == ["must be an integer, got 'abc'"]
