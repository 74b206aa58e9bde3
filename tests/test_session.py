"""Whole training sessions through the same driver the app uses: the digits MLP example (64-128-10, Adam,
batch 64) on the shipped digits split reaches >= 95% held-out accuracy on lavapipe and on the CPU path;
the character transformer example learns the next character of the Zen of Python on the CPU path."""

from __future__ import annotations

import asyncio

from scellis.datasets import digits_csv, read_chars, read_digits, zen_of_python
from scellis.examples import char_transformer, digits_mlp
from scellis.levels import Level
from scellis.runtime.webgpu.native import WgpuDevice
from scellis.session import Session


def test_digits_mlp_trains_on_webgpu() -> None:
    train, test = read_digits(digits_csv().read_bytes())
    assert (train.n, test.n) == (1438, 359)
    session = Session(digits_mlp(), WgpuDevice(), seed=1, level=Level.PROD, eval_batch=test.n)
    seen = []
    results = asyncio.run(session.fit(train, test, epochs=20, report=seen.append))
    assert seen == results and [r.epoch for r in results] == list(range(20))
    assert results[-1].steps == 20 * (1438 // 64)
    assert results[-1].metrics["metric/accuracy"] >= 0.95
    assert results[-1].metrics["loss"] < results[0].metrics["loss"] / 4


def test_digits_mlp_trains_on_the_cpu_path() -> None:
    from scellis.runtime.cpu.device import CpuDevice

    train, test = read_digits(digits_csv().read_bytes())
    device = asyncio.run(CpuDevice.open())
    assert device.name.startswith("CPU path (WebAssembly) via wasmtime")
    session = Session(digits_mlp(), device, seed=1, level=Level.PROD, eval_batch=test.n)
    results = asyncio.run(session.fit(train, test, epochs=20))
    assert results[-1].metrics["metric/accuracy"] >= 0.95


def test_char_transformer_learns_on_the_cpu_path() -> None:
    """Four epochs: the held-out loss falls every epoch from about ln(32), and the model predicts better
    than always answering the most common next character (an "e", 16% of the held-out windows)."""
    from scellis.runtime.cpu.device import CpuDevice

    train, test, alphabet = read_chars(zen_of_python())
    session = Session(
        char_transformer(vocab=len(alphabet)),
        asyncio.run(CpuDevice.open()),
        seed=1,
        level=Level.DEBUG,
        eval_batch=test.n,
    )
    results = asyncio.run(session.fit(train, test, epochs=4))
    losses = [r.metrics["loss"] for r in results]
    assert losses == sorted(losses, reverse=True) and losses[-1] < 2.9, losses
    assert results[-1].metrics["metric/accuracy"] > 0.2
