"""What the JS tests (tests/js/*.test.js) take from Python: the engine's example programs, op catalog and
issues, a store of chained checkpoints with the engine's collection of it, arrays and archives that numpy
and zipfile write (js_data_inputs.py), and malformed data files with the reference's reading of each.

Written as JSON, one file per test file, to build/js-inputs/: tests/test_js.py writes them before it runs
`node --test tests/js/`; `python tests/js_inputs.py` writes them for a run by hand.
"""

from __future__ import annotations

import asyncio
import copy
import json
import random
import struct
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from data_fuzz_cases import SEED, cases, reference
from js_data_inputs import data_import, data_limits

from scellis import examples
from scellis.app import check_program
from scellis.graph import ProgramError, palette, validate
from scellis.levels import Level
from scellis.rng import RngState
from scellis.store import Checkpoint, DirectoryStore, Tensor, key_of, save
from scellis.store.fsck import collect
from scellis.store.history import History

sys.path.insert(0, str(Path(__file__).parent / "store"))
from memstore import MemoryStore

ROOT = Path(__file__).resolve().parents[1]
INPUTS = ROOT / "build" / "js-inputs"

# Every example program; a new example in scellis.examples must be added here (tests/test_js.py checks).
EXAMPLES = {
    "digits_mlp": examples.digits_mlp(),
    "digits_cnn": examples.digits_cnn(),
    "char_transformer": examples.char_transformer(),
    "deep_chain": examples.deep_chain(24),
    "mlp": examples.mlp(784, [512, 512], 10, 64),
    "option_pricing": examples.option_pricing(),
    "ising": examples.ising(),
    "logistic_bootstrap": examples.logistic_bootstrap(),
}
# an IR function for the RNG tests, the analytic checks, and the example index: not programs
NOT_PROGRAMS = {"random_draws", "black_scholes_call", "onsager_magnetisation", "catalogue"}
# The examples the editor opens, as the worker gives them (scellis.app.examples_json).
EDITOR_EXAMPLES = ["digits_mlp", "digits_cnn", "char_transformer", "option_pricing", "ising", "logistic_bootstrap"]


# -- the graph model and the editor ---------------------------------------------------------------------


def issues_of(program: dict[str, Any]) -> list[dict[str, Any]]:
    """The validator's issues of a program it refuses."""
    try:
        validate(program)
    except ProgramError as err:
        return [issue.to_json() for issue in err.issues]
    raise AssertionError("the validator accepted a program broken on purpose")


def check(program: dict[str, Any]) -> list[dict[str, Any]]:
    """The engine's issues of `program`, as the worker's `check` answers them."""
    return json.loads(check_program(json.dumps(program)))["issues"]


def index_of(program: dict[str, Any], node_id: str) -> int:
    return next(i for i, n in enumerate(program["nodes"]) if n["id"] == node_id)


def edge_into(program: dict[str, Any], node_id: str, port: str) -> int:
    return next(i for i, e in enumerate(program["edges"]) if e["to"] == {"node": node_id, "port": port})


def broken_programs() -> dict[str, dict[str, Any]]:
    """digits-mlp broken one way each: params, ports, types, a cycle, settings, ids."""
    base = EXAMPLES["digits_mlp"]
    broken = {name: copy.deepcopy(base) for name in ("params", "ports", "types", "cycle", "settings", "ids")}
    hidden, relu, logits = (index_of(base, n) for n in ("hidden", "relu", "logits"))
    broken["params"]["nodes"][hidden]["params"] = {"bias": True}  # features, required, is missing
    broken["params"]["nodes"][logits]["params"]["features"] = 0
    broken["params"]["nodes"][relu].update({"op": "no_such_op", "color": "red"})
    broken["ports"]["edges"][edge_into(base, "hidden", "x")]["to"]["port"] = "y"
    broken["types"]["edges"][edge_into(base, "hidden", "x")]["from"]["node"] = "digit"
    broken["cycle"]["edges"][edge_into(base, "hidden", "x")]["from"]["node"] = "relu"
    broken["settings"]["optimizer"]["lr"] = -1
    broken["settings"]["loss"] = "logits"
    broken["ids"]["nodes"][relu]["id"] = "9relu"
    return broken


