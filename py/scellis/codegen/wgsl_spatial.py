"""Stage: code. WGSL renderers for convolution and its two gradients, max and average pooling and their
gradients, gather, scatter-add, the index check and the per-example shift and flip of data augmentation.

Every gradient is a gather, never a scatter: each output element is computed by one invocation (for the
weight gradient, one workgroup with a fixed split over its lanes) that visits its contributions in a
fixed order, with no atomics, so results repeat bit for bit on one device. Inputs are contiguous (the
schedule guarantees it); the output is written through its view. Per-element bodies see the output
coordinates as c0, c1, ... and leave their result in `acc`, which the fused epilogue reads.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from scellis.codegen import wgsl_expr as w
from scellis.codegen.wgsl_dense import LANES, MAIN, WORKGROUP
from scellis.lower.kernels import ACC, Acc, Expr, Kernel, Kind, Schedule, Shape, View
from scellis.ops import DType
from scellis.ops import defs as d

Source = tuple[str, tuple[int, int, int]]
# The lowest finite float32: Tint rejects an infinite constant; every pool window holds a real tap.
NEG_INF = "bitcast<f32>(0xff7fffffu)"
# Inputs past these are the fused epilogue's Loads, read at the output coordinates.
MAIN_INPUTS = {Kind.CONV2D: 2, Kind.RANDOM: 2}


def _grid(groups: int) -> tuple[int, int, int]:
    return (min(groups, 65535), -(-groups // 65535), 1)


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


def _epilogue(kernel: Kernel, schedule: Schedule, b: w.Bindings, coords: list[str], acc: str) -> str:
    """Statements computing the kernel's expression of `acc` at the output coordinates and storing it."""
    expr = _value_expr(kernel, schedule)
    first = MAIN_INPUTS.get(kernel.kind, len(kernel.inputs))
    loads = [""] * first + [
        w.load_expr(view, b.array(view.buffer), schedule.buffer(view.buffer).dtype, coords)
        for view in kernel.inputs[first:]
    ]
    lines, value = w.expression(expr, loads, acc, coords)
    lines.append(f"out[{w.index_expr(kernel.out, coords)}] = {w.store(value, expr.dtype)};")
    return "\n".join(lines)


def _indent(text: str, depth: int) -> str:
    return "\n".join(" " * depth + line for line in text.splitlines())


def _header(kernel: Kernel, schedule: Schedule, b: w.Bindings, helpers: str) -> str:
    return b.declarations(schedule) + "\n" + w.helpers(_value_expr(kernel, schedule)) + helpers


