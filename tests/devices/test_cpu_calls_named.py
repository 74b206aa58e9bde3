"""The CPU path runs each kernel with exactly the exports `codegen.cpu.cpu_calls` names (what the Guide
shows for it), in schedule order, then the carry copies."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from cpu_run import function, inp

from scellis.codegen.cpu import COPY, TAPE, cpu_calls, needs_temp
from scellis.examples import char_transformer, digits_cnn
from scellis.ir import Function
from scellis.levels import Level
from scellis.lower import lower
from scellis.ops import Op, make
from scellis.ops import defs as d
from scellis.pipeline import compile_program
from scellis.plan import planned, update_in_place
from scellis.runtime.cpu.device import compile_schedule
from scellis.runtime.cpu.module import CpuPath


def concat_of_convolutions() -> Function:
    """Convolutions with an epilogue, each written into a part of one buffer: through a temporary the
    epilogue's tape moves."""
    x, conv = inp("x", (2, 2, 6, 6)), d.ConvArg((1, 1), (1, 1), (1, 1), 1)
    a = make(Op.RELU, make(Op.CONV2D, x, inp("a", (3, 2, 3, 3)), arg=conv))
    b = make(Op.TANH, make(Op.CONV2D, x, inp("b", (2, 2, 3, 3)), arg=conv))
    return function({"y": make(Op.CONCAT, a, b, arg=d.AxisArg(1))})


STEPS: dict[str, Callable[[], Function]] = {
    "digits_cnn": lambda: compile_program(digits_cnn()).step,
    "char_transformer": lambda: compile_program(char_transformer()).step,
    "concat": concat_of_convolutions,
}


@pytest.mark.parametrize("name", STEPS)
def test_the_cpu_path_calls_what_cpu_calls_names(cpu: CpuPath, name: str) -> None:
    schedule = lower(STEPS[name](), Level.DEBUG)
    compiled = compile_schedule(cpu, planned(schedule))
    named = [export for kernel in schedule.kernels for export in cpu_calls(kernel)]
    carry = [COPY] * len(update_in_place(schedule).carry)
    assert [call.export for call in compiled.calls] == named + carry
    assert TAPE in named
    assert any(needs_temp(k) for k in schedule.kernels) == (name == "concat")
