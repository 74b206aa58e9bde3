"""plan.breakdown and update_in_place: what the planned bytes are for, checked against what Adam must
hold per parameter, and the in-place update that keeps no second copy of parameters and state."""

from __future__ import annotations

from collections import Counter

import pytest

from scellis.examples import digits_cnn, digits_mlp, mlp
from scellis.levels import Level
from scellis.lower import lower
from scellis.lower.kernels import Schedule, storage_bytes
from scellis.ops import DType
from scellis.pipeline import Compiled, compile_program
from scellis.plan import plan_memory, update_in_place
from scellis.plan.breakdown import CATEGORIES, breakdown, categories

PROGRAMS = {
    "digits MLP": digits_mlp,
    "digits CNN": digits_cnn,
    "MLP 784-512-512-10": lambda: mlp(784, [512, 512], 10, 256),
}


# A gradient that a matmul or a reduction computes feeds the update in that kernel's epilogue and is never
# stored; a convolution's weight gradient is (its kernel takes no epilogue), and the update reads it back.
STORED_GRADIENTS = {"digits MLP": (), "digits CNN": ("conv1.weight", "conv2.weight"), "MLP 784-512-512-10": ()}


def merged(compiled: Compiled) -> Schedule:
    return update_in_place(lower(compiled.step, Level.PROD))


def stored_gradients(name: str, compiled: Compiled) -> int:
    sizes = {n.arg.name: n.size for n in compiled.step.inputs}  # type: ignore[attr-defined]
    return sum(4 * sizes[param] for param in STORED_GRADIENTS[name])


@pytest.mark.parametrize("name", PROGRAMS)
def test_adam_holds_12_bytes_per_parameter_and_only_the_gradients_no_kernel_updates_from(name: str) -> None:
    compiled = compile_program(PROGRAMS[name]())
    schedule = merged(compiled)
    kinds = categories(schedule, compiled.step, compiled.forward.fn, compiled.backward)
    total = Counter()
    for buffer, kind in zip(schedule.buffers, kinds, strict=True):
        total[kind] += buffer.nbytes
    params = sum(n.size for n in compiled.step.inputs if n.arg.role.value == "param")  # type: ignore[attr-defined]
    assert total["parameters"] == 4 * params
    assert total["optimizer state"] == 8 * params + 4  # two float32 moments per parameter, and the step count
    assert total["gradients"] == stored_gradients(name, compiled)
    assert total["updated parameters and state"] == 0  # updated in place: no second copy


@pytest.mark.parametrize("name", PROGRAMS)
def test_adam_over_float16_storage_holds_14_bytes_per_parameter_and_the_stored_gradients(name: str) -> None:
    """2 bytes of float16 parameters, 4 of float32 master weights and 8 of moments; gradients as in float32."""
    compiled = compile_program({**PROGRAMS[name](), "memory": {"storage": "float16"}})
    schedule = merged(compiled)
    kinds = categories(schedule, compiled.step, compiled.forward.fn, compiled.backward)
    total = Counter()
    for buffer, kind in zip(schedule.buffers, kinds, strict=True):
        total[kind] += buffer.nbytes
    sizes = [n.size for n in compiled.step.inputs if n.arg.role.value == "param"]  # type: ignore[attr-defined]
    params = sum(sizes)
    assert total["parameters"] == sum(storage_bytes(DType.F16, size) for size in sizes) == 2 * params
    assert total["mixed-precision master copy"] == 4 * params
    assert total["optimizer state"] == 8 * params + 4
    assert total["gradients"] == stored_gradients(name, compiled)
    assert total["updated parameters and state"] == 0  # masters and float16 copies updated in place


@pytest.mark.parametrize("name", PROGRAMS)
def test_breakdown_at_the_peak_adds_up_to_the_allocation(name: str) -> None:
    compiled = compile_program(PROGRAMS[name]())
    schedule = merged(compiled)
    plan = plan_memory(schedule)
    result = breakdown(schedule, plan, categories(schedule, compiled.step, compiled.forward.fn, compiled.backward))
    assert set(result.bytes) == set(CATEGORIES)
    assert result.total == plan.allocated and result.bytes["reuse slack"] >= 0
    assert result.bytes["activations kept for backward"] > 0 and result.bytes["batch inputs"] > 0


def test_in_place_updates_drop_the_carry_and_name_the_input() -> None:
    schedule = lower(compile_program(digits_mlp()).step, Level.PROD)
    updated = update_in_place(schedule)
    assert schedule.carry and not updated.carry
    names = dict((*updated.inputs, *updated.outputs))
    assert names["param/hidden.weight"] == names["hidden.weight"]
    assert names["state/opt.m/hidden.weight"] == names["opt.m/hidden.weight"]
    plan = plan_memory(updated)
    merged_away = {c.src for c in schedule.carry}
    assert all(plan.slot_of[b] == -1 for b in merged_away)  # no kernel or name refers to them any more
    assert not any(v.buffer in merged_away for k in updated.kernels for v in (k.out, *k.inputs))
    assert plan.allocated < 0.7 * plan_memory(schedule).allocated
