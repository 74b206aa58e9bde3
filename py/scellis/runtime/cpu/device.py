"""Stage: execution (CPU path). A kernel schedule compiled for the CPU path's module.

Compiling places every buffer in the module's linear memory (a region reserved from the CpuPath),
fills the constant buffers, and writes each kernel's arguments there once as u32 words: a tape for
ELEMENTWISE, RANDOM and every epilogue (see `cpu_tape`), a descriptor for the other kinds (layouts in
wasm/cpu_*.c). A step is a fixed list of export calls, then the schedule's carry copies, itself encoded
in memory and run by one call of `sc_cpu_run` (crossing into the module costs far more than a small
kernel); the host only writes inputs and reads outputs. Everything goes through `WasmInstance.call/
read/write/grow/memory_size`, so the same code runs under wasmtime and in the browser.

A producer (matmul, reduce, conv...) writes its result (Acc) into its output; a fused epilogue then
runs as a tape over that output in place. Kinds that write only contiguous results get a temporary
buffer when their output is a strided part of a buffer (concat, slice_grad), and the tape moves it; so
does an epilogue that reads its output's own buffer (an update in place, in its gradient's kernel),
which the result must not overwrite first. Those kernels share one temporary, the largest they need.
"""

from __future__ import annotations

import dataclasses
import math
import os
import struct
import sys
from collections.abc import Callable
from dataclasses import dataclass

from scellis.codegen.cpu import COPY, PRODUCER_EXPORTS, TAPE, needs_temp, prologue_blocks
from scellis.lower import views
from scellis.lower.kernels import ACC, Expr, Kernel, Kind, Load, Reduction, View, flat
from scellis.ops import DType, Op, nf4
from scellis.ops import defs as d
from scellis.plan.budget import Budget, DeviceLimits
from scellis.plan.planned import Planned
from scellis.runtime.cpu.module import CpuPath
from scellis.runtime.cpu.tape import Source, encode, merge_axes, padded
from scellis.runtime.device import borrowed
from scellis.runtime.index_checks import IndexChecks
from scellis.runtime.ready import Synchronous, copy_sizes

REDUCE_CODES = {Op.SUM: 0, Op.MEAN: 1, Op.MAX: 2, Op.VAR: 3}
ROW_CODES = {Kind.SOFTMAX: 4, Kind.LOG_SOFTMAX: 5, Kind.ARGMAX: 6}
CONVOLUTIONS = (Kind.CONV2D, Kind.CONV2D_GRAD_INPUT, Kind.CONV2D_GRAD_WEIGHT)
# sc_cpu_run's entries name their export by its position here, from 1: build.py writes this table as the
# enum sc_run that wasm/cpu_step.c switches over, so the two cannot differ.
RUN_ORDER = (
    "sc_cpu_tape", "sc_cpu_matmul", "sc_cpu_reduce", "sc_cpu_rows", "sc_cpu_conv2d", "sc_cpu_conv2d_grad_input",
    "sc_cpu_conv2d_grad_weight", "sc_cpu_pool2d", "sc_cpu_pool2d_grad", "sc_cpu_gather", "sc_cpu_scatter_add",
    "sc_cpu_copy", "sc_cpu_shift2d", "sc_cpu_flip_last", "sc_cpu_solve", "sc_cpu_sort", "sc_cpu_sort_grad",
    "sc_cpu_check_index", "sc_cpu_nf4_pack", "sc_cpu_nf4_unpack", "sc_cpu_nf4_matmul",
)  # fmt: skip
STEP_EXPORTS = {name: i + 1 for i, name in enumerate(RUN_ORDER)}


class CpuScheduleError(ValueError):
    """A schedule the CPU path cannot run as given (a kernel input it expects contiguous is not)."""


@dataclass(frozen=True)
class Call:
    """One export call: descriptor (or source) address, scratch (or destination) address, work range."""

    export: str
    args: tuple[int, int, int, int]

    @property
    def entry(self) -> tuple[int, ...]:
        return (STEP_EXPORTS[self.export], *self.args)