def per_element(kernel: Kernel, schedule: Schedule, b: w.Bindings, body: str, helpers: str = "") -> Source:
    """One invocation per output element; `body` sets `acc` from the coordinates c0, c1, ..."""
    total = math.prod(kernel.out.shape)
    decode, coords = w.decode("i", kernel.out.shape)
    main = f"""{MAIN.format(size=WORKGROUP)}
  let i = gid.x + gid.y * groups.x * {WORKGROUP}u;
  if (i >= {total}u) {{ return; }}
{_indent(chr(10).join(decode), 2)}
{_indent(body, 2)}
{_indent(_epilogue(kernel, schedule, b, coords, "acc"), 2)}
}}"""
    return _header(kernel, schedule, b, helpers) + "\n" + main, _grid(-(-total // WORKGROUP))


@dataclass(frozen=True)
class Axis:
    """One spatial axis of a window: stride, padding, dilation, and the extent of the side indexed."""

    stride: int
    pad: int
    dilation: int
    size: int


def _tap(name: str, out: str, k: str, axis: Axis) -> str:
    """Input row (or column) `name` that output position `out` reads at kernel offset `k`; the loop
    moves on when it lies in the padding."""
    return (
        f"let {name} = i32({out} * {axis.stride}u + {k} * {axis.dilation}u) - {axis.pad}; "
        f"if ({name} < 0 || {name} >= {axis.size}) {{ continue; }}"
    )


def _window(name: str, at: str, k: str, axis: Axis) -> str:
    """Output row (or column) `name` whose window reads input position `at` at kernel offset `k`; the
    loop moves on when there is none (between strides or past an edge)."""
    t, s = f"t_{name}", axis.stride
    return (
        f"let {t} = i32({at}) + {axis.pad} - i32({k} * {axis.dilation}u); "
        f"if ({t} < 0 || {t} % {s} != 0 || {t} / {s} >= {axis.size}) {{ continue; }} "
        f"let {name} = u32({t} / {s});"
    )


def _axes(stride: tuple[int, int], pad: tuple[int, int], dilation: tuple[int, int], shape: Shape) -> tuple[Axis, Axis]:
    """The height and width axes of a window over an NCHW `shape`."""
    return Axis(stride[0], pad[0], dilation[0], shape[2]), Axis(stride[1], pad[1], dilation[1], shape[3])


# -- convolution ------------------------------------------------------------------------------------


def conv2d(kernel: Kernel, schedule: Schedule, b: w.Bindings) -> Source:
    """Direct convolution, one output element (n, o, oh, ow) per invocation: taps kh, kw, then the
    group's input channels."""
    arg = kernel.arg
    assert isinstance(arg, d.ConvArg)
    x, wt = kernel.inputs[:2]
    out_channels, cg, kh, kw = wt.shape
    ah, aw = _axes(arg.stride, arg.padding, arg.dilation, x.shape)
    x_at = input_at(kernel, b, 0, ["c0", "base + cc", "u32(ih)", "u32(iw)"])
    w_at = input_at(kernel, b, 1, ["c1", "cc", "kh", "kw"])
    body = f"""let base = c1 / {out_channels // arg.groups}u * {cg}u;
var acc = 0.0;
for (var kh = 0u; kh < {kh}u; kh = kh + 1u) {{
  {_tap("ih", "c2", "kh", ah)}
  for (var kw = 0u; kw < {kw}u; kw = kw + 1u) {{
    {_tap("iw", "c3", "kw", aw)}
    for (var cc = 0u; cc < {cg}u; cc = cc + 1u) {{
      acc = acc + {x_at} * {w_at};
    }}
  }}
}}"""
    return per_element(kernel, schedule, b, body)


def conv2d_grad_input(kernel: Kernel, schedule: Schedule, b: w.Bindings) -> Source:
    """dx[n, c, h, w]: over taps kh, kw, the output position that reads (h, w) there, then the group's
    output channels."""
    arg = kernel.arg
    assert isinstance(arg, d.ConvGradArg)
    conv = arg.conv
    g, wt = kernel.inputs
    out_channels, cg, kh, kw = wt.shape
    og = out_channels // conv.groups
    ah, aw = _axes(conv.stride, conv.padding, conv.dilation, g.shape)
    g_at = input_at(kernel, b, 0, ["c0", "base + oo", "oh", "ow"])
    w_at = input_at(kernel, b, 1, ["base + oo", "cc", "kh", "kw"])
    body = f"""let base = c1 / {cg}u * {og}u;
let cc = c1 % {cg}u;
var acc = 0.0;
for (var kh = 0u; kh < {kh}u; kh = kh + 1u) {{
  {_window("oh", "c2", "kh", ah)}
  for (var kw = 0u; kw < {kw}u; kw = kw + 1u) {{
    {_window("ow", "c3", "kw", aw)}
    for (var oo = 0u; oo < {og}u; oo = oo + 1u) {{
      acc = acc + {g_at} * {w_at};
    }}
  }}
}}"""
    return per_element(kernel, schedule, b, body)


def conv2d_grad_weight(kernel: Kernel, schedule: Schedule, b: w.Bindings) -> Source:
    """dw[o, cc, kh, kw]: a long sum over (n, oh, ow) for few outputs, so one workgroup per output; lane l
    sums the positions l, l + LANES, ... in order, then lane 0 adds the lanes' sums in order."""
    arg = kernel.arg
    assert isinstance(arg, d.ConvGradArg)
    conv = arg.conv
    x, g = kernel.inputs
    out_channels, cg = arg.shape[:2]
    n, _, oh, ow = g.shape
    ah, aw = _axes(conv.stride, conv.padding, conv.dilation, x.shape)
    outs = math.prod(kernel.out.shape)
    decode, coords = w.decode("o", kernel.out.shape)
    x_at = input_at(kernel, b, 0, ["n", "c", "u32(ih)", "u32(iw)"])
    g_at = input_at(kernel, b, 1, ["n", "c0", "oh", "ow"])
    main = f"""var<workgroup> part: array<f32, {LANES}>;
{MAIN.format(size=LANES)}
  let o = wid.x + wid.y * groups.x;
  if (o >= {outs}u) {{ return; }}
{_indent(chr(10).join(decode), 2)}
  let c = c0 / {out_channels // conv.groups}u * {cg}u + c1;
  var lane_sum = 0.0;
  for (var r = lid.x; r < {n * oh * ow}u; r = r + {LANES}u) {{
    let ow = r % {ow}u;
    let oh = r / {ow}u % {oh}u;
    let n = r / {ow * oh}u;
    {_tap("ih", "oh", "c2", ah)}
    {_tap("iw", "ow", "c3", aw)}
    lane_sum = lane_sum + {x_at} * {g_at};
  }}
  part[lid.x] = lane_sum;
  workgroupBarrier();
  if (lid.x == 0u) {{
    var acc = 0.0;
    for (var l = 0u; l < {LANES}u; l = l + 1u) {{ acc = acc + part[l]; }}
{_indent(_epilogue(kernel, schedule, b, coords, "acc"), 4)}
  }}
}}"""
    return _header(kernel, schedule, b, "") + "\n" + main, _grid(outs)


# -- pooling ----------------------------------------------------------------------------------------


def max_pool2d(kernel: Kernel, schedule: Schedule, b: w.Bindings) -> Source:
    """Maximum over the window's taps inside the input (padding is -inf, so it never wins)."""
    arg = kernel.arg
    assert isinstance(arg, d.PoolArg)
    return per_element(
        kernel, schedule, b, f"var acc = {NEG_INF};\n" + _pool_taps(kernel, b, arg, "acc = max(acc, {x});")
    )


def avg_pool2d(kernel: Kernel, schedule: Schedule, b: w.Bindings) -> Source:
    """Sum over the window's taps inside the input, divided by the whole window (padding counts as 0)."""
    arg = kernel.arg
    assert isinstance(arg, d.PoolArg)
    taps = _pool_taps(kernel, b, arg, "acc = acc + {x};")
    return per_element(kernel, schedule, b, f"var acc = 0.0;\n{taps}\nacc = acc / {float(math.prod(arg.kernel))!r};")


def _pool_taps(kernel: Kernel, b: w.Bindings, arg: d.PoolArg, step: str) -> str:
    """Loops over the taps of window (c2, c3) that lie inside the input, running `step` on each value."""
    kh, kw = arg.kernel
    ah, aw = _axes(arg.stride, arg.padding, (1, 1), kernel.inputs[0].shape)
    x_at = input_at(kernel, b, 0, ["c0", "c1", "u32(ih)", "u32(iw)"])
    return f"""for (var kh = 0u; kh < {kh}u; kh = kh + 1u) {{
  {_tap("ih", "c2", "kh", ah)}
  for (var kw = 0u; kw < {kw}u; kw = kw + 1u) {{
    {_tap("iw", "c3", "kw", aw)}
    {step.format(x=x_at)}
  }}
}}"""


def _pool_grad(kernel: Kernel, b: w.Bindings, arg: d.PoolGradArg, step: str) -> str:
    """Loops over the windows (oh, ow) that hold input element (c2, c3) at tap (kh, kw), in row-major
    tap order, running `step`."""
    kh, kw = arg.pool.kernel
    ah, aw = _axes(arg.pool.stride, arg.pool.padding, (1, 1), kernel.inputs[-1].shape)
    return f"""var acc = 0.0;
for (var kh = 0u; kh < {kh}u; kh = kh + 1u) {{
  {_window("oh", "c2", "kh", ah)}
  for (var kw = 0u; kw < {kw}u; kw = kw + 1u) {{
    {_window("ow", "c3", "kw", aw)}
{_indent(step, 4)}
  }}
}}"""


def max_pool2d_grad(kernel: Kernel, schedule: Schedule, b: w.Bindings) -> Source:
    """dx[n, c, h, w]: each window holding (h, w) gives its g when (h, w) is the window's first maximum
    in row-major tap order (the window is searched again with a strict >, so ties go to the first)."""
    arg = kernel.arg
    assert isinstance(arg, d.PoolGradArg)
    kh, kw = arg.pool.kernel
    ah, aw = _axes(arg.pool.stride, arg.pool.padding, (1, 1), kernel.inputs[0].shape)
    x_at = input_at(kernel, b, 0, ["c0", "c1", "u32(ih)", "u32(iw)"])
    step = f"""var best = {NEG_INF};
var win = {kh * kw}u;
for (var qh = 0u; qh < {kh}u; qh = qh + 1u) {{
  {_tap("ih", "oh", "qh", ah)}
  for (var qw = 0u; qw < {kw}u; qw = qw + 1u) {{
    {_tap("iw", "ow", "qw", aw)}
    let v = {x_at};
    if (v > best) {{ best = v; win = qh * {kw}u + qw; }}
  }}
}}
if (win == kh * {kw}u + kw) {{ acc = acc + {input_at(kernel, b, 1, ["c0", "c1", "oh", "ow"])}; }}"""
    return per_element(kernel, schedule, b, _pool_grad(kernel, b, arg, step))


def avg_pool2d_grad(kernel: Kernel, schedule: Schedule, b: w.Bindings) -> Source:
    """dx[n, c, h, w]: the sum of g over the windows holding (h, w), divided by the window size."""
    arg = kernel.arg
    assert isinstance(arg, d.PoolGradArg)
    step = f"acc = acc + {input_at(kernel, b, 0, ['c0', 'c1', 'oh', 'ow'])};"
    body = _pool_grad(kernel, b, arg, step) + f"\nacc = acc / {float(math.prod(arg.pool.kernel))!r};"
    return per_element(kernel, schedule, b, body)


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
    row = f"in{b.slot(indices.buffer)}[{w.index_expr(indices, coords[:lead])}]"
    # The row term is spelled out: a one-row table's row stride is 0, and index_expr would drop the
    # indices read with it (an unused binding is left out of the automatic layout).
    rest = w.index_expr(View(table.buffer, table.shape[1:], table.strides[1:], table.offset), coords[lead:])
    # An index outside the table reads its last row and gives 0 (never memory past the table); the
    # step's CHECK_INDEX kernel reports it.
    rows = table.shape[0]
    value = b.read(table.buffer, f"{rest} + min(r, {rows - 1}u) * {math.prod(table.shape[1:])}u")
    zero = "i32()" if schedule.buffer(table.buffer).dtype is DType.I32 else "f32()"
    body = f"let r = bitcast<u32>({row});\nlet acc = select({zero}, {value}, r < {rows}u);"
    return per_element(kernel, schedule, b, body)


def check_index(kernel: Kernel, schedule: Schedule, b: w.Bindings) -> Source:
    """One workgroup: lane l counts the indices l, l + 256, ... outside [0, bound) (an i32 read as u32: a
    negative one is outside too) and keeps the first; a tree of fixed shape sums the counts and takes the
    least position; lane 0 writes the record unless it holds one already (lower.kernels.Kind)."""
    indices, record = kernel.inputs[0], kernel.out.offset
    bound: int = kernel.arg.bound  # type: ignore[attr-defined]
    at = f"in{b.slot(indices.buffer)}"
    body = f"""var<workgroup> counts: array<u32, {WORKGROUP}>;
var<workgroup> firsts: array<u32, {WORKGROUP}>;
{MAIN.format(size=WORKGROUP)}
  var bad = 0u;
  var lowest = 0xffffffffu;
  for (var i = lid.x; i < {indices.size}u; i = i + {WORKGROUP}u) {{
    if (bitcast<u32>({at}[{indices.offset}u + i]) >= {bound}u) {{
      bad = bad + 1u;
      lowest = min(lowest, i);
    }}
  }}
  counts[lid.x] = bad;
  firsts[lid.x] = lowest;
  workgroupBarrier();
  for (var span = {WORKGROUP // 2}u; span > 0u; span = span / 2u) {{
    if (lid.x < span) {{
      counts[lid.x] = counts[lid.x] + counts[lid.x + span];
      firsts[lid.x] = min(firsts[lid.x], firsts[lid.x + span]);
    }}
    workgroupBarrier();
  }}
  if (lid.x == 0u && counts[0] > 0u && out[{record}u] == 0u) {{
    out[{record}u] = counts[0];
    out[{record + 1}u] = firsts[0];
    out[{record + 2}u] = bitcast<u32>({at}[{indices.offset}u + firsts[0]]);
  }}
}}"""
    return b.declarations(schedule) + "\n" + body, (1, 1, 1)


def scatter_add(kernel: Kernel, schedule: Schedule, b: w.Bindings) -> Source:
    """out[r, k...]: the sum of g[j, k...] over every j with indices[j] == r, in index order."""
    indices, g = kernel.inputs
    count = indices.size
    flat_indices = _rows(indices, len(indices.shape))
    flat_g = _rows(g, len(indices.shape))
    rest = [f"c{a}" for a in range(1, len(kernel.out.shape))]
    index = f"in{b.slot(indices.buffer)}[{w.index_expr(flat_indices, ['j'])}]"
    value = b.read(g.buffer, w.index_expr(flat_g, ["j", *rest]))
    body = f"""var acc = 0.0;
for (var j = 0u; j < {count}u; j = j + 1u) {{
  if ({index} == i32(c0)) {{ acc = acc + {value}; }}
}}"""
    return per_element(kernel, schedule, b, body)


def shift2d(kernel: Kernel, schedule: Schedule, b: w.Bindings) -> Source:
    """out[n, ..., i, j] = x[n, ..., i + sy, j + sx], 0 outside. In u32 arithmetic a position before the
    start wraps past the end, so one comparison per axis tests both edges."""
    x = kernel.inputs[0]
    *lead, row, col = (f"c{a}" for a in range(len(x.shape)))
    value = input_at(kernel, b, 0, [*lead, "si", "sj"])
    body = f"""let si = {row} + bitcast<u32>({input_at(kernel, b, 1, ["c0", "0u"])});
let sj = {col} + bitcast<u32>({input_at(kernel, b, 1, ["c0", "1u"])});
var acc = 0.0;
if (si < {x.shape[-2]}u && sj < {x.shape[-1]}u) {{ acc = {value}; }}"""
    return per_element(kernel, schedule, b, body)


def concat(kernel: Kernel, schedule: Schedule, b: w.Bindings) -> Source:
    """out = the inputs one after another along the axis: each element read from the one input that holds
    it (a branch, so no input is read outside its own view)."""
    axis: int = kernel.arg.axis  # type: ignore[attr-defined]
    coords = [f"c{a}" for a in range(len(kernel.out.shape))]
    lines, start = ["var acc = 0.0;"], 0
    for i, view in enumerate(kernel.inputs):
        end = start + view.shape[axis]
        at = [*coords[:axis], f"{coords[axis]} - {start}u" if start else coords[axis], *coords[axis + 1 :]]
        test = f"if ({coords[axis]} < {end}u) " if i < len(kernel.inputs) - 1 else ""
        lines.append(f"{'} else ' if i else ''}{test}{{ acc = {input_at(kernel, b, i, at)};")
        start = end
    return per_element(kernel, schedule, b, "\n".join(lines) + " }")


def flip_last(kernel: Kernel, schedule: Schedule, b: w.Bindings) -> Source:
    """out[n, ..., j] = x[n, ..., W - 1 - j] where flip[n], else x[n, ..., j]."""
    x = kernel.inputs[0]
    *lead, col = (f"c{a}" for a in range(len(x.shape)))
    flip = input_at(kernel, b, 1, ["c0"])
    body = f"""let j = select({col}, {x.shape[-1] - 1}u - {col}, {flip} != 0u);
let acc = {input_at(kernel, b, 0, [*lead, "j"])};"""
    return per_element(kernel, schedule, b, body)
