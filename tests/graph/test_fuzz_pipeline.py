"""Fuzzing the whole pipeline with the built-in examples' program JSON (examples.catalogue): mutated
structure (test_fuzz's mutations, plus unicode ids, enormous shapes, NaN-like and huge numbers, deep
nesting, cut text) read as text by jsontext.parse, then validated and compiled (pipeline.compile_program);
the small programs that compile take a first step on the reference device (float64) and on the CPU path
(wasmtime). Every case ends in a result or a named error within its time bound; a program both devices
run gives the same first loss and results (the loss within 1e-4 of the reference, relative: float32
against float64 for one step from the same initial values; test_cpu_step measures 3e-7 on the examples),
or the same named error. The IR reference (runtime.reference) decides whether the batch's indices are
valid: where it raises IndexRangeError, both devices must too (a device that reads on is a silent wrong
result).
"""

from __future__ import annotations

import asyncio
import copy
import json
import math
import random
import signal
import struct
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import pytest
from test_fuzz import MUTATIONS, TYPE_MUTATIONS, mutate, node_dicts

from scellis.autodiff.grad import AutodiffError
from scellis.datafit import program_classes
from scellis.datasets import Split
from scellis.examples import catalogue
from scellis.graph import ProgramError
from scellis.ir.function import IRError
from scellis.jsontext import JsonTextError, parse
from scellis.levels import Level
from scellis.ops import Op, ShapeError
from scellis.ops.indices import IndexRangeError
from scellis.optim.storage import StorageUnsupported
from scellis.pipeline import Compiled, compile_program
from scellis.runtime.cpu.device import CpuDevice
from scellis.runtime.cpu.module import CpuPath
from scellis.runtime.reference import train as rt
from scellis.runtime.reference.device import ReferenceDevice
from scellis.session import PlanRefused, Session

CASES = 1100
STEPPED = 30  # the first small programs that compile take a step on both devices
SMALL = 3_000_000  # elements over every value of the training step
BOUND_S = 10.0  # a case that runs longer hangs
LOSS_RTOL = 1e-4
NAMED = (
    JsonTextError, ProgramError, ShapeError, IRError, AutodiffError, StorageUnsupported, PlanRefused,
    IndexRangeError,
)  # fmt: skip


# -- mutations of the text and of what the mutations of test_fuzz do not reach -------------------------


def unicode_ids(rng: random.Random, program: Any) -> Any:
    """Every id renamed to a unicode one, edges and objectives along: the same program, still valid."""
    names = {n["id"]: f"{n['id']}·ünï🙂{i}" for i, n in enumerate(node_dicts(program)) if isinstance(n.get("id"), str)}
    for node in node_dicts(program):
        node["id"] = names.get(node["id"], node["id"]) if isinstance(node.get("id"), str) else node.get("id")
    for edge in program.get("edges", []) if isinstance(program, dict) else []:
        for end in ("from", "to"):
            if isinstance(edge, dict) and isinstance(edge.get(end), dict) and edge[end].get("node") in names:
                edge[end]["node"] = names[edge[end]["node"]]
    if isinstance(program, dict) and program.get("loss") in names:
        program["loss"] = names[program["loss"]]
    return program


def enormous_shape(rng: random.Random, program: Any) -> Any:
    """An input, state or parameter shape far past any memory, or of many axes, or of zeros."""
    shaped = [n for n in node_dicts(program) if isinstance(n.get("params"), dict) and "shape" in n["params"]]
    if shaped:
        big = rng.choice([[2**31], [2**40, 2**40], [65536] * 8, [1] * 40, [0], [3, 0, 2], [-4], [10**400]])
        rng.choice(shaped)["params"]["shape"] = big
    return program


def extreme_number(rng: random.Random, program: Any) -> Any:
    """A number of some parameter becomes huge, tiny, negative or not finite."""
    numbers = [(n["params"], k) for n in node_dicts(program) if isinstance(n.get("params"), dict) for k in n["params"]]
    numbers = [(p, k) for p, k in numbers if isinstance(p[k], int | float) and not isinstance(p[k], bool)]
    if numbers:
        params, key = rng.choice(numbers)
        params[key] = rng.choice([1e308, -1e308, 5e-324, -1, -(2**63), 2**64, 1e30, math.inf, -math.inf, math.nan])
    return program


DEEP = "<nested %d deep>"


def deep_nesting(rng: random.Random, program: Any) -> Any:
    """A parameter nested up to thousands of arrays deep (jsontext refuses past 64): a marker here, the
    arrays written into the text (as_text), since json.dumps itself recurses."""
    if nodes := node_dicts(program):
        params = rng.choice(nodes).setdefault("params", {})
        if isinstance(params, dict):
            params[rng.choice(["deep", "shape", "value"])] = DEEP % rng.choice([10, 63, 65, 3000])
    return program


