"""Float16 storage (memory.storage float16, optim.storage) without a device: the functions it builds
(float16 parameters, float32 master weights in the optimizer, init producing both), the kernels it lowers
to (every activation kept for backward in a float16 buffer of half the bytes, converted on load), the
device feature it needs (a clear error without shader-f16, at level fast too), and the remedy that offers
it (only where the device has shader-f16, re-planned with fewer bytes)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from scellis.examples import digits_cnn, digits_mlp, mlp
from scellis.graph import ProgramError, validate
from scellis.ir import verify
from scellis.ir.function import input_name, input_role
from scellis.levels import Level
from scellis.lower import lower, merge
from scellis.lower.kernels import Kind, Load, flat, storage_bytes
from scellis.ops import DType, Op
from scellis.ops.defs import Role
from scellis.optim.loss_scaling import LOSS_SCALE
from scellis.optim.storage import StorageUnsupported, master_name
from scellis.pipeline import Compiled, compile_program, planner
from scellis.plan import update_in_place
from scellis.plan.breakdown import categories
from scellis.plan.budget import Budget, DeviceLimits
from scellis.plan.remedies import Target, advise, apply, device_judge

F16 = frozenset({"shader-f16"})
PROGRAMS = {"digits MLP": digits_mlp, "digits CNN": digits_cnn}


def stored_as(data: dict[str, Any], storage: str) -> dict[str, Any]:
    return {**data, "memory": {**data.get("memory", {}), "storage": storage}}


def kept(compiled: Compiled) -> list[tuple[DType, int]]:
    """(dtype, elements) of each buffer the training step keeps for backward."""
    schedule = update_in_place(lower(compiled.step, Level.PROD, F16))
    kinds = categories(schedule, compiled.step, compiled.forward.fn, compiled.backward)
    return [(b.dtype, b.size) for b, kind in zip(schedule.buffers, kinds, strict=True) if kind.startswith("activ")]


def test_the_setting_defaults_to_float32_and_knows_its_choices() -> None:
    assert validate(digits_mlp()).memory.storage == "float32"
    assert validate(stored_as(digits_mlp(), "float16")).memory.storage == "float16"
    with pytest.raises(ProgramError, match=r"memory\.storage: must be one of 'float32', 'float16'"):
        validate(stored_as(digits_mlp(), "bfloat16"))


@pytest.mark.parametrize("name", PROGRAMS)
def test_parameters_are_float16_and_the_optimizer_updates_float32_masters(name: str) -> None:
    compiled = compile_program(stored_as(PROGRAMS[name](), "float16"))
    step, init = compiled.step, compiled.init
    for fn in (compiled.forward.fn, compiled.backward, step, compiled.evaluate, init, compiled.loss_scaled.step):
        verify(fn)  # every node's type is its rule's
    params = [n for n in step.inputs if input_role(n) is Role.PARAM]
    assert params and all(n.dtype is DType.F16 for n in params)
    assert all(n.dtype is DType.F16 for n in compiled.evaluate.inputs if input_role(n) is Role.PARAM)
    outputs = dict(step.outputs)
    for p in compiled.forward.trainable:
        master = step.input(master_name(p))
        assert (input_role(master), master.dtype, master.shape) == (Role.STATE, DType.F32, step.input(p).shape)
        assert outputs[f"param/{p}"].dtype is DType.F16 and outputs[f"state/{master_name(p)}"].dtype is DType.F32
        assert outputs[f"param/{p}"].src == (outputs[f"state/{master_name(p)}"],)  # the new master, rounded
        assert compiled.backward.output(f"grad/{p}").dtype is DType.F32  # gradients stay float32
        made = dict(init.outputs)
        assert made[f"param/{p}"].op is Op.CAST and made[f"param/{p}"].src == (made[f"state/{master_name(p)}"],)
    assert all(n.dtype is DType.F32 for n in step.inputs if input_name(n).startswith("opt.m"))


@pytest.mark.parametrize("name", PROGRAMS)
def test_kept_activations_are_float16_buffers_of_half_the_bytes(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # checkpointed, both redraw only masks (without, a float32 step also recomputes dropout outputs, which a
    # float16 one keeps rounded: pipeline.gradients); and no reduction computes a cheap producer again
    # (lower.merge), which only a float32 step can do (a float16 value read back is a rounded one)
    monkeypatch.setattr(merge, "_cheap", lambda kernel: False)
    program = apply(PROGRAMS[name](), {"checkpoint": True})
    full = kept(compile_program(program))
    half = kept(compile_program(stored_as(program, "float16")))
    assert all(dtype is not DType.F32 for dtype, _ in half)  # float16, or masks that are no floats
    widened = sorted(storage_bytes(DType.F16 if d is DType.F32 else d, size) for d, size in full)
    assert sorted(storage_bytes(d, size) for d, size in half) == widened  # each halves, up to whole words
    assert sum(storage_bytes(d, s) for d, s in half) <= 0.51 * sum(storage_bytes(d, s) for d, s in full)


def test_every_kernel_reading_float16_converts_it_on_load() -> None:
    """No float32 copy of a parameter or kept activation: readers load the float16 buffer itself."""
    compiled = compile_program(stored_as(digits_cnn(), "float16"))
    schedule = lower(compiled.step, Level.PROD, F16)
    half = {b.id for b in schedule.buffers if b.dtype is DType.F16}
    copies = [
        k
        for k in flat(schedule.kernels)
        if k.kind is Kind.ELEMENTWISE and k.expr.steps == (Load(0),) and k.inputs[0].buffer in half
    ]
    assert not copies
    readers = {k.kind for k in flat(schedule.kernels) if any(v.buffer in half for v in k.inputs)}
    assert {Kind.CONV2D, Kind.CONV2D_GRAD_INPUT, Kind.MATMUL, Kind.MAX_POOL2D_GRAD, Kind.ELEMENTWISE} <= readers
    for kernel in flat(schedule.kernels):  # a kernel stores float16 exactly when its value is float16
        assert (kernel.out.buffer in half) == (kernel.expr.dtype is DType.F16)


def test_float16_storage_needs_shader_f16_at_every_level() -> None:
    compiled = compile_program(stored_as(digits_mlp(), "float16"))
    for level in Level:
        with pytest.raises(StorageUnsupported, match="needs the device feature shader-f16, which this device lacks"):
            compiled.at(level, frozenset())
        assert compiled.at(level, F16).step is compiled.step
    with pytest.raises(StorageUnsupported, match="its features: none"):
        compiled.at(Level.PROD, frozenset())
    assert compile_program(digits_mlp()).at(Level.PROD, frozenset()).step  # float32 storage needs nothing


def test_fast_scales_its_loss_over_float16_storage_too() -> None:
    """Loss scaling and float16 storage compose: the scaled step stores in float16 the same way."""
    compiled = compile_program(stored_as(mlp(64, [1026, 1026], 10, 512), "float16"))
    assert compiled.at(Level.FAST, F16).scales_loss
    fast = compiled.at(Level.FAST, F16).step
    assert fast is compiled.loss_scaled.step and fast.has_input(LOSS_SCALE)
    assert all(n.dtype is DType.F16 for n in fast.inputs if input_role(n) is Role.PARAM)
    assert all(fast.has_input(master_name(p)) for p in compiled.forward.trainable)
    init = dict(compiled.at(Level.FAST, F16).init.outputs)
    assert f"state/{LOSS_SCALE}" in init and all(f"state/{master_name(p)}" in init for p in compiled.forward.trainable)


def test_the_plan_counts_master_weights_and_float16_parameters() -> None:
    compiled = compile_program(stored_as(mlp(784, [512, 512], 10, 256), "float16"))
    plan = compiled.at(Level.PROD, F16).plan
    params = [n for n in compiled.step.inputs if input_role(n) is Role.PARAM]
    count = sum(n.size for n in params)
    assert plan.totals["mixed-precision master copy"] == 4 * count
    assert plan.totals["parameters"] == sum(storage_bytes(DType.F16, n.size) for n in params) == 2 * count
    assert plan.step.bytes["mixed-precision master copy"] == 4 * count  # held throughout the step


def advice_within(data: dict[str, Any], features: frozenset[str], budget: Budget) -> Any:
    judge = device_judge(DeviceLimits(1 << 30, 1 << 30, 32), budget)
    plan = compile_program(data).at(Level.PROD, features).plan
    return advise(data, plan, budget, Target(planner(Level.PROD, features), judge))


def test_float16_storage_is_offered_where_the_device_has_shader_f16_and_replans_smaller() -> None:
    data = digits_cnn()  # activations outweigh its parameters: float16 storage saves bytes
    plain = compile_program(data).at(Level.PROD, F16).plan.total
    budget = Budget(plain // 2, "a test budget")
    advice = advice_within(data, F16, budget)
    remedy = next(r for r in advice.remedies if r.name == "float16 storage")
    assert remedy.change == {"storage": "float16"} and remedy.plan.total < plain
    applied = apply(data, remedy.change)
    assert applied["memory"]["storage"] == "float16" and "storage" not in data.get("memory", {})
    assert compile_program(applied).at(Level.PROD, F16).plan.total == remedy.plan.total
    without = advice_within(data, frozenset(), budget)
    assert all("storage" not in r.change for r in without.remedies)
    again = advice_within(applied, F16, budget)
    assert all("storage" not in r.change for r in again.remedies)  # already stored so


def test_the_breakdown_of_a_float16_step_adds_up() -> None:
    compiled = compile_program(stored_as(digits_cnn(), "float16"))
    plan = compiled.at(Level.PROD, F16).plan
    assert plan.step.total == plan.functions[0].allocated
    kinds = Counter(plan.totals)
    assert kinds["activations kept for backward"] > 0 and kinds["updated parameters and state"] == 0


def test_what_float16_storage_makes_is_owned_as_what_it_stores() -> None:
    """The owner table (scellis.ir.owners): a float16 parameter and its master are the parameter's node's,
    a cast (rounding to float16, widening back) is what it rounds, and nothing goes unrecorded."""
    compiled = compile_program(stored_as(digits_cnn(), "float16"))
    owners, step = compiled.owners, compiled.step
    assert all(n in owners for n in step.nodes() if n.op is not Op.CONST)
    for slot in compiled.forward.params:
        assert owners[step.input(slot.name)] == owners[step.input(master_name(slot.name))] == {slot.node_id}
    rounded = [n for n in step.nodes() if n.op is Op.CAST and n.src[0].op is Op.CAST and n.src[0].dtype is DType.F16]
    assert rounded, "the CNN keeps activations in float16"
    for widened in rounded:
        assert owners[widened] == owners[widened.src[0]] == owners[widened.src[0].src[0]]
