"""The reference device: a kernel schedule executed in numpy, float64, kernel by kernel, through the
same views, fused expressions and carry copies the other devices run. It speaks the device protocol
(runtime.device) with the same byte formats, so any test can swap it in; and since its kernels reuse
the IR reference's op implementations, agreement with `reference.run` checks the lowering itself."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import as_strided

from scellis.lower.kernels import Acc, Apply, Const, Coord, Expr, Kernel, Kind, Load, Reduction, Schedule, View, flat
from scellis.ops import DType, Op
from scellis.ops import defs as d
from scellis.plan.budget import Budget, DeviceLimits
from scellis.plan.planned import Planned
from scellis.runtime.device import borrowed
from scellis.runtime.index_checks import IndexChecks
from scellis.runtime.ready import Synchronous, copy_sizes
from scellis.runtime.reference import oracle as ref

FLOAT = np.dtype(np.float64)
WIRE = {DType.F32: "<f4", DType.F16: "<f2", DType.I32: "<i4", DType.U32: "<u4", DType.BOOL: "<u4"}
DIRECT_OPS = {
    Kind.CONV2D_GRAD_INPUT: Op.CONV2D_GRAD_INPUT,
    Kind.CONV2D_GRAD_WEIGHT: Op.CONV2D_GRAD_WEIGHT,
    Kind.MAX_POOL2D: Op.MAX_POOL2D,
    Kind.MAX_POOL2D_GRAD: Op.MAX_POOL2D_GRAD,
    Kind.AVG_POOL2D: Op.AVG_POOL2D,
    Kind.AVG_POOL2D_GRAD: Op.AVG_POOL2D_GRAD,
    Kind.GATHER: Op.GATHER,
    Kind.SCATTER_ADD: Op.SCATTER_ADD,
    Kind.RANDOM: Op.RANDOM,
    Kind.CONV2D: Op.CONV2D,
    Kind.SHIFT2D: Op.SHIFT2D,
    Kind.FLIP_LAST: Op.FLIP_LAST,
    Kind.NF4_PACK: Op.NF4_PACK,
    Kind.NF4_UNPACK: Op.NF4_UNPACK,
    Kind.NF4_MATMUL: Op.NF4_MATMUL,
}
ROWS = {
    Kind.SOFTMAX: Op.SOFTMAX,
    Kind.LOG_SOFTMAX: Op.LOG_SOFTMAX,
    Kind.ARGMAX: Op.ARGMAX,
    Kind.SORT: Op.SORT,
    Kind.SORT_GRAD: Op.SORT_GRAD,
}


@dataclass(frozen=True)
class _Shaped:
    """What the reference's op implementations read of a node: its shape."""

    shape: tuple[int, ...]


class ReferenceDevice:
    name = "reference (numpy, float64)"
    limits = DeviceLimits(2**62, 2**62, 2**31 - 1)  # host memory holds numpy arrays of any size

    def __init__(self, features: frozenset[str] = frozenset()) -> None:
        """`features`: the WebGPU device's to stand in for. Float16 storage (shader-f16) is modelled: a
        float16 buffer holds numpy float16, so every store rounds to nearest even; arithmetic stays
        float64 (fast's float16 matmul tiles are not modelled: their tolerance covers the difference)."""
        self.features = features

    async def budget(self, need: int) -> Budget:
        """The reference computes in host memory; its float64 arrays are not what the plan counts."""
        return Budget(None, "the reference computes in float64 in host memory, not in the planned buffers")

    async def compile(self, planned: Planned, host: CompiledReference | None = None) -> CompiledReference:
        compiled = CompiledReference(planned.schedule)
        borrowed(planned, host)
        for name in planned.shared:  # the same arrays; temporaries need not share (they hold nothing between runs)
            assert host is not None
            compiled.memory[compiled.names[name]] = host.memory[host.names[name]]
        return compiled


