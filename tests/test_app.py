"""scellis.app: what the page calls to train the example, here on the CPU path under wasmtime."""

from __future__ import annotations

import asyncio
import json

import pytest

from scellis.app import train_example
from scellis.datasets import digits_csv, read_digits, to_files


def test_train_example_reports_every_epoch_with_level_and_notes() -> None:
    files = to_files(*read_digits(digits_csv().read_bytes()))
    seen: list[dict] = []
    last = json.loads(asyncio.run(train_example(files, "cpu", "fast", 2, lambda text: seen.append(json.loads(text)))))
    assert [row["epoch"] for row in seen] == [1, 2] and last == seen[-1]
    assert last["level"] == "fast" and last["notes"] == []  # the digits MLP runs no float16 kernel
    assert "loss_scale" not in last  # so fast does not scale its loss
    assert last["test"]["metric/accuracy"] > 0.8
    memory = last["memory"]  # the CPU path measures its budget: the plan is green
    assert memory["verdict"] == "green" and memory["bytes"] > 0 and memory["reasons"][0].startswith("takes ")


def test_unknown_level_and_device_are_named() -> None:
    files = to_files(*read_digits(digits_csv().read_bytes()))
    with pytest.raises(ValueError, match="determinism level must be one of debug, prod, fast; got 'quick'"):
        asyncio.run(train_example(files, "cpu", "quick", 1, print))
    with pytest.raises(ValueError, match="unknown device kind 'tpu'"):
        asyncio.run(train_example(files, "tpu", "prod", 1, print))
