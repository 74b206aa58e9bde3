"""Stage: code. WGSL for convolution and its two gradients, max and average pooling and their gradients,
gather, scatter-add, the index check and the per-example shift and flip of data augmentation: their
templates (wgsl/conv2d.wgsl, pool2d.wgsl, ...) filled in with the schedule's sizes, strides and views.

Every gradient is a gather, never a scatter: each output element is computed by one invocation (for the
weight gradient, one workgroup with a fixed split over its lanes) that visits its contributions in a
fixed order, with no atomics, so results repeat bit for bit on one device. Inputs are contiguous (the
schedule guarantees it); the output is written through its view. Per-element kernels are fragments in
wgsl/elementwise.wgsl's frame: they see the output coordinates as c0, c1, ... and leave their result in
`acc`, which the fused epilogue reads.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from scellis.codegen import wgsl_expr as w
from scellis.codegen.wgsl_dense import WORKGROUP
from scellis.codegen.wgsl_template import Value, fragment, template
from scellis.lower.kernels import ACC, Acc, Expr, Kernel, Kind, Schedule, Shape, View
from scellis.ops import DType
from scellis.ops import defs as d

Source = tuple[str, tuple[int, int, int]]
# The lowest finite float32: Tint rejects an infinite constant; every pool window holds a real tap.
NEG_INF = "bitcast<f32>(0xff7fffffu)"
# Inputs past these are the fused epilogue's Loads, read at the output coordinates.
MAIN_INPUTS = {Kind.CONV2D: 2, Kind.RANDOM: 2}


def input_at(kernel: Kernel, b: w.Bindings, i: int, coords: list[str]) -> str:
    """WGSL reading kernel input `i` at the given coordinates (one per axis of its view); index_expr
    multiplies each by its stride, so compound ones are parenthesised."""
    view = kernel.inputs[i]
    wrapped = [c if c.isidentifier() else f"({c})" for c in coords]
    return b.read(view.buffer, w.index_expr(view, wrapped))


def _value_expr(kernel: Kernel, schedule: Schedule) -> Expr:
    """The kernel's expression. The default ACC is typed f32; when nothing is fused onto a producer of
    another dtype (a bernoulli draw is a bool), the output buffer's dtype is the value's."""
    if kernel.expr == ACC:
        return Expr((Acc(),), (schedule.buffer(kernel.out.buffer).dtype,))
    return kernel.expr


def _epilogue(kernel: Kernel, schedule: Schedule, b: w.Bindings, coords: list[str], acc: str) -> list[str]:
    """Statements computing the kernel's expression of `acc` at the output coordinates and storing it."""
    expr = _value_expr(kernel, schedule)
    first = MAIN_INPUTS.get(kernel.kind, len(kernel.inputs))
    loads = [""] * first + [
        w.load_expr(view, b.array(view.buffer), schedule.buffer(view.buffer).dtype, coords)
        for view in kernel.inputs[first:]
    ]
    lines, value = w.expression(expr, loads, acc, coords)
    return [*lines, f"out[{w.index_expr(kernel.out, coords)}] = {w.store(value, expr.dtype)};"]


def _header(kernel: Kernel, schedule: Schedule, b: w.Bindings, helpers: str) -> str:
    return b.declarations(schedule) + "\n" + w.helpers(_value_expr(kernel, schedule)) + helpers


