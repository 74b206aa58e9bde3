"""Malformed files from the page through the engine's reader of what the page hands it
(scellis.datasets.from_user_files): the page's data set description and arrays mutated with a fixed seed
(data_fuzz_cases.py). Every file must be refused by a named ValueError, or read and hold together. The
page's importers meet the malformed files themselves in tests/js/data_fuzz.test.js."""

from __future__ import annotations

import json
import math
import random

import numpy as np
from data_fuzz_cases import SEED, mutate

from scellis.datasets import from_user_files


def user_seed() -> dict[str, bytes]:
    info = {
        "format": "scellis.data/1",
        "name": "t.csv",
        "example_shape": [3],
        "feature_type": "float32",
        "label_type": "int32",
        "classes": ["no", "yes"],
        "columns": ["a", "b", "c", "label"],
        "target": "label",
    }
    files = {"dataset.json": json.dumps(info).encode()}
    for split, n in (("train", 8), ("test", 4)):
        files[f"{split}-x"] = np.linspace(-1, 1, n * 3).astype("<f4").tobytes()
        files[f"{split}-y"] = (np.arange(n) % 2).astype("<i4").tobytes()
    return files


def json_mutation(raw: bytes, rng: random.Random) -> bytes:
    meta = json.loads(raw)
    how = rng.randrange(4)
    if how == 0:
        return b"[" * rng.choice([65, 1000, 100_000]) + b"]" * rng.choice([0, 1])
    if how == 1:
        key = rng.choice(sorted(meta))
        meta[key] = rng.choice([None, 0, -1, 2**70, 1.5, "", "x", [], {}, [3, 0], ["a"], {"a": [[[]]]}, True])
        return json.dumps(meta).encode()
    if how == 2:
        meta.pop(rng.choice(sorted(meta)))
        return json.dumps(meta).encode()
    return mutate(raw, rng)


def check_read(files: dict[str, bytes]) -> bool:
    """Whether what from_user_files accepted holds together, checked with numpy: the description's fields,
    the sizes, finite features and labels that are classes."""
    meta = json.loads(files["dataset.json"])
    width = math.prod(meta["example_shape"])
    for split in ("train", "test"):
        x = np.frombuffer(files[f"{split}-x"], "<f4" if meta["feature_type"] == "float32" else "<i4")
        y = np.frombuffer(files[f"{split}-y"], "<i4" if meta["label_type"] == "int32" else "<f4")
        if x.size != y.size * width or (meta["feature_type"] == "float32" and not np.isfinite(x).all()):
            return False
        if meta["classes"] is not None and y.size and not (y.min() >= 0 and y.max() < len(meta["classes"])):
            return False
    columns, target = meta.get("columns"), meta.get("target")
    return (columns is None and target is None) or target in columns


def test_malformed_files_from_the_page_are_refused_by_the_engine_with_a_value_error(fault_log) -> None:
    rng = random.Random(SEED)
    seed = user_seed()
    tried, crashes, wrong, accepted = 0, [], 0, 0
    for _ in range(300):
        files = dict(seed)
        name = rng.choice([*files, "dataset.json", "dataset.json"])
        files[name] = json_mutation(files[name], rng) if name == "dataset.json" else mutate(files[name], rng)
        tried += 1
        try:
            from_user_files(files)
        except ValueError:
            continue
        except Exception as error:  # anything but the named refusal is a crash
            crashes.append((name, repr(error)[:200]))
            continue
        accepted += 1
        wrong += not check_read(files)
    fault_log("data-engine-files", inputs=tried, accepted=accepted, crashes=len(crashes), hangs=0, silent_wrong=wrong)
    assert crashes == [] and wrong == 0, crashes[:5]
    assert accepted > 0
