"""Stage: code (the CPU path). Which exports of the CPU path's module (`scellis_cpu.wasm`, wasm/) run each
kernel: the one table the CPU path's compiler (runtime.cpu.device) and the Guide both read.

A producer kind calls its export, which writes the accumulator; a fused epilogue then runs as a tape
(`sc_cpu_tape`) over that result in place, and so does the move out of a temporary when a kind that writes
only contiguous results has a strided output. ELEMENTWISE and RANDOM kernels are one tape each; CONCAT is
a copying tape for each part. A REDUCE with a prologue runs it as a tape into a temporary (writing its
stores), then reduces that, a block of leading output rows at a time (`prologue_blocks`).
"""

from __future__ import annotations

import math

from scellis.lower.kernels import ACC, Kernel, Kind, Reduction

TAPE = "sc_cpu_tape"
COPY = "sc_cpu_copy"  # the schedule's carry copies
TAPED = {Kind.ELEMENTWISE, Kind.RANDOM}  # one tape: the draw runs inside it
TAPE_A_PART = {Kind.CONCAT}  # one copying tape for each input, into its place in the output
PRODUCER_EXPORTS = {
    Kind.MATMUL: "sc_cpu_matmul",
    Kind.REDUCE: "sc_cpu_reduce",
    Kind.SOFTMAX: "sc_cpu_rows",
    Kind.LOG_SOFTMAX: "sc_cpu_rows",
    Kind.ARGMAX: "sc_cpu_rows",
    Kind.CONV2D: "sc_cpu_conv2d",
    Kind.CONV2D_GRAD_INPUT: "sc_cpu_conv2d_grad_input",
    Kind.CONV2D_GRAD_WEIGHT: "sc_cpu_conv2d_grad_weight",
    Kind.MAX_POOL2D: "sc_cpu_pool2d",
    Kind.AVG_POOL2D: "sc_cpu_pool2d",
    Kind.MAX_POOL2D_GRAD: "sc_cpu_pool2d_grad",
    Kind.AVG_POOL2D_GRAD: "sc_cpu_pool2d_grad",
    Kind.GATHER: "sc_cpu_gather",
    Kind.SCATTER_ADD: "sc_cpu_scatter_add",
    Kind.SHIFT2D: "sc_cpu_shift2d",
    Kind.FLIP_LAST: "sc_cpu_flip_last",
    Kind.SOLVE: "sc_cpu_solve",
    Kind.SORT: "sc_cpu_sort",
    Kind.SORT_GRAD: "sc_cpu_sort_grad",
    Kind.CHECK_INDEX: "sc_cpu_check_index",
    Kind.NF4_PACK: "sc_cpu_nf4_pack",
    Kind.NF4_UNPACK: "sc_cpu_nf4_unpack",
    Kind.NF4_MATMUL: "sc_cpu_nf4_matmul",
}
# Kinds whose export can write a strided output; the others write contiguous results.
STRIDED_OUTPUT = {Kind.ELEMENTWISE, Kind.RANDOM, Kind.MATMUL, Kind.CONCAT}


def needs_temp(kernel: Kernel) -> bool:
    """Whether the producer writes into a temporary that a tape then moves to the kernel's output: a kind
    that writes only contiguous results with a strided output, or an epilogue that reads the output's own
    buffer (a parameter updated in place by its gradient's kernel), which the result must not overwrite
    before the tape reads it."""
    if kernel.kind in TAPED or kernel.kind in TAPE_A_PART or kernel.kind is Kind.SERIES:
        return False  # (a series' parts are asked one by one)
    strided = kernel.kind not in STRIDED_OUTPUT and not kernel.out.is_contiguous
    return strided or (kernel.expr != ACC and any(v.buffer == kernel.out.buffer for v in kernel.inputs))


def cpu_calls(kernel: Kernel) -> tuple[str, ...]:
    """The exports the CPU path calls for `kernel`, in order (a series': its parts', one after another)."""
    if kernel.kind is Kind.SERIES:
        return tuple(call for part in kernel.parts for call in cpu_calls(part))
    if kernel.kind in TAPED:
        return (TAPE,)
    if kernel.kind in TAPE_A_PART:
        return (TAPE,) * len(kernel.inputs)
    producer = PRODUCER_EXPORTS[kernel.kind]
    blocks = prologue_blocks(kernel)[0]
    calls = (TAPE, producer) * blocks if blocks else (producer,)
    if needs_temp(kernel) or kernel.expr != ACC:
        return (*calls, TAPE)
    return calls


PROLOGUE_ELEMENTS = 8192  # a reduction's prologue values computed at once (for whole rows of outputs)


def prologue_blocks(kernel: Kernel) -> tuple[int, int, int]:
    """For a REDUCE with a prologue: how many blocks of its leading output rows the CPU path computes it
    in, the rows of each block, and the elements of the temporary that takes (the whole input when the
    output is a scalar); (0, 0, 0) for any other kernel."""
    if kernel.kind is not Kind.REDUCE or not isinstance(kernel.arg, Reduction) or kernel.arg.prologue is None:
        return 0, 0, 0
    shape = kernel.inputs[0].shape
    if not kernel.out.shape:
        return 1, 1, math.prod(shape)
    per_row = math.prod(shape[1:])
    rows = min(shape[0], max(1, PROLOGUE_ELEMENTS // per_row))
    return -(-shape[0] // rows), rows, rows * per_row