EXTRA: dict[str, Callable[[random.Random, Any], Any]] = {
    f.__name__: f for f in (unicode_ids, enormous_shape, extreme_number, deep_nesting)
}
TEXT_CUTS = ("truncate", "nan literal", "bom", "garbage")


HUGE = "<an integer of 5001 digits>"


def _digits_marked(value: Any) -> Any:
    """`value` with integers too long for json.dumps (Python's 4,300 digits) marked, to be written out."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 14_000:
        return HUGE
    if isinstance(value, dict):
        return {k: _digits_marked(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_digits_marked(v) for v in value]
    return value


def as_text(rng: random.Random, program: Any) -> tuple[str, str | None]:
    """The program as JSON text (NaN and Infinity written as Python does, which JSON forbids); sometimes
    cut or defaced."""
    text = json.dumps(_digits_marked(program), allow_nan=True)
    text = text.replace(json.dumps(HUGE), "1" + "0" * 5000)
    for depth in (10, 63, 65, 3000):
        text = text.replace(json.dumps(DEEP % depth), "[" * depth + "1" + "]" * depth)
    if rng.random() >= 0.1:
        return text, None
    cut = rng.choice(TEXT_CUTS)
    if cut == "truncate":
        return text[: rng.randrange(len(text))], cut
    if cut == "nan literal":
        return text.replace("64", "NaN", 1).replace("0.003", "-Infinity", 1), cut
    if cut == "bom":
        return "\ufeff" + text, cut
    return text[: len(text) // 2] + "\x00}{]" + text[len(text) // 2 :], cut


def mutated(case: int, seeds: dict[str, Any]) -> tuple[str, str, list[str]]:
    """(name of the example, JSON text, mutations applied) of one case."""
    rng = random.Random(f"pipeline/{case}")
    name = rng.choice(sorted(seeds))
    program = copy.deepcopy(seeds[name])
    roll = rng.random()
    if roll < 0.35:
        program, applied = mutate(rng, program)
    elif roll < 0.7:
        applied = []
        for mutation in rng.choices(list(TYPE_MUTATIONS), k=rng.randint(1, 2)):
            try:
                program = TYPE_MUTATIONS[mutation](rng, program)
                applied.append(mutation)
            except IndexError:  # nothing it applies to (reshape_input in a program without inputs)
                continue
    else:
        applied = rng.choices(list(EXTRA), k=rng.randint(1, 2))
        for mutation in applied:
            program = EXTRA[mutation](rng, program)
    text, cut = as_text(rng, program)
    return name, text, applied + ([cut] if cut else [])


# -- one case ------------------------------------------------------------------------------------------


class Hang(BaseException):
    """A case ran past BOUND_S (a BaseException: nothing under test catches it)."""


@contextmanager
def bounded(seconds: float) -> Iterator[None]:
    def expire(signum: int, frame: Any) -> None:
        raise Hang

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _input(data: dict[str, Any], role: str) -> dict[str, Any] | None:
    for node in node_dicts(data):
        if node.get("op") == "input" and node.get("params", {}).get("role", "features") == role:
            return node
    return None


def batch_data(data: dict[str, Any], compiled: Compiled, seed: int) -> Split | None:
    """One batch of random data the program reads (token indices below its smallest table, labels below its
    classes; for every fourth seed, a few past them); None for a program without data; Split.empty() when
    its inputs are not one value per row."""
    features, labels = _input(data, "features"), _input(data, "labels")
    if features is None and labels is None:
        return None
    rows, rng, past = compiled.program.loop.batch_size, random.Random(seed), 2 if seed % 4 == 0 else 0
    if features is None or labels is None or labels["params"].get("shape", []) != []:
        return Split.empty()
    width = math.prod(features["params"].get("shape", []))
    tables = [n.src[0].shape[0] for n in compiled.step.nodes() if n.op is Op.GATHER and n.src[0].op is Op.INPUT]
    if features["params"].get("dtype") == "int32":
        top = min(tables, default=8) + past
        x = struct.pack(f"<{rows * width}i", *(rng.randrange(top) for _ in range(rows * width)))
    else:
        x = struct.pack(f"<{rows * width}f", *(rng.uniform(-1, 1) for _ in range(rows * width)))
    if labels["params"].get("dtype") == "int32":
        y = struct.pack(f"<{rows}i", *(rng.randrange((program_classes(compiled) or 2) + past) for _ in range(rows)))
    else:
        y = struct.pack(f"<{rows}f", *(rng.gauss(0, 1) for _ in range(rows)))
    return Split(x, y, width)


async def first_step(data: dict[str, Any], device: Any, train: Split | None) -> dict[str, float]:
    """The first loss and the results after one step (debug, seed 5)."""
    examples = train.n if train is not None else None
    session = Session(data, device, seed=5, level=Level.DEBUG, examples=examples)
    await session.start(train)
    await session.run(train, train, steps=1)
    return {"loss": session.last_loss, **session.last_metrics}


def ir_refuses(data: dict[str, Any], compiled: Compiled, train: Split) -> bool:
    """Whether the IR reference raises IndexRangeError on the first training step of `train` (any order of
    the rows: whether an index is valid does not depend on it)."""
    features, labels = _input(data, "features"), _input(data, "labels")
    assert features is not None and labels is not None
    batch: dict[str, Any] = {}
    for node, raw in ((features, train.features), (labels, train.labels)):
        code = "i" if node["params"].get("dtype") == "int32" else "f"
        values = struct.unpack(f"<{len(raw) // 4}{code}", raw)
        batch[node["id"]] = np.array(values).reshape(train.n, *node["params"].get("shape", []))
    state = rt.initial_state(compiled.init, compiled.step, seed=5)
    try:
        rt.step(compiled.step, state, batch)
    except IndexRangeError:
        return True
    return False


def agree(got: float, want: float) -> bool:
    """The CPU path's float32 value against the reference's float64 one: both NaN, or within the tolerance;
    where float32 overflows (the reference's value is past its range) an infinity of the same sign."""
    if math.isnan(want) or math.isnan(got):
        return math.isnan(want) and math.isnan(got)
    if abs(want) > 3.4028234e38 or math.isinf(want):
        return math.isinf(got) and (got > 0) == (want > 0)
    return abs(got - want) <= LOSS_RTOL * max(1.0, abs(want))


def run_case(text: str, cpu: CpuDevice, stepping: bool, seed: int) -> str:
    """'refused', 'compiled', 'stepped', 'both refused' (a named error at the step, the same on both
    devices) or 'wrong'; a crash raises."""
    try:
        data = parse(text, what="program")
        compiled = compile_program(data)
    except NAMED:
        return "refused"
    if not stepping or sum(n.size for n in compiled.step.nodes()) > SMALL:
        return "compiled"
    train = batch_data(data, compiled, seed)
    if train is not None and not train.n:
        return "compiled"
    outcomes = []
    for device in (ReferenceDevice(), cpu):
        try:
            outcomes.append(asyncio.run(first_step(data, device, train)))
        except NAMED as err:
            outcomes.append({"error": type(err).__name__, "words": str(err)})
    want, got = outcomes
    if train is not None and compiled.program.trains:
        refused = ir_refuses(data, compiled, train)
        if refused != (want.get("error") == "IndexRangeError") or refused != (got.get("error") == "IndexRangeError"):
            return "wrong"
    if "error" in want or "error" in got:
        return "both refused" if want == got else "wrong"
    same = want.keys() == got.keys() and all(agree(got[k], want[k]) for k in want)
    return "stepped" if same else "wrong"


@pytest.fixture(scope="module")
def cpu() -> CpuDevice:
    return CpuDevice(asyncio.run(CpuPath.open()))


def test_mutated_examples_end_in_a_result_or_a_named_error(cpu: CpuDevice, fault_log: Any) -> None:
    seeds = {name: build() for name, (_, _, build) in catalogue().items()}
    counts = dict.fromkeys(("refused", "compiled", "stepped", "both refused", "wrong"), 0)
    crashes, hangs, slowest = [], [], 0.0
    used: set[str] = set()
    for case in range(CASES):
        name, text, applied = mutated(case, seeds)
        used.update(applied)
        label = f"case {case} ({name}, {applied})"
        stepping = counts["stepped"] + counts["both refused"] + counts["wrong"] < STEPPED
        began = time.perf_counter()
        try:
            with bounded(BOUND_S):
                outcome = run_case(text, cpu, stepping, case)
            counts[outcome] += 1
            if outcome == "wrong":
                crashes.append(f"{label}: silent wrong result: the devices and the IR reference disagree")
        except Hang:
            hangs.append(label)
        except Exception as err:  # the failure the fuzzer looks for
            crashes.append(f"{label}: {type(err).__name__}: {err}\n{text[:2000]}")
        slowest = max(slowest, time.perf_counter() - began)
    fault_log(
        "program-json-mutations",
        inputs=CASES,
        refused=counts["refused"],
        compiled=counts["compiled"] + counts["stepped"] + counts["both refused"] + counts["wrong"],
        stepped_on_both_devices=counts["stepped"] + counts["both refused"] + counts["wrong"],
        same_named_error_on_both=counts["both refused"],
        crashes=len(crashes) - counts["wrong"],
        hangs=len(hangs),
        silent_wrong=counts["wrong"],
        slowest_case_ms=round(slowest * 1000),
    )
    assert not crashes and not hangs, "\n".join(crashes + hangs)
    assert used >= set(MUTATIONS) | set(TYPE_MUTATIONS) | set(EXTRA) | set(TEXT_CUTS)
    assert counts["refused"] >= 300 and counts["stepped"] >= STEPPED // 2, counts  # both ends are reached
