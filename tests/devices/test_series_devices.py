"""Series (lower.series: kernels run one after another by one dispatch) on every device: a row's log-softmax,
its argmax and its sum with an elementwise epilogue, and whole reductions, an invocation an index; long rows'
softmax, the sum of each row of it and their maxima, a workgroup a row; give the same bytes as the kernels
apart and match the float64 reference within 1e-5 relative to the largest magnitude; two dispatches run
them all."""

from __future__ import annotations

import numpy as np
import pytest
from wgpu_harness import run_on

from scellis.ir import Function
from scellis.levels import Level
from scellis.lower import lower
from scellis.lower.kernels import Kind
from scellis.ops import DType, Op, make
from scellis.ops import defs as d
from scellis.ops.build import mul, unary
from scellis.ops.node import input_node
from scellis.runtime.cpu.device import CpuDevice
from scellis.runtime.cpu.module import CpuPath
from scellis.runtime.reference.device import ReferenceDevice
from scellis.runtime.reference.oracle import run
from scellis.runtime.webgpu.native import WgpuDevice

RNG = np.random.default_rng(11)


@pytest.fixture(scope="module")
def devices(cpu: CpuPath) -> dict[str, object]:
    return {"reference": ReferenceDevice(), "cpu": CpuDevice(cpu), "webgpu": WgpuDevice()}


def rows() -> tuple[Function, dict[str, np.ndarray]]:
    x, y = input_node("x", d.Role.DATA, DType.F32, (37, 9)), input_node("y", d.Role.DATA, DType.F32, (37, 100))
    ls = make(Op.LOG_SOFTMAX, x, arg=d.AxisArg(1))
    total = make(Op.SUM, ls, arg=d.ReduceArg((1,), False))
    outs = {
        "log_softmax": ls,
        "argmax": make(Op.ARGMAX, x, arg=d.AxisArg(1)),
        "scaled": mul(unary(Op.TANH, total), total),
        "mean": make(Op.MEAN, x, arg=d.ReduceArg((0, 1), False)),  # 333 elements: a workgroup
        "row0": make(Op.MAX, make(Op.SLICE, x, arg=d.SliceArg((0, 0), (1, 9), (1, 1))), arg=d.ReduceArg((0, 1), False)),
        "row1": make(Op.MAX, make(Op.SLICE, x, arg=d.SliceArg((1, 0), (2, 9), (1, 1))), arg=d.ReduceArg((0, 1), False)),
    }
    # rows of 100: a workgroup each (a lane tree); the sum reads the row of the softmax its workgroup wrote
    softmax = make(Op.SOFTMAX, y, arg=d.AxisArg(1))
    outs |= {"softmax": softmax, "softmax_sum": make(Op.SUM, softmax, arg=d.ReduceArg((1,), False))}
    outs |= {"top": make(Op.MAX, y, arg=d.ReduceArg((1,), False))}
    inputs = {"x": RNG.standard_normal((37, 9)), "y": RNG.standard_normal((37, 100))}
    return Function("rows", (x, y), tuple(outs.items())), inputs


@pytest.mark.parametrize("level", [Level.DEBUG, Level.PROD], ids=lambda v: v.value)
@pytest.mark.parametrize("device", ["reference", "cpu", "webgpu"])
def test_a_series_gives_the_bytes_of_its_kernels_apart(
    devices: dict[str, object], device: str, level: Level, monkeypatch: pytest.MonkeyPatch
) -> None:
    fn, inputs = rows()
    kernels = lower(fn, level).kernels
    series = [k for k in kernels if k.kind is Kind.SERIES]
    # the short rows' three kernels (the sum with its elementwise epilogue) and the two slices' maxima, an
    # invocation an index; the long rows' softmax, sum and maximum and the whole mean, a workgroup an index
    assert [[p.kind for p in k.parts] for k in series] == [
        [Kind.LOG_SOFTMAX, Kind.ARGMAX] + [Kind.REDUCE] * 3,
        [Kind.SOFTMAX, Kind.REDUCE, Kind.REDUCE, Kind.REDUCE],
    ]
    together = run_on(devices[device], fn, inputs, level)
    with monkeypatch.context() as patch:
        patch.setattr("scellis.lower.schedule.joined", lambda kernels, *_: tuple(kernels))
        assert not any(k.kind is Kind.SERIES for k in lower(fn, level).kernels)
        apart = run_on(devices[device], fn, inputs, level)
    want = run(fn, inputs)
    for name, _ in fn.outputs:
        assert together[name].tobytes() == apart[name].tobytes(), name
        scale = max(1.0, float(np.max(np.abs(want[name]))))
        np.testing.assert_allclose(together[name].astype(np.float64), want[name], rtol=0, atol=1e-5 * scale)