class CompiledReference(Synchronous):
    def __init__(self, schedule: Schedule) -> None:
        self.schedule = schedule
        self.memory = [np.zeros(max(b.size, 1), dtype=ref.numpy_dtype(b.dtype, FLOAT)) for b in schedule.buffers]
        self.names = dict((*schedule.inputs, *schedule.outputs))
        self.index_checks = IndexChecks(schedule)

    def _view(self, view: View) -> np.ndarray:
        flat = self.memory[view.buffer]
        strides = tuple(s * flat.itemsize for s in view.strides)
        return as_strided(flat[view.offset :], shape=view.shape, strides=strides)

    def write(self, name: str, data: bytes) -> None:
        buffer = self.schedule.buffer(self.names[name])
        values = np.frombuffer(data, dtype=WIRE[buffer.dtype])
        if values.size != buffer.size and len(data) != buffer.nbytes:  # float16: padded to whole words
            raise ValueError(f"{name!r} holds {buffer.size} elements, got {values.size}")
        self.memory[buffer.id][: buffer.size] = values[: buffer.size].astype(self.memory[buffer.id].dtype)

    def copy_into(self, other: CompiledReference, names: list[str]) -> None:
        """Host memory to host memory (runtime.device.CompiledStep.copy_into)."""
        mine = {name: self.schedule.buffer(b).nbytes for name, b in self.names.items()}
        theirs = {name: other.schedule.buffer(b).nbytes for name, b in other.names.items()}
        for name, _ in copy_sizes(names, mine, theirs):
            other.memory[other.names[name]][...] = self.memory[self.names[name]]

    def read(self, name: str) -> bytes:
        buffer = self.schedule.buffer(self.names[name])
        data = self.memory[buffer.id][: buffer.size].astype(WIRE[buffer.dtype]).tobytes()
        return data.ljust(buffer.nbytes, b"\0")

    def run(self) -> None:
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):  # IEEE results are the contract
            for kernel in flat(self.schedule.kernels):  # a series' parts one after another
                results = self._kernel(kernel)  # every value computed before any is written
                for view, value in zip(kernel.writes, results, strict=True):
                    self._view(view)[...] = value
        for copy in self.schedule.carry:
            self.memory[copy.dst][...] = self.memory[copy.src]

    def _kernel(self, kernel: Kernel) -> list[np.ndarray]:
        """What the kernel writes through each of its views (Kernel.writes)."""
        # float16 storage is widened on load, as every device does (stores round: numpy assigns to nearest)
        inputs = [x.astype(FLOAT) if x.dtype == np.float16 else x for x in map(self._view, kernel.inputs)]
        stored: dict[View, np.ndarray] = {}
        reduced = inputs  # what the kernel's own computation takes (a prologue's value, for a REDUCE)
        if isinstance(kernel.arg, Reduction):  # reduced from a row-major copy, whatever the view
            reads, shape = kernel.arg.reads, kernel.inputs[0].shape
            before = (
                inputs[:1] if kernel.arg.prologue is None else steps(kernel.arg.prologue, inputs[:reads], None, shape)
            )
            stored |= {v: np.array(np.broadcast_to(before[step], shape)) for v, step in kernel.prologue_stores}
            reduced = [np.ascontiguousarray(np.broadcast_to(before[-1], shape))]
        acc = self._accumulator(kernel, reduced)
        values = steps(kernel.expr, inputs, acc, kernel.out.shape)
        shape = kernel.out.shape
        stored |= {v: np.array(np.broadcast_to(values[step], shape)) for v, step in kernel.epilogue_stores}
        return [np.array(np.broadcast_to(values[-1], shape)), *(stored[v] for v, _ in kernel.stores)]

    def _accumulator(self, kernel: Kernel, inputs: list[np.ndarray]) -> np.ndarray | None:  # noqa: PLR0911 - one branch per kind
        kind = kernel.kind
        if kind is Kind.ELEMENTWISE:
            return None
        if kind is Kind.MATMUL:
            return np.matmul(inputs[0], inputs[1])
        if kind is Kind.REDUCE:
            assert isinstance(kernel.arg, Reduction)
            x = inputs[0]
            axes = tuple(range(len(kernel.out.shape), x.ndim))
            arg = d.ReduceArg(axes, False, kernel.arg.correction)
            return ref.IMPLS[kernel.arg.op](arg, [x], _Shaped(kernel.out.shape), FLOAT)
        if kind in ROWS:
            axis = d.AxisArg(inputs[0].ndim - 1)
            return ref.IMPLS[ROWS[kind]](axis, inputs, _Shaped(kernel.out.shape), FLOAT)
        if kind is Kind.SOLVE:
            return ref.eliminate(*inputs)
        if kind is Kind.CONCAT:
            assert isinstance(kernel.arg, d.AxisArg)
            return np.concatenate(inputs, axis=kernel.arg.axis)
        if kind is Kind.CHECK_INDEX:
            return _check_index(kernel.arg.bound, *inputs)  # type: ignore[attr-defined]
        op = DIRECT_OPS[kind]
        count = 2 if kind in (Kind.CONV2D, Kind.RANDOM) else len(inputs)
        return ref.IMPLS[op](kernel.arg, inputs[:count], _Shaped(kernel.out.shape), FLOAT)


def _check_index(bound: int, indices: np.ndarray, record: np.ndarray) -> np.ndarray:
    """The record after a CHECK_INDEX kernel (lower.kernels.Kind): kept when it holds a count already."""
    flat = indices.reshape(-1)
    bad = np.flatnonzero((flat < 0) | (flat >= bound))
    if record[0] or not bad.size:
        return record.copy()
    return np.array([bad.size, bad[0], np.int64(flat[bad[0]]) & 0xFFFFFFFF], dtype=np.uint32)


def steps(expr: Expr, inputs: list[np.ndarray], acc: np.ndarray | None, shape: tuple[int, ...]) -> list[Any]:
    """Every step's value of a fused expression over whole arrays, broadcastable to `shape` (the same
    semantics as each step's IR op)."""
    values: list[Any] = []
    for step, dtype in zip(expr.steps, expr.dtypes, strict=True):
        value: Any
        if isinstance(step, Load):
            value = inputs[step.input]
        elif isinstance(step, Const):
            value = np.array(step.value, dtype=ref.numpy_dtype(step.dtype, FLOAT))
        elif isinstance(step, Acc):
            value = acc
        elif isinstance(step, Coord):
            value = np.arange(shape[step.axis], dtype=np.int32).reshape(
                tuple(-1 if i == step.axis else 1 for i in range(len(shape)))
            )
        else:
            value = _apply(step, [values[s] for s in step.src])
        values.append(np.asarray(value).astype(ref.numpy_dtype(dtype, FLOAT), copy=False))
    return values


def _apply(step: Apply, args: list[Any]) -> Any:
    if step.op in ref.UNARY:
        return ref.UNARY[step.op](step.arg, args[0])
    if step.op in ref.BINARY:
        return ref.BINARY[step.op](args[0], args[1])
    if step.op is Op.WHERE:
        return np.where(*args)
    assert step.op is Op.CAST and isinstance(step.arg, d.CastArg)
    return args[0].astype(ref.numpy_dtype(step.arg.to, FLOAT))
