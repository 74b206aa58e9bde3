"""Activation checkpointing's trade: the training step's planned bytes with and without it (all of the
step's allocations, and the activations kept for backward at the step's peak), the bytes a session holds
(step and evaluation), and the step's kernels, the price in compute, for a few example programs at level
prod. Compile time is the whole pipeline's, checkpointing included.

    .venv/bin/python bench/checkpoint_cost.py
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "py"))


from scellis.examples import char_transformer, deep_chain, digits_cnn, mlp
from scellis.levels import Level
from scellis.pipeline import compile_program
from scellis.plan.remedies import apply

PROGRAMS: dict[str, Callable[[], dict[str, Any]]] = {
    "deep chain, 40 nodes": lambda: deep_chain(40),
    "deep chain, 1,000 nodes": lambda: deep_chain(1000),
    "digits CNN": digits_cnn,
    "char transformer": char_transformer,
    "MLP 784-512x6-10, batch 256": lambda: mlp(784, [512] * 6, 10, 256),
}
KEPT = "activations kept for backward"


def measure(data: dict[str, Any], checkpoint: bool) -> tuple[int, int, int, int, float]:
    start = time.perf_counter()
    compiled = compile_program(apply(data, {"checkpoint": checkpoint}))
    seconds = time.perf_counter() - start
    plan = compiled.at(Level.PROD, frozenset()).plan
    step = plan.functions[0]
    return step.allocated, plan.step.bytes[KEPT], plan.total, step.kernels, seconds


def main() -> None:
    header = "| program | checkpoint | step bytes | kept for backward | session bytes | kernels | compile s |"
    print(header)
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for name, build in PROGRAMS.items():
        data = build()
        rows = [measure(data, flag) for flag in (False, True)]
        for flag, (step, kept, total, kernels, seconds) in zip(("no", "yes"), rows, strict=True):
            print(f"| {name} | {flag} | {step:,} | {kept:,} | {total:,} | {kernels} | {seconds:.2f} |")
        (s0, _, t0, k0, _), (s1, _, t1, k1, _) = rows
        print(f"| {name} | ratio | {s1 / s0:.2f}x | | {t1 / t0:.2f}x | {k1 / k0:.2f}x | |")


if __name__ == "__main__":
    main()
