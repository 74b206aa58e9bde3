"""An index outside its table is never read silently (ops.indices): the reference raises IndexRangeError,
and every device (the reference device, the CPU path through wasmtime, WebGPU on lavapipe) raises the same
error, with the same words, at the next read of the step, also when the bad step itself read nothing.
Indices in range give the reference's values, and a whole training session on a token program stops
with the error at its first read."""

from __future__ import annotations

import asyncio
import re
import struct
from collections.abc import Callable

import numpy as np
import pytest
from cpu_run import function, inp, to_device

from scellis.datasets import Split
from scellis.ir import Function
from scellis.ir.function import input_name
from scellis.levels import Level
from scellis.ops import DType, Op, make
from scellis.ops import defs as d
from scellis.ops.build import mul
from scellis.ops.indices import IndexRangeError
from scellis.plan import lowered
from scellis.runtime.cpu.device import CpuDevice
from scellis.runtime.cpu.module import CpuPath
from scellis.runtime.reference.device import ReferenceDevice
from scellis.runtime.reference.oracle import run
from scellis.runtime.webgpu.native import WgpuDevice
from scellis.session import Session

DEVICES = ["reference", "cpu", "webgpu"]


@pytest.fixture(scope="module")
def devices(cpu: CpuPath) -> dict[str, object]:
    return {"reference": ReferenceDevice(), "cpu": CpuDevice(cpu), "webgpu": WgpuDevice()}


def gather_fn() -> Function:
    table, tokens = inp("embed.weight", (5, 3)), inp("tokens", (4, 6), DType.I32)
    return function({"rows": make(Op.GATHER, table, tokens)})


def one_hot_fn() -> Function:
    labels, scores = inp("labels", (7,), DType.I32), inp("scores", (7, 4))
    return function({"picked": mul(make(Op.ONE_HOT, labels, arg=d.ClassesArg(4)), scores)})


def scatter_fn() -> Function:
    indices, g = inp("indices", (6,), DType.I32), inp("g", (6, 2))
    return function({"sums": make(Op.SCATTER_ADD, indices, g, arg=d.RowsArg(3))})


def gather_inputs(bad: dict[tuple[int, ...], int]) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    tokens = rng.integers(0, 5, size=(4, 6)).astype(np.int32)
    for at, value in bad.items():
        tokens[at] = value
    return {"embed.weight": rng.standard_normal((5, 3)).astype(np.float32), "tokens": tokens}


def one_hot_inputs(bad: dict[tuple[int, ...], int]) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(1)
    labels = rng.integers(0, 4, size=7).astype(np.int32)
    for at, value in bad.items():
        labels[at] = value
    return {"labels": labels, "scores": rng.standard_normal((7, 4)).astype(np.float32)}


def scatter_inputs(bad: dict[tuple[int, ...], int]) -> dict[str, np.ndarray]:
    indices = np.array([0, 2, 1, 2, 0, 1], dtype=np.int32)
    for at, value in bad.items():
        indices[at] = value
    return {"indices": indices, "g": np.arange(12, dtype=np.float32).reshape(6, 2)}


CASES: dict[str, tuple[Callable[[], Function], Callable[..., dict[str, np.ndarray]], dict, str]] = {
    # name: (function, inputs, bad indices, the error's words)
    "gather past the end": (
        gather_fn,
        gather_inputs,
        {(1, 2): 5, (3, 0): 9},
        "gather from 'embed.weight' by 'tokens': index 5 at [1, 2] lies outside [0, 5); 2 of its 24 indices do",
    ),
    "gather negative": (
        gather_fn,
        gather_inputs,
        {(2, 5): -1},
        "gather from 'embed.weight' by 'tokens': index -1 at [2, 5] lies outside [0, 5)",
    ),
    "one_hot label = classes": (
        one_hot_fn,
        one_hot_inputs,
        {(3,): 4},
        "one_hot of 'labels' (4 classes): index 4 at [3] lies outside [0, 4)",
    ),
    "scatter_add row past the end": (
        scatter_fn,
        scatter_inputs,
        {(4,): 3},
        "scatter_add into 3 rows by 'indices': index 3 at [4] lies outside [0, 3)",
    ),
}


def compiled_on(device: object, fn: Function) -> object:
    return asyncio.run(device.compile(lowered(fn, Level.PROD)))  # type: ignore[attr-defined]


