"""Merged kernels (lower.merge: a producer computed inside its consumer, independent kernels side by side,
one kernel writing several buffers; lower.series: kernels run one after another by one dispatch) change
no byte: three steps of the digits MLP and the digits CNN (batch
norm, pools, dropout), with and without merging, on the reference device, the CPU path under wasmtime and
WGSL on lavapipe, at debug and prod, give the same losses and the same checkpoint, bit for bit, from
fewer kernels; and a parameter's Adam update runs in the kernel that computes its gradient, writing the
parameter and both moments where they are."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from scellis.datasets import digits_csv, read_digits
from scellis.examples import digits_cnn, digits_mlp
from scellis.levels import Level
from scellis.lower import lower, merge
from scellis.lower.kernels import Kind
from scellis.pipeline import compile_program
from scellis.plan import planned
from scellis.runtime.cpu.device import CpuDevice
from scellis.runtime.cpu.module import CpuPath
from scellis.runtime.reference.device import ReferenceDevice
from scellis.runtime.webgpu.native import WgpuDevice
from scellis.session import Session

PROGRAMS: dict[str, Callable[[], dict[str, Any]]] = {"digits MLP": digits_mlp, "digits CNN": digits_cnn}
STEPS = 3


@pytest.fixture(scope="module")
def devices(cpu: CpuPath) -> dict[str, object]:
    return {"reference": ReferenceDevice(), "cpu": CpuDevice(cpu), "webgpu": WgpuDevice()}


def run(program: dict[str, Any], device: object, level: Level) -> tuple[int, list[float], dict[str, bytes]]:
    """(kernels of the step, each step's loss, the checkpoint's tensors as bytes) of STEPS steps."""
    train, test = read_digits(digits_csv().read_bytes())

    async def go() -> tuple[int, list[float], dict[str, bytes]]:
        session = Session(program, device, seed=3, level=level, eval_rows=test.n)
        await session.start(train)
        losses = []
        for _ in range(STEPS):
            await session.run(train, test, steps=1)
            losses.append(session.last_loss)
        tensors = await session.tensors(session.kept)
        return len(session.plan.functions[0].planned.schedule.kernels), losses, {n: t.data for n, t in tensors.items()}

    return asyncio.run(go())


@pytest.mark.parametrize("level", [Level.DEBUG, Level.PROD], ids=lambda v: v.value)
@pytest.mark.parametrize("device", ["reference", "cpu", "webgpu"])
@pytest.mark.parametrize("name", list(PROGRAMS))
def test_merging_changes_no_byte(
    devices: dict[str, object], device: str, level: Level, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    merged = run(PROGRAMS[name](), devices[device], level)
    with monkeypatch.context() as patch:
        patch.setattr("scellis.lower.schedule.merged", lambda kernels, *_: tuple(kernels))
        patch.setattr("scellis.lower.schedule.joined", lambda kernels, *_: tuple(kernels))
        apart = run(PROGRAMS[name](), devices[device], level)
    assert merged[0] < apart[0]
    assert merged[1] == apart[1]
    assert merged[2] == apart[2]


def test_an_adam_update_runs_in_its_gradients_kernel_writing_the_parameter_and_its_moments_in_place() -> None:
    compiled = compile_program(digits_mlp())
    schedule = planned(lower(compiled.step, Level.PROD)).schedule  # what a device runs
    names = {b: name for name, b in schedule.outputs}
    for param in ("hidden.weight", "hidden.bias", "logits.weight", "logits.bias"):
        wanted = {f"param/{param}", f"state/opt.m/{param}", f"state/opt.v/{param}"}
        writers = [k for k in schedule.kernels if wanted & {names.get(v.buffer) for v in k.writes}]
        assert len(writers) == 1, param
        assert {names.get(v.buffer) for v in writers[0].writes} - {None} == wanted  # (and what its prologue stores)
        # the gradient's own matmul (weights) or reduction over the batch (biases) computes the update
        assert writers[0].kind is (Kind.MATMUL if param.endswith("weight") else Kind.REDUCE), param
        inputs = {name for name, b in schedule.inputs if any(v.buffer == b for v in writers[0].inputs)}
        assert {param, f"opt.m/{param}", f"opt.v/{param}"} <= inputs  # updated where they are
        assert len({v.buffer for v in (*writers[0].inputs, *writers[0].writes)}) <= merge.MAX_BINDINGS
    assert not schedule.carry or all(names.get(c.src) == "state/opt.step" for c in schedule.carry)


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_a_device_that_binds_more_buffers_runs_fewer_kernels_with_the_same_bytes(
    devices: dict[str, object], name: str
) -> None:
    webgpu: Any = devices["webgpu"]
    assert merge.bindings_of(webgpu.features) == webgpu.limits.max_storage_buffers or (
        merge.bindings_of(webgpu.features) == merge.MOST_BINDINGS < webgpu.limits.max_storage_buffers
    )
    if merge.bindings_of(webgpu.features) == merge.MAX_BINDINGS:
        pytest.skip("this adapter binds only WebGPU's default 8 storage buffers a kernel")
    wide = run(PROGRAMS[name](), webgpu, Level.PROD)
    given = webgpu.features
    webgpu.features = frozenset(f for f in given if not f.startswith(merge.BINDINGS))
    try:
        narrow = run(PROGRAMS[name](), webgpu, Level.PROD)
    finally:
        webgpu.features = given
    assert wide[0] < narrow[0]
    assert wide[1:] == narrow[1:]


def test_the_bindings_a_kernel_may_take_follow_the_device_up_to_a_cap() -> None:
    assert merge.bindings_feature(8) == frozenset()
    assert merge.bindings_feature(10) == {"bindings=10"}
    assert merge.bindings_feature(1 << 20) == {f"bindings={merge.MOST_BINDINGS}"}
    assert merge.bindings_of(frozenset({"shader-f16"})) == merge.MAX_BINDINGS
    assert merge.bindings_of(frozenset({"bindings=12"})) == 12
    assert merge.bindings_of(frozenset({"bindings=99"})) == merge.MOST_BINDINGS
    compiled = compile_program(digits_cnn())
    for features in (frozenset(), frozenset({"bindings=10"}), frozenset({"bindings=16"})):
        schedule = planned(lower(compiled.step, Level.PROD, features)).schedule
        most = max(len({v.buffer for v in (*k.inputs, *k.writes)}) for k in schedule.kernels)
        assert most <= merge.bindings_of(features), features
    counts = [len(lower(compiled.step, Level.PROD, frozenset({f"bindings={n}"})).kernels) for n in (8, 10, 16)]
    assert counts[0] > counts[1] > counts[2]


@pytest.mark.parametrize("bindings", [8, 10, 16])
def test_every_rendered_kernel_binds_within_the_budget(bindings: int) -> None:
    """The WGSL of each kernel of a planned step (the CNN, the char transformer; as a software adapter
    lowers them too) declares at most the storage buffers the device binds: the count the merge keeps to
    is the count the shader asks for."""
    from scellis.codegen import render
    from scellis.examples import char_transformer
    from scellis.lower.variants import SOFTWARE

    for program in (digits_cnn(), char_transformer()):
        step = compile_program(program).step
        for extra in (frozenset(), frozenset({SOFTWARE})):
            schedule = planned(lower(step, Level.PROD, merge.bindings_feature(bindings) | extra)).schedule
            counts = []
            for kernel in schedule.kernels:
                declared = render(kernel, schedule).source.count("@binding(")
                counts.append(declared)
                assert declared <= bindings, f"{program['name']}: {kernel.kind.value} declares {declared}"
            assert max(counts) > min(bindings, 10) - 2  # the merge uses the room it has