def per_element(
    kernel: Kernel, schedule: Schedule, b: w.Bindings, name: str, helpers: str = "", /, **values: Value
) -> Source:
    """A kernel of one invocation per output element (wgsl/elementwise.wgsl) whose BODY is the fragment
    `name`, its placeholders filled from `values`; `helpers` go before it."""
    total = math.prod(kernel.out.shape)
    decode, coords = w.decode("i", kernel.out.shape)
    epilogue = _epilogue(kernel, schedule, b, coords, "acc")
    body = fragment(name, **values)
    source = template("elementwise").fill(TOTAL=f"{total}u", DECODE=w.or_blank(decode), BODY=body, EPILOGUE=epilogue)
    return _header(kernel, schedule, b, helpers) + "\n" + source, w.grid(-(-total // WORKGROUP))


@dataclass(frozen=True)
class Axis:
    """One spatial axis of a window: stride, padding, dilation, and the extent of the side indexed."""

    stride: int
    pad: int
    dilation: int
    size: int


def _axes(stride: tuple[int, int], pad: tuple[int, int], dilation: tuple[int, int], shape: Shape) -> tuple[Axis, Axis]:
    """The height and width axes of a window over an NCHW `shape`."""
    return Axis(stride[0], pad[0], dilation[0], shape[2]), Axis(stride[1], pad[1], dilation[1], shape[3])


def _taps(height: Axis, width: Axis, stride: str = "STRIDE") -> dict[str, Value]:
    """The placeholders of a loop over the taps of a window, which reads input row `ih` (column `iw`) of
    IN_H (IN_W) rows and moves on when it lies in the padding."""
    return {
        f"{stride}_H": f"{height.stride}u",
        f"{stride}_W": f"{width.stride}u",
        "PAD_H": f"{height.pad}",
        "PAD_W": f"{width.pad}",
        "IN_H": f"{height.size}",
        "IN_W": f"{width.size}",
    }


def _windows(height: Axis, width: Axis) -> dict[str, Value]:
    """The placeholders of a loop over the windows that read an input position: output row `oh` (column
    `ow`) of OUT_H (OUT_W), moving on when there is none (between strides or past an edge)."""
    return {
        "STRIDE_H": f"{height.stride}",
        "STRIDE_W": f"{width.stride}",
        "PAD_H": f"{height.pad}",
        "PAD_W": f"{width.pad}",
        "OUT_H": f"{height.size}",
        "OUT_W": f"{width.size}",
    }


def _dilations(height: Axis, width: Axis) -> dict[str, Value]:
    return {"DILATION_H": f"{height.dilation}u", "DILATION_W": f"{width.dilation}u"}


# -- convolution ------------------------------------------------------------------------------------


def _conv(
    conv: d.ConvArg, weight: View, shape: Shape, loops: Callable[[Axis, Axis], dict[str, Value]]
) -> dict[str, Value]:
    """The placeholders that a convolution and its input gradient share: channels a group, the kernel's
    size and dilations, and `loops` (_taps or _windows) over the height and width of the NCHW `shape`."""
    out_channels, cg, kh, kw = weight.shape
    ah, aw = _axes(conv.stride, conv.padding, conv.dilation, shape)
    return {
        **loops(ah, aw),
        **_dilations(ah, aw),
        "OUT_PER_GROUP": f"{out_channels // conv.groups}u",
        "IN_PER_GROUP": f"{cg}u",
        "KH": f"{kh}u",
        "KW": f"{kw}u",
    }


def conv2d(kernel: Kernel, schedule: Schedule, b: w.Bindings) -> Source:
    """Direct convolution, one output element (n, o, oh, ow) per invocation: taps kh, kw, then the
    group's input channels."""
    assert isinstance(kernel.arg, d.ConvArg)
    x, wt = kernel.inputs[:2]
    x_at = input_at(kernel, b, 0, ["c0", "base + cc", "u32(ih)", "u32(iw)"])
    w_at = input_at(kernel, b, 1, ["c1", "cc", "kh", "kw"])
    return per_element(kernel, schedule, b, "conv2d", **_conv(kernel.arg, wt, x.shape, _taps), X_AT=x_at, W_AT=w_at)


def conv2d_grad_input(kernel: Kernel, schedule: Schedule, b: w.Bindings) -> Source:
    """dx[n, c, h, w]: over taps kh, kw, the output position that reads (h, w) there, then the group's
    output channels."""
    assert isinstance(kernel.arg, d.ConvGradArg)
    g, wt = kernel.inputs
    values = _conv(kernel.arg.conv, wt, g.shape, _windows)
    g_at = input_at(kernel, b, 0, ["c0", "base + oo", "oh", "ow"])
    w_at = input_at(kernel, b, 1, ["base + oo", "cc", "kh", "kw"])
    return per_element(kernel, schedule, b, "conv2d_grad_input", **values, G_AT=g_at, W_AT=w_at)


def conv2d_grad_weight(kernel: Kernel, schedule: Schedule, b: w.Bindings) -> Source:
    """dw[o, cc, kh, kw]: a long sum over (n, oh, ow) for few outputs, so one workgroup per output; lane l
    sums the positions l, l + 64, ... in order, then lane 0 adds the lanes' sums in order."""
    arg = kernel.arg
    assert isinstance(arg, d.ConvGradArg)
    conv = arg.conv
    x, g = kernel.inputs
    out_channels, cg = arg.shape[:2]
    n, _, oh, ow = g.shape
    ah, aw = _axes(conv.stride, conv.padding, conv.dilation, x.shape)
    outs = math.prod(kernel.out.shape)
    decode, coords = w.decode("o", kernel.out.shape)
    source = template("conv2d_grad_weight").fill(
        **_taps(ah, aw),
        **_dilations(ah, aw),
        OUTS=f"{outs}u",
        DECODE=w.or_blank(decode),
        OUT_PER_GROUP=f"{out_channels // conv.groups}u",
        IN_PER_GROUP=f"{cg}u",
        POSITIONS=f"{n * oh * ow}u",
        OUT_H=f"{oh}u",
        OUT_W=f"{ow}u",
        OUT_HW=f"{ow * oh}u",
        X_AT=input_at(kernel, b, 0, ["n", "c", "u32(ih)", "u32(iw)"]),
        G_AT=input_at(kernel, b, 1, ["n", "c0", "oh", "ow"]),
        EPILOGUE=_epilogue(kernel, schedule, b, coords, "acc"),
    )
    return _header(kernel, schedule, b, "") + "\n" + source, w.grid(outs)


# -- pooling ----------------------------------------------------------------------------------------


def _pool(kernel: Kernel, arg: d.PoolArg, b: w.Bindings, step: str) -> dict[str, Value]:
    """wgsl/pool2d.wgsl's loop over the taps of a pool's window, and its STEP: `step` of the value x
    there (x is the kernel's input 0)."""
    ah, aw = _axes(arg.stride, arg.padding, (1, 1), kernel.inputs[0].shape)
    kh, kw = arg.kernel
    x_at = input_at(kernel, b, 0, ["c0", "c1", "u32(ih)", "u32(iw)"])
    return {**_taps(ah, aw), "KH": f"{kh}u", "KW": f"{kw}u", "STEP": step.format(x=x_at)}


def max_pool2d(kernel: Kernel, schedule: Schedule, b: w.Bindings) -> Source:
    """Maximum over the window's taps inside the input (padding is -inf, so it never wins)."""
    assert isinstance(kernel.arg, d.PoolArg)
    taps = _pool(kernel, kernel.arg, b, "max(acc, {x})")
    return per_element(kernel, schedule, b, "pool2d", **taps, START=NEG_INF, SCALE=[])


def avg_pool2d(kernel: Kernel, schedule: Schedule, b: w.Bindings) -> Source:
    """Sum over the window's taps inside the input, divided by the whole window (padding counts as 0)."""
    arg = kernel.arg
    assert isinstance(arg, d.PoolArg)
    scale = [f"acc = acc / {float(math.prod(arg.kernel))!r};"]
    return per_element(kernel, schedule, b, "pool2d", **_pool(kernel, arg, b, "acc + {x}"), START="0.0", SCALE=scale)


def _pool_grad(kernel: Kernel, arg: d.PoolGradArg) -> dict[str, Value]:
    """wgsl/pool2d_grad.wgsl's loops over the windows (oh, ow) that hold input element (c2, c3) at tap
    (kh, kw), in row-major tap order (g is the kernel's last input)."""
    ah, aw = _axes(arg.pool.stride, arg.pool.padding, (1, 1), kernel.inputs[-1].shape)
    kh, kw = arg.pool.kernel
    return {**_windows(ah, aw), "KH": f"{kh}u", "KW": f"{kw}u"}


def max_pool2d_grad(kernel: Kernel, schedule: Schedule, b: w.Bindings) -> Source:
    """dx[n, c, h, w]: each window holding (h, w) gives its g when (h, w) is the window's first maximum
    in row-major tap order (the window is searched again with a strict >, so ties go to the first)."""
    arg = kernel.arg
    assert isinstance(arg, d.PoolGradArg)
    windows = _pool_grad(kernel, arg)
    ah, aw = _axes(arg.pool.stride, arg.pool.padding, (1, 1), kernel.inputs[0].shape)
    step = fragment(
        "max_pool2d_grad",
        **_taps(ah, aw, "TAP_STRIDE"),
        KH=windows["KH"],
        KW=windows["KW"],
        WINDOW=f"{math.prod(arg.pool.kernel)}u",
        X_AT=input_at(kernel, b, 0, ["c0", "c1", "u32(ih)", "u32(iw)"]),
        G_AT=input_at(kernel, b, 1, ["c0", "c1", "oh", "ow"]),
    )
    return per_element(kernel, schedule, b, "pool2d_grad", **windows, STEP=step, SCALE=[])


def avg_pool2d_grad(kernel: Kernel, schedule: Schedule, b: w.Bindings) -> Source:
    """dx[n, c, h, w]: the sum of g over the windows holding (h, w), divided by the window size."""
    arg = kernel.arg
    assert isinstance(arg, d.PoolGradArg)
    step = [f"acc = acc + {input_at(kernel, b, 0, ['c0', 'c1', 'oh', 'ow'])};"]
    scale = [f"acc = acc / {float(math.prod(arg.pool.kernel))!r};"]
    return per_element(kernel, schedule, b, "pool2d_grad", **_pool_grad(kernel, arg), STEP=step, SCALE=scale)


# -- indexing ---------------------------------------------------------------------------------------


def _rows(view: View, lead: int) -> View:
    """A contiguous view as [rows, rest...]: its first `lead` axes flattened into one."""
    assert view.is_contiguous, "the schedule makes the inputs of indexing kernels contiguous"
    return View.contiguous(view.buffer, (math.prod(view.shape[:lead]), *view.shape[lead:]), view.offset)


def gather(kernel: Kernel, schedule: Schedule, b: w.Bindings) -> Source:
    """out[j..., r...] = table[indices[j...], r...]."""
    table, indices = kernel.inputs
    lead = len(indices.shape)
    coords = [f"c{a}" for a in range(len(kernel.out.shape))]
    # The row term is spelled out: a one-row table's row stride is 0, and index_expr would drop the
    # indices read with it (an unused binding is left out of the automatic layout).
    rest = w.index_expr(View(table.buffer, table.shape[1:], table.strides[1:], table.offset), coords[lead:])
    rows = table.shape[0]
    return per_element(
        kernel,
        schedule,
        b,
        "gather",
        T="i32" if schedule.buffer(table.buffer).dtype is DType.I32 else "f32",
        INDEX=f"in{b.slot(indices.buffer)}[{w.index_expr(indices, coords[:lead])}]",
        ROWS=f"{rows}u",
        ROW_AT=b.read(table.buffer, f"{rest} + min(r, {rows - 1}u) * {math.prod(table.shape[1:])}u"),
    )


def check_index(kernel: Kernel, schedule: Schedule, b: w.Bindings) -> Source:
    """One workgroup counts the indices outside [0, bound) and records the first (wgsl/check_index.wgsl);
    one invocation, for the variant "serial" (wgsl/check_index_serial.wgsl)."""
    indices, record = kernel.inputs[0], kernel.out.offset
    bound: int = kernel.arg.bound  # type: ignore[attr-defined]
    values = {
        "INDICES": b.array(indices.buffer),
        "COUNT": f"{indices.size}u",
        "OFFSET": f"{indices.offset}u",
        "BOUND": f"{bound}u",
        "RECORD_COUNT": f"{record}u",
        "RECORD_FIRST": f"{record + 1}u",
        "RECORD_VALUE": f"{record + 2}u",
    }
    if kernel.variant == "serial":
        source = template("check_index_serial").fill(**values, OUT=b.array(kernel.out.buffer))
    else:
        source = template("check_index").fill(**values)
    return b.declarations(schedule) + "\n" + source, (1, 1, 1)


def scatter_add(kernel: Kernel, schedule: Schedule, b: w.Bindings) -> Source:
    """out[r, k...]: the sum of g[j, k...] over every j with indices[j] == r, in index order."""
    indices, g = kernel.inputs
    flat_indices = _rows(indices, len(indices.shape))
    flat_g = _rows(g, len(indices.shape))
    rest = [f"c{a}" for a in range(1, len(kernel.out.shape))]
    return per_element(
        kernel,
        schedule,
        b,
        "scatter_add",
        COUNT=f"{indices.size}u",
        INDEX_AT=f"in{b.slot(indices.buffer)}[{w.index_expr(flat_indices, ['j'])}]",
        G_AT=b.read(g.buffer, w.index_expr(flat_g, ["j", *rest])),
    )


def shift2d(kernel: Kernel, schedule: Schedule, b: w.Bindings) -> Source:
    """out[n, ..., i, j] = x[n, ..., i + sy, j + sx], 0 outside."""
    x = kernel.inputs[0]
    *lead, row, col = (f"c{a}" for a in range(len(x.shape)))
    return per_element(
        kernel,
        schedule,
        b,
        "shift2d",
        ROW=row,
        COL=col,
        SHIFT_Y=input_at(kernel, b, 1, ["c0", "0u"]),
        SHIFT_X=input_at(kernel, b, 1, ["c0", "1u"]),
        HEIGHT=f"{x.shape[-2]}u",
        WIDTH=f"{x.shape[-1]}u",
        X_AT=input_at(kernel, b, 0, [*lead, "si", "sj"]),
    )


def concat(kernel: Kernel, schedule: Schedule, b: w.Bindings) -> Source:
    """out = the inputs one after another along the axis: each element read from the one input that holds
    it (a branch, so no input is read outside its own view)."""
    axis: int = kernel.arg.axis  # type: ignore[attr-defined]
    coords = [f"c{a}" for a in range(len(kernel.out.shape))]
    lines, start = [], 0
    for i, view in enumerate(kernel.inputs):
        end = start + view.shape[axis]
        at = [*coords[:axis], f"{coords[axis]} - {start}u" if start else coords[axis], *coords[axis + 1 :]]
        test = f"if ({coords[axis]} < {end}u) " if i < len(kernel.inputs) - 1 else ""
        lines.append(f"{'} else ' if i else ''}{test}{{ acc = {input_at(kernel, b, i, at)};")
        start = end
    lines[-1] += " }"
    return per_element(kernel, schedule, b, "concat", PICK=lines)


def flip_last(kernel: Kernel, schedule: Schedule, b: w.Bindings) -> Source:
    """out[n, ..., j] = x[n, ..., W - 1 - j] where flip[n], else x[n, ..., j]."""
    x = kernel.inputs[0]
    *lead, col = (f"c{a}" for a in range(len(x.shape)))
    return per_element(
        kernel,
        schedule,
        b,
        "flip_last",
        COL=col,
        LAST=f"{x.shape[-1] - 1}u",
        FLIP=input_at(kernel, b, 1, ["c0"]),
        X_AT=input_at(kernel, b, 0, [*lead, "j"]),
    )