@dataclass(frozen=True)
class Part:
    """One export call of a kernel: its argument words, and how its work range and scratch are known
    (a number, or an export asked with the written words' address)."""

    export: str
    words: tuple[int, ...]
    items: int | str
    scratch: str | None = None  # the export giving the scratch bytes it needs, if it takes scratch


class CompiledCpu(Synchronous):
    """A schedule placed in one module instance: write inputs, run steps, read outputs."""

    def __init__(self, cpu: CpuPath, buffers: dict[str, tuple[int, int]], calls: tuple[Call, ...]) -> None:
        self.instance = cpu.instance
        self.buffers = buffers  # name -> (byte address, bytes)
        self.calls = calls
        self.allocated = 0  # bytes of the schedule's buffers (set by compile_schedule)
        self.memory: _Memory | None = None  # where they lie (set by compile_schedule)
        self.workspace = 0  # bytes beyond them: kernels' temporaries and alignment
        entries = [w for call in calls for w in call.entry]
        self.program = cpu.reserve(4 * len(entries))
        self.instance.write(self.program, struct.pack(f"<{len(entries)}I", *entries))

    def _buffer(self, name: str) -> tuple[int, int]:
        if name not in self.buffers:
            raise KeyError(f"the schedule has no input or output {name!r}; it has {sorted(self.buffers)}")
        return self.buffers[name]

    def write(self, name: str, data: bytes) -> None:
        """An input's (or output's) bytes: 4 per element, little-endian, bools as u32 0/1."""
        address, size = self._buffer(name)
        if len(data) != size:
            raise ValueError(f"{name!r} holds {size} bytes, got {len(data)}")
        self.instance.write(address, data)

    def read(self, name: str) -> bytes:
        address, size = self._buffer(name)
        return self.instance.read(address, size)

    def copy_into(self, other: CompiledCpu, names: list[str]) -> None:
        """Within the module's one memory, by its copy export (runtime.device.CompiledStep.copy_into)."""
        if other.instance is not self.instance:
            raise ValueError("copy_into needs both steps placed in one module instance")
        sizes = {name: size for name, (_, size) in self.buffers.items()}
        for name, size in copy_sizes(names, sizes, {name: size for name, (_, size) in other.buffers.items()}):
            if other.buffers[name][0] != self.buffers[name][0]:  # borrowed from this step: the same bytes
                self.instance.call(COPY, other.buffers[name][0], self.buffers[name][0], 0, size // 4)

    def run(self) -> None:
        """One step: every kernel in order, then the carry copies."""
        self.instance.call("sc_cpu_run", self.program, len(self.calls))


class CpuDevice:
    """The CPU path as a training device: every schedule placed in one module instance."""

    def __init__(self, cpu: CpuPath) -> None:
        self.cpu = cpu
        self.name = f"CPU path (WebAssembly) via {cpu.host}"
        self.features: frozenset[str] = frozenset()  # no float16 arithmetic: fast runs prod's kernels
        # one wasm32 memory holds everything: no limit but its 4 GiB on one buffer or on bindings
        self.limits = DeviceLimits(WASM32_BYTES, WASM32_BYTES, 2**31 - 1)

    @classmethod
    async def open(cls) -> CpuDevice:
        return cls(await CpuPath.open())

    async def budget(self, need: int) -> Budget:
        """What is left of the 4 GiB a wasm32 memory can reach, capped by the host's memory (`need`
        plays no part: both are known without trying)."""
        used = self.cpu.free_base
        left = WASM32_BYTES - used
        host = host_memory()
        how = f"wasm32 memory: 4 GiB, {used:,} bytes in use"
        if host is None:
            return Budget(left, how + "; the host's memory is not known here")
        return Budget(min(left, host), how + f"; host memory {host:,} bytes")

    async def compile(self, planned: Planned, host: CompiledCpu | None = None) -> CompiledCpu:
        return compile_schedule(self.cpu, planned, host)


WASM32_BYTES = 4 * 2**30  # 65,536 pages of 64 KiB: all a wasm32 memory can address


def host_memory() -> int | None:
    """The host's physical memory in bytes: from the OS under CPython; in a browser only the rough
    figure `navigator.deviceMemory` gives (GiB, rounded down and capped at 8), or None."""
    if sys.platform == "emscripten":
        import js  # type: ignore[import-not-found]

        gib = getattr(js.navigator, "deviceMemory", None)
        return int(float(gib) * 2**30) if gib else None
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


class _Memory:
    """Byte addresses of the schedule's buffers, placed by the memory plan (buffers sharing a slot share
    an address), then of the temporaries some kernels need (numbered after the schedule's buffers, so
    views of them resolve alike)."""

    def __init__(self, cpu: CpuPath, planned: Planned, host: _Memory | None) -> None:
        schedule = planned.schedule
        count = len(schedule.buffers)
        needing = [i for i, k in enumerate(schedule.kernels) if needs_temp(k)]
        # kernel index -> buffer number: one temporary the kernels share (each empties it before the next runs)
        self.temp = dict.fromkeys(needing, count)
        # REDUCE prologues computed a block of outputs at a time into one temporary they share
        self.prologue_temp = count + 1
        temp_sizes = [4 * max((schedule.kernels[i].out.size for i in needing), default=0)]
        temp_sizes.append(4 * max((prologue_blocks(k)[2] for k in schedule.kernels), default=0))
        self.plan = plan = planned.memory
        self.slot_bytes = planned.allocated
        self.temp_bytes = sum(temp_sizes)
        borrows = borrowed(planned, host)
        own = [size for size, b in zip(plan.slot_bytes, borrows, strict=True) if b < 0]
        offsets, end = [], 0
        for size in (*own, *temp_sizes):
            offsets.append(end)
            end += _aligned(size)
        self.reserved = end
        base = cpu.reserve(end)
        placed = iter(base + o for o in offsets[: len(own)])
        self.slots: list[int] = [next(placed) if b < 0 else host.slots[b] for b in borrows]  # type: ignore[union-attr]
        temps = [base + o for o in offsets[len(own) :]]
        self.buffer_at = [self.slots[plan.slot_of[b]] if plan.slot_of[b] >= 0 else -1 for b in range(count)] + temps

    def address(self, view: View) -> int:
        return self.buffer_at[view.buffer] + 4 * view.offset


def _aligned(nbytes: int) -> int:
    return -(-nbytes // 16) * 16


def compile_schedule(cpu: CpuPath, planned: Planned, host: CompiledCpu | None = None) -> CompiledCpu:
    """Place `planned`'s schedule in `cpu`'s memory as its plan assigns (its borrowed slots at `host`'s),
    and encode every kernel once, a series' parts one by one (see the module docstring)."""
    kernels = flat(planned.schedule.kernels)
    planned = dataclasses.replace(planned, schedule=dataclasses.replace(planned.schedule, kernels=kernels))
    schedule = planned.schedule
    if any(b.dtype is DType.F16 for b in schedule.buffers):
        raise ValueError(
            f"{schedule.name} stores float16, which the CPU path cannot: float16 storage needs a WebGPU "
            "device with shader-f16"
        )
    memory = _Memory(cpu, planned, None if host is None else host.memory)
    parts = [p for i, k in enumerate(schedule.kernels) for p in _kernel_parts(k, memory, i)]
    calls = _place_parts(cpu, parts)
    carry = tuple(
        Call(COPY, (memory.buffer_at[c.src], memory.buffer_at[c.dst], 0, schedule.buffer(c.src).size))
        for c in schedule.carry
    )
    names = dict((*schedule.inputs, *schedule.outputs))
    buffers = {name: (memory.buffer_at[b], schedule.buffer(b).nbytes) for name, b in names.items()}
    compiled = CompiledCpu(cpu, buffers, calls + carry)
    compiled.memory = memory
    compiled.allocated = memory.slot_bytes  # the schedule's buffers, exactly as planned
    compiled.workspace = memory.reserved - memory.slot_bytes  # kernels' temporaries and 16-byte alignment
    compiled.index_checks = IndexChecks(schedule)
    return compiled


def _place_parts(cpu: CpuPath, parts: list[Part]) -> tuple[Call, ...]:
    """Write every part's words, ask the module for work ranges and scratch sizes, share one scratch."""
    base = cpu.reserve(sum(_aligned(4 * len(p.words)) for p in parts))
    at, end = [], base
    for part in parts:
        cpu.instance.write(end, struct.pack(f"<{len(part.words)}I", *part.words))
        at.append(end)
        end += _aligned(4 * len(part.words))
    items = [p.items if isinstance(p.items, int) else _ask(cpu, p.items, a) for p, a in zip(parts, at, strict=True)]
    scratch = cpu.reserve(
        max((_ask(cpu, p.scratch, a) for p, a in zip(parts, at, strict=True) if p.scratch), default=0)
    )
    return tuple(
        Call(p.export, (a, scratch if p.scratch else 0, 0, n)) for p, a, n in zip(parts, at, items, strict=True)
    )


def _ask(cpu: CpuPath, export: str, address: int) -> int:
    """A size the module computes from written words (a work range, scratch bytes)."""
    value = cpu.instance.call(export, address)
    if value is None:
        raise TypeError(f"{export} returned nothing")
    return int(value)


def _kernel_parts(kernel: Kernel, memory: _Memory, index: int) -> list[Part]:
    """The export calls of kernel `index`: a REDUCE's prologue tape (if any), the producer (if any), then
    the tape when there is an epilogue or a temporary to move (the order codegen.cpu.cpu_calls names)."""
    temp = memory.temp.get(index)
    if kernel.kind is Kind.ELEMENTWISE:
        return [_tape(kernel, Source(), memory)]
    if kernel.kind is Kind.CONCAT:
        assert isinstance(kernel.arg, d.AxisArg)
        copy = Expr((Load(0),), (DType.F32,))
        targets = views.concat_targets(kernel.out, [v.shape for v in kernel.inputs], kernel.arg.axis)
        parts = zip(kernel.inputs, targets, strict=True)
        return [_tape(Kernel(Kind.ELEMENTWISE, t, (v,), None, copy), Source(), memory) for v, t in parts]
    if kernel.kind is Kind.RANDOM:
        assert isinstance(kernel.arg, d.RandomArg)
        key, position = (memory.address(v) for v in kernel.inputs[:2])
        return [_tape(kernel, Source(draw=kernel.arg, key=key, position=position), memory)]
    acc = View.contiguous(temp, kernel.out.shape) if temp is not None else kernel.out
    if prologue_blocks(kernel)[0]:
        calls = _prologue_parts(kernel, memory, acc)
    else:
        calls = [PRODUCERS[kernel.kind](kernel, memory.address, acc)]
    if temp is not None or kernel.expr != ACC:
        calls.append(_tape(kernel, Source(view=acc), memory))
    return calls


def _prologue_parts(kernel: Kernel, memory: _Memory, acc: View) -> list[Part]:
    """A REDUCE with a prologue (lower.kernels.Reduction) in blocks of its leading output rows: a tape
    computes the block's prologue values (and writes its stores), then the reduction reduces them, from
    one temporary (codegen.cpu.prologue_blocks)."""
    assert isinstance(kernel.arg, Reduction) and kernel.arg.prologue is not None
    x = kernel.inputs[0]
    step = prologue_blocks(kernel)[1]
    total = x.shape[0] if kernel.out.shape else 1
    calls = []
    for first in range(0, total, step):
        n = min(step, total - first)

        def block(view: View, first: int = first, n: int = n) -> View:
            if not kernel.out.shape:
                return view
            starts = (first,) + (0,) * (len(view.shape) - 1)
            return views.slice_view(view, starts, (1,) * len(view.shape), (n, *view.shape[1:]))

        shape = (n, *x.shape[1:]) if kernel.out.shape else x.shape
        values = View.contiguous(memory.prologue_temp, shape)
        reads = tuple(block(v) for v in kernel.inputs[: kernel.arg.reads])
        stores = tuple((block(v), at) for v, at in kernel.prologue_stores)
        tape = Kernel(Kind.ELEMENTWISE, values, reads, None, kernel.arg.prologue, stores=stores)
        calls.append(_tape(tape, Source(), memory))
        part = Kernel(kernel.kind, block(kernel.out), (values,), kernel.arg)
        calls.append(PRODUCERS[kernel.kind](part, memory.address, block(acc)))
    return calls


def _tape(kernel: Kernel, acc: Source, memory: _Memory) -> Part:
    words = encode(kernel.expr, kernel.inputs, acc, kernel.out, memory.address, stores=kernel.epilogue_stores)
    return Part(TAPE, tuple(words), kernel.out.size, "sc_cpu_tape_scratch_bytes")


# -- producer descriptors ---------------------------------------------------------------------------------

Address = Callable[[View], int]
Producer = Callable[[Kernel, Address, View], Part]  # (kernel, addresses, where its result goes)


def _contiguous(kernel: Kernel, count: int) -> None:
    """The op's own inputs (the first `count`; epilogue loads follow them) must be contiguous."""
    for i, view in enumerate(kernel.inputs[:count]):
        if not view.is_contiguous:
            raise CpuScheduleError(f"{kernel.kind.value}: input {i} must be contiguous, got strides {view.strides}")


def _matrix(view: View) -> tuple[int, int]:
    """Row and column strides of a view's last two axes; a size-1 axis's stride is free, so it takes
    the value that selects the packing fast paths."""
    rows, cols = view.shape[-2:]
    rs, cs = view.strides[-2:]
    return (rs if rows != 1 else cols * (cs if cols != 1 else 1)), (cs if cols != 1 else 1)


def _matmul(kernel: Kernel, address: Address, acc: View) -> Part:
    a, b = kernel.inputs[:2]
    m, k = a.shape[-2:]
    n = b.shape[-1]
    batch, (sa, sb, sc) = merge_axes(acc.shape[:-2], [a.strides[:-2], b.strides[:-2], acc.strides[:-2]])
    words = [address(a), address(b), address(acc), m, n, k, *_matrix(a), *_matrix(b), *_matrix(acc), 0]
    words += [len(batch), *padded(batch), *padded(sa), *padded(sb), *padded(sc)]
    return Part(PRODUCER_EXPORTS[kernel.kind], tuple(words), "sc_cpu_matmul_items", "sc_cpu_matmul_scratch_bytes")


def _split(view: View, kept: int, address: Address, out_at: int, *, op: int, correction: int = 0) -> tuple[int, ...]:
    """The descriptor of wasm/cpu_reduce.c: outer axes (one result or row each) and inner axes."""
    outer, (so,) = merge_axes(view.shape[:kept], [view.strides[:kept]])
    inner, (si,) = merge_axes(view.shape[kept:], [view.strides[kept:]])
    return (
        address(view), out_at, op, correction,
        len(outer), *padded(outer), *padded(so), len(inner), *padded(inner), *padded(si),
        math.prod(view.shape[kept:]),
    )  # fmt: skip


def _reduce(kernel: Kernel, address: Address, acc: View) -> Part:
    assert isinstance(kernel.arg, Reduction)
    op, correction = REDUCE_CODES[kernel.arg.op], kernel.arg.correction
    words = _split(kernel.inputs[0], len(acc.shape), address, address(acc), op=op, correction=correction)
    return Part(PRODUCER_EXPORTS[kernel.kind], words, acc.size)


def _rows(kernel: Kernel, address: Address, acc: View) -> Part:
    x = kernel.inputs[0]
    words = _split(x, len(x.shape) - 1, address, address(acc), op=ROW_CODES[kernel.kind])
    return Part(PRODUCER_EXPORTS[kernel.kind], words, math.prod(x.shape[:-1]))


def _conv(kernel: Kernel, address: Address, acc: View) -> Part:
    _contiguous(kernel, 2)
    first, second = kernel.inputs[:2]
    if kernel.kind is Kind.CONV2D:
        assert isinstance(kernel.arg, d.ConvArg)
        arg, x_shape, w_shape, y_shape = kernel.arg, first.shape, second.shape, acc.shape
    else:
        assert isinstance(kernel.arg, d.ConvGradArg)
        arg = kernel.arg.conv
        if kernel.kind is Kind.CONV2D_GRAD_INPUT:  # (g, w) -> dx
            x_shape, w_shape, y_shape = kernel.arg.shape, second.shape, first.shape
        else:  # (x, g) -> dw
            x_shape, w_shape, y_shape = first.shape, kernel.arg.shape, second.shape
    n, c, h, w = x_shape
    o, _, kh, kw = w_shape
    words = (
        address(first), address(second), address(acc), n, c, h, w, o, kh, kw, *y_shape[2:],
        *arg.stride, *arg.padding, *arg.dilation, arg.groups,
    )  # fmt: skip
    items = arg.groups if kernel.kind is Kind.CONV2D_GRAD_WEIGHT else n * arg.groups
    return Part(PRODUCER_EXPORTS[kernel.kind], words, items, "sc_cpu_conv2d_scratch_bytes")


def _pool(kernel: Kernel, address: Address, acc: View) -> Part:
    grad = kernel.kind in (Kind.MAX_POOL2D_GRAD, Kind.AVG_POOL2D_GRAD)
    is_max = kernel.kind in (Kind.MAX_POOL2D, Kind.MAX_POOL2D_GRAD)
    _contiguous(kernel, 1 + (grad and is_max))
    if isinstance(kernel.arg, d.PoolGradArg):
        arg, x_shape, g = kernel.arg.pool, kernel.arg.shape, kernel.inputs[1 if is_max else 0]
    else:
        assert isinstance(kernel.arg, d.PoolArg)
        arg, x_shape, g = kernel.arg, kernel.inputs[0].shape, None
    y_shape = g.shape if g else acc.shape
    x_at = address(kernel.inputs[0]) if is_max or not grad else 0
    g_at = address(g) if g else 0
    words = (x_at, g_at, address(acc), int(is_max), *x_shape, *arg.kernel, *y_shape[2:], *arg.stride, *arg.padding)
    return Part(PRODUCER_EXPORTS[kernel.kind], words, x_shape[0] * x_shape[1])


def _gather(kernel: Kernel, address: Address, acc: View) -> Part:
    _contiguous(kernel, 2)
    table, indices = kernel.inputs[:2]
    words = (address(indices), address(table), address(acc), indices.size, math.prod(table.shape[1:]), table.shape[0])
    return Part(PRODUCER_EXPORTS[kernel.kind], words, indices.size)


def _scatter_add(kernel: Kernel, address: Address, acc: View) -> Part:
    _contiguous(kernel, 2)
    indices, g = kernel.inputs[:2]
    assert isinstance(kernel.arg, d.RowsArg)
    row = math.prod(g.shape[len(indices.shape) :])
    return Part(
        PRODUCER_EXPORTS[kernel.kind],
        (address(indices), address(g), address(acc), indices.size, row, kernel.arg.rows),
        row,
    )


def _check_index(kernel: Kernel, address: Address, acc: View) -> Part:
    """CHECK_INDEX (wasm/cpu_index.c): one work item over every index, into the record `acc`."""
    _contiguous(kernel, 1)
    indices = kernel.inputs[0]
    words = (address(indices), indices.size, kernel.arg.bound, address(acc))  # type: ignore[attr-defined]
    return Part(PRODUCER_EXPORTS[kernel.kind], words, 1)


def _per_example(kernel: Kernel, address: Address, acc: View) -> Part:
    """SHIFT2D and FLIP_LAST (wasm/cpu_augment.c): planes of [H, W], or of one row for FLIP_LAST."""
    _contiguous(kernel, 2)
    x, control = kernel.inputs[:2]
    h = x.shape[-2] if kernel.kind is Kind.SHIFT2D else 1
    planes = x.size // (h * x.shape[-1])
    words = (address(x), address(control), address(acc), planes // x.shape[0], h, x.shape[-1])
    return Part(PRODUCER_EXPORTS[kernel.kind], words, planes)


def _solve(kernel: Kernel, address: Address, acc: View) -> Part:
    """SOLVE (wasm/cpu_solve.c): one work item per matrix, reduced in place in its [n, n + k] output."""
    _contiguous(kernel, 2)
    a, b = kernel.inputs[:2]
    n, k = a.shape[-1], b.shape[-1]
    return Part(PRODUCER_EXPORTS[kernel.kind], (address(a), address(b), address(acc), n, k), a.size // (n * n))


def _sort(kernel: Kernel, address: Address, acc: View) -> Part:
    """SORT and SORT_GRAD (wasm/cpu_sort.c): strided [rows, R] inputs, one work item per row."""
    x = kernel.inputs[0]
    g = kernel.inputs[1] if kernel.kind is Kind.SORT_GRAD else x
    outer, (sx, sg) = merge_axes(x.shape[:-1], [x.strides[:-1], g.strides[:-1]])
    words = (
        address(x), address(g), address(acc), x.shape[-1], x.strides[-1], g.strides[-1],
        len(outer), *padded(outer), *padded(sx), *padded(sg),
    )  # fmt: skip
    return Part(PRODUCER_EXPORTS[kernel.kind], words, math.prod(x.shape[:-1]), "sc_cpu_sort_scratch_bytes")


def _nf4(kernel: Kernel, address: Address, acc: View) -> Part:
    """NF4_PACK, NF4_UNPACK, NF4_MATMUL (wasm/cpu_nf4.c): pairs of blocks, blocks, and W's rows (x W^T) or
    blocks of columns (x W)."""
    _contiguous(kernel, len(kernel.inputs))
    arg = kernel.arg
    assert isinstance(arg, d.Nf4Arg | d.Nf4MatmulArg)
    blocks = arg.rows * arg.cols // nf4.BLOCK
    export = PRODUCER_EXPORTS[kernel.kind]
    if kernel.kind is Kind.NF4_PACK:
        return Part(export, (address(kernel.inputs[0]), address(acc), arg.rows, arg.cols), (blocks + 1) // 2)
    if kernel.kind is Kind.NF4_UNPACK:
        return Part(export, (address(kernel.inputs[0]), address(acc), arg.rows, arg.cols), blocks)
    assert isinstance(arg, d.Nf4MatmulArg)
    x, packed = kernel.inputs[:2]
    count = x.size // x.shape[-1]
    words = (address(x), address(packed), address(acc), count, arg.rows, arg.cols, int(arg.transpose))
    return Part(export, words, arg.cols // nf4.BLOCK if arg.transpose else arg.rows)


PRODUCERS: dict[Kind, Producer] = {
    Kind.MATMUL: _matmul,
    Kind.REDUCE: _reduce,
    **dict.fromkeys((Kind.SOFTMAX, Kind.LOG_SOFTMAX, Kind.ARGMAX), _rows),
    **dict.fromkeys(CONVOLUTIONS, _conv),
    **dict.fromkeys((Kind.MAX_POOL2D, Kind.MAX_POOL2D_GRAD, Kind.AVG_POOL2D, Kind.AVG_POOL2D_GRAD), _pool),
    Kind.GATHER: _gather,
    Kind.SCATTER_ADD: _scatter_add,
    Kind.SHIFT2D: _per_example,
    Kind.FLIP_LAST: _per_example,
    Kind.SOLVE: _solve,
    Kind.SORT: _sort,
    Kind.SORT_GRAD: _sort,
    Kind.CHECK_INDEX: _check_index,
    **dict.fromkeys((Kind.NF4_PACK, Kind.NF4_UNPACK, Kind.NF4_MATMUL), _nf4),
}