def graph_model() -> dict[str, Any]:
    positioned = copy.deepcopy(EXAMPLES["digits_mlp"])
    positioned["nodes"][0]["position"] = {"x": 10, "y": -20.5}
    validate(positioned)  # the format has a position field for the editor: no need to keep them beside
    program = copy.deepcopy(EXAMPLES["digits_mlp"])
    program["nodes"][2].update({"label": "first layer", "color": "red", "__proto__": {"x": 1}})
    program["nodes"][3]["op"] = "no_such_op"
    program["nodes"].append({"id": "9bad", "op": "relu", "params": {}})
    program["extra"] = [1, 2]
    program["toString"] = "a field like any other"
    program["__proto__"] = {"polluted": True}
    expected = copy.deepcopy(program)
    del expected["nodes"][-1]["params"]  # an empty params object means no params: it is left out
    placed = copy.deepcopy(EXAMPLES["digits_cnn"])
    for i, node in enumerate(placed["nodes"][:5]):
        node["position"] = {"x": 300 + 50 * i, "y": 400 * i}  # overlapping each other is the user's choice
    broken = broken_programs()
    return {
        "examples": EXAMPLES,
        "catalog": palette(),
        "positioned": positioned,
        "broken_round_trip": {"program": program, "expected": expected},
        "placed_cnn": placed,
        "broken": broken,
        "given": {name: issues_of(p) for name, p in broken.items()},
    }


def editor() -> dict[str, Any]:
    drawn = copy.deepcopy(EXAMPLES["digits_mlp"])
    drawn["nodes"][2]["params"]["features"] = 0
    drawn["nodes"].append({"id": "tanh1", "op": "tanh"})
    refused = copy.deepcopy(EXAMPLES["digits_mlp"])
    refused["edges"][0]["to"]["port"] = "y"  # linear has no input y
    return {
        "examples": {name: EXAMPLES[name] for name in EDITOR_EXAMPLES},
        "catalog": palette(),
        "drawn": {"program": drawn, "issues": check(drawn)},
        "refused_edge": {"program": refused, "issues": check(refused)},
    }


# -- the storage check ------------------------------------------------------------------------------------


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


def storagecheck() -> dict[str, Any]:
    """The objects, the roots a record keeps (the last rule checkpoint and the final state) and what the
    engine's collector would delete, for the page's search of unused objects to match."""
    objects, checkpoints, extra = run_chain()
    roots = [checkpoints[2], checkpoints[3]]
    with tempfile.TemporaryDirectory() as folder:
        directory = DirectoryStore(Path(folder))
        for data in objects.values():
            directory.put(data)
        collected = sorted(key_of(Path(r.path).read_bytes()) for r in collect(directory, roots, dry_run=True))
    return {
        "objects": [[k, v.hex()] for k, v in objects.items()],
        "roots": roots,
        "collected": collected,
        "checkpoints": checkpoints,
        "extra": extra,
    }


# -- malformed data files ---------------------------------------------------------------------------------


def data_fuzz() -> dict[str, Any]:
    """data_fuzz_cases's malformed files, each with the reference's reading: its content hash, "refused",
    or None where there is no reference reading."""
    tried = cases(random.Random(SEED))
    return {
        "cases": [{k: v for k, v in c.items() if k in ("kind", "data", "y")} for c in tried],
        "expected": [reference(c) for c in tried],
    }


WRITERS: dict[str, Callable[[], dict[str, Any]]] = {
    "graph_model": graph_model,
    "editor": editor,
    "storagecheck": storagecheck,
    "data_import": data_import,
    "data_limits": data_limits,
    "data_fuzz": data_fuzz,
}


def write_inputs(folder: Path = INPUTS) -> None:
    """Every test file's inputs, as build/js-inputs/<name>.json."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, make in WRITERS.items():
        (folder / f"{name}.json").write_text(json.dumps(make()))


if __name__ == "__main__":
    write_inputs()
    print(f"wrote the JS tests' inputs to {INPUTS}")