def writes(fn: Function, inputs: dict[str, np.ndarray]) -> dict[str, bytes]:
    return {input_name(n): to_device(inputs[input_name(n)], n.dtype) for n in fn.inputs}


def outputs(fn: Function) -> list[str]:
    return [name for name, _ in fn.outputs]


@pytest.mark.parametrize("case", CASES)
def test_the_reference_raises_the_named_error(case: str) -> None:
    build, inputs, bad, words = CASES[case]
    with pytest.raises(IndexRangeError) as raised:
        run(build(), inputs(bad))
    assert str(raised.value) == words


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("case", CASES)
def test_an_index_out_of_range_raises_on_every_device(devices: dict[str, object], device: str, case: str) -> None:
    build, inputs, bad, words = CASES[case]
    fn = build()
    compiled = compiled_on(devices[device], fn)
    with pytest.raises(IndexRangeError) as raised:
        asyncio.run(compiled.step(writes(fn, inputs(bad)), outputs(fn)))  # type: ignore[attr-defined]
    assert str(raised.value) == words


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("case", CASES)
def test_indices_in_range_give_the_reference_values(devices: dict[str, object], device: str, case: str) -> None:
    build, inputs, _, _ = CASES[case]
    fn = build()
    values = inputs({})
    want = run(fn, values, np.float32)
    compiled = compiled_on(devices[device], fn)
    for _ in range(2):  # a second step: nothing of the first is left over
        got = asyncio.run(compiled.step(writes(fn, values), outputs(fn)))  # type: ignore[attr-defined]
    for name, node in fn.outputs:
        array = np.frombuffer(got[name], dtype="<f4")[: node.size].reshape(node.shape)
        np.testing.assert_allclose(array, want[name], rtol=1e-6, err_msg=name)


@pytest.mark.parametrize("device", DEVICES)
def test_a_bad_step_read_later_still_raises(devices: dict[str, object], device: str) -> None:
    """Steps that read nothing are never held up; the first bad index is kept until the next read."""
    build, inputs, bad, words = CASES["gather past the end"]
    fn = build()
    compiled = compiled_on(devices[device], fn)
    asyncio.run(compiled.step(writes(fn, inputs({})), []))  # type: ignore[attr-defined]
    asyncio.run(compiled.step(writes(fn, inputs(bad)), []))  # type: ignore[attr-defined]
    with pytest.raises(IndexRangeError) as raised:
        asyncio.run(compiled.step(writes(fn, inputs({})), outputs(fn)))  # type: ignore[attr-defined]
    assert str(raised.value) == words
    with pytest.raises(IndexRangeError):
        asyncio.run(compiled.fetch(outputs(fn)))  # type: ignore[attr-defined]


def token_program(vocab: int) -> dict:
    from scellis.graph import Program

    p = Program("tokens")
    x = p.input("features", [4], dtype="int32")
    y = p.input("label", [], dtype="int32", role="labels")
    logits = p.linear(p.flatten(p.embedding(x, vocab, 8, id="embed"), id="flat"), 3, id="logits")
    p.set_loss(p.cross_entropy(logits, y, id="loss"))
    p.set_optimizer("adam", lr=1e-2)
    p.set_loop(epochs=1, batch_size=4, shuffle=False)
    return p.to_json()


def token_split(tokens: list[int], labels: list[int]) -> Split:
    return Split(struct.pack(f"<{len(tokens)}i", *tokens), struct.pack(f"<{len(labels)}i", *labels), 4)


@pytest.mark.parametrize("device", ["cpu", "webgpu"])
@pytest.mark.parametrize(
    ("tokens", "labels", "words"),
    [
        ([1, 2, 3, 0] * 3 + [1, 2, 9, 0], [0, 1, 2, 1], "gather from 'embed.weight' by 'features': index 9 at [3, 2]"),
        ([1, 2, 3, 0] * 4, [0, 1, 3, 1], "one_hot of 'label' (3 classes): index 3 at [2]"),
    ],
)
def test_a_training_session_stops_at_a_bad_token_or_label(
    devices: dict[str, object], device: str, tokens: list[int], labels: list[int], words: str
) -> None:
    session = Session(token_program(vocab=8), devices[device], seed=2, level=Level.DEBUG)  # type: ignore[arg-type]
    train = token_split(tokens, labels)
    asyncio.run(session.start(train))
    with pytest.raises(IndexRangeError, match=re.escape(words)):
        asyncio.run(session.train_epoch(train))
