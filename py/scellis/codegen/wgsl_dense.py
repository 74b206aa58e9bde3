"""Stage: code. WGSL for elementwise, matmul, reduction and row-wise kernels (softmax, log-softmax,
argmax): their templates and fragments (wgsl/elementwise.wgsl, matmul_*.wgsl, reduce*.wgsl, rows*.wgsl,
lane_tree*.wgsl) filled in with what the schedule fixes, and the unrolled stores of the matmul tiles.
Reductions use one workgroup per output (one invocation per output for few elements, the variant "serial")
and a fixed order (see wgsl/reduce.wgsl, reduce_serial.wgsl), so results repeat bit for bit on one device."""

from __future__ import annotations

import math
from collections.abc import Callable

from scellis.codegen import wgsl_expr as w
from scellis.codegen import wgsl_matmul
from scellis.codegen.wgsl_template import Value, fragment, template
from scellis.lower.kernels import Expr, Kernel, Kind, Reduction, Schedule, View
from scellis.ops import Op

Source = tuple[str, tuple[int, int, int]]
WORKGROUP = 256  # the invocations of a workgroup of the kernels that take one element each
TILE = 64  # wgsl/matmul_tile64.wgsl: 16 x 16 threads, each of R x R outputs
R = 4
LARGE = 128  # wgsl/matmul_tile128*.wgsl: 16 x 16 threads, each of 8 x 8 outputs (16 vec4 sums)
SLICE = 16  # the depth of a K slice in the 128 tiles (float16 tiles hold twice as many)


def _loads(kernel: Kernel, schedule: Schedule, b: w.Bindings, coords: list[str], first: int = 0) -> list[str]:
    """WGSL for each Load(i): inputs from `first` on are read at the output coordinates."""
    out = [""] * len(kernel.inputs)
    for i, view in enumerate(kernel.inputs[first:], start=first):
        out[i] = w.load_expr(view, b.array(view.buffer), schedule.buffer(view.buffer).dtype, coords)
    return out


def _epilogue(
    kernel: Kernel, schedule: Schedule, b: w.Bindings, coords: list[str], *, acc: str | None, first: int
) -> list[str]:
    """Statements that compute the kernel's expression at `coords` and store it (and its epilogue stores'
    steps; a REDUCE's prologue stores are written where the prologue runs)."""
    lines, value = w.expression(kernel.expr, _loads(kernel, schedule, b, coords, first), acc, coords)
    index = w.index_expr(kernel.out, coords)
    more = _stored(kernel.epilogue_stores, kernel.expr, b, coords)
    return [*lines, *more, f"{b.array(kernel.out.buffer)}[{index}] = {w.store(value, kernel.expr.dtype)};"]


def _stored(stores: tuple[tuple[View, int], ...], expr: Expr, b: w.Bindings, coords: list[str]) -> list[str]:
    """Statements writing each (view, step) of `stores`: step `step` of `expr` (its value named v<step>)."""
    return [
        f"{b.array(view.buffer)}[{w.index_expr(view, coords)}] = {w.store(f'v{step}', expr.dtypes[step])};"
        for view, step in stores
    ]


def _header(kernel: Kernel, schedule: Schedule, b: w.Bindings) -> str:
    exprs = [kernel.expr]
    if isinstance(kernel.arg, Reduction) and kernel.arg.prologue is not None:
        exprs.append(kernel.arg.prologue)
    needed = dict.fromkeys(w.helpers(e) for e in exprs)  # each helper function once
    return b.declarations(schedule) + "\n" + "".join(needed)


def elementwise(kernel: Kernel, schedule: Schedule, b: w.Bindings) -> Source:
    total = math.prod(kernel.out.shape)
    decode, coords = w.decode("i", kernel.out.shape)
    epilogue = _epilogue(kernel, schedule, b, coords, acc=None, first=0)
    source = template("elementwise").fill(TOTAL=f"{total}u", DECODE=decode, BODY=[], EPILOGUE=epilogue)
    return _header(kernel, schedule, b) + "\n" + source, w.grid(-(-total // WORKGROUP))


def matmul(kernel: Kernel, schedule: Schedule, b: w.Bindings) -> Source:
    """By variant: dot (one invocation per output), tile64, the 128 tiles (tile128[-f16]), the pipelined
    tiles (wgsl_matmul.BLOCKINGS) or a software adapter's blocks (wgsl_matmul.BLOCKS); every one
    bounds-checks its edges, so any M, N, K works (K a multiple of 4 for the blocks)."""
    a, bm = kernel.inputs[:2]
    *batch, m, n = kernel.out.shape
    decode, bcoords = w.decode("wid.z", tuple(batch), "b")
    bases = [w.index_expr(View(v.buffer, tuple(batch), v.strides[:-2], v.offset), bcoords) for v in (a, bm)]
    values = {
        "A_BASE": bases[0] if batch else f"{a.offset}u",
        "B_BASE": bases[1] if batch else f"{bm.offset}u",
        "M": f"{m}u",
        "N": f"{n}u",
        "K": f"{a.shape[-1]}u",
        "DECODE": " ".join(decode),
    }
    if kernel.variant == "dot":
        return _matmul_dot(kernel, schedule, b, values)
    if kernel.variant in wgsl_matmul.BLOCKINGS:
        return wgsl_matmul.matmul(kernel, schedule, b, values, lambda cells: _stores(kernel, schedule, b, cells))
    if kernel.variant in wgsl_matmul.BLOCKS:
        return wgsl_matmul.blocks(kernel, schedule, b, values, lambda cells: _stores(kernel, schedule, b, cells))
    if kernel.variant.startswith("tile128"):
        f16 = kernel.variant.endswith("-f16")
        declared = b.declarations(schedule, frozenset(), f16)
        (am, ak), (bk, bn) = a.strides[-2:], bm.strides[-2:]
        reads = (
            b.read(a.buffer, f"a_base + (row0 + ra) * {am}u + (k0 + ka) * {ak}u"),
            b.read(bm.buffer, f"b_base + (k0 + kb) * {bk}u + (col0 + cb) * {bn}u"),
        )
        source = tile128(values, reads, lambda cells: _stores(kernel, schedule, b, cells), f16=f16)
        groups = (-(-n // LARGE), -(-m // LARGE), math.prod(batch))
        return declared + "\n" + w.helpers(kernel.expr) + "\n" + source, groups
    (am, ak), (bk, bn) = a.strides[-2:], bm.strides[-2:]
    source = tile64(
        values,
        b.read(a.buffer, f"a_base + (row0 + ra) * {am}u + (k0 + kk) * {ak}u"),
        b.read(bm.buffer, f"b_base + (k0 + kb) * {bk}u + (col0 + c) * {bn}u"),
        lambda cells: _stores(kernel, schedule, b, cells),
    )
    return _header(kernel, schedule, b) + "\n" + source, (-(-n // TILE), -(-m // TILE), math.prod(batch))


Cells = list[tuple[str, str, str]]  # (accumulator, row in the tile, column in the tile) of a thread's outputs


def tile64(values: dict[str, str], a_at: str, b_at: str, stores: Callable[[Cells], list[str]]) -> str:
    """wgsl/matmul_tile64.wgsl filled: `values` its sizes and bases, A_AT and B_AT the reads of a[row0 + ra,
    k0 + kk] and b[k0 + kb, col0 + c], `stores` the statements storing each cell's sum."""
    cells = [(f"c{i}_{j}", f"lid.y + {16 * i}u", f"lid.x + {16 * j}u") for i in range(R) for j in range(R)]
    return template("matmul_tile64").fill(**values, A_AT=a_at, B_AT=b_at, STORES=stores(cells))


def _stores(kernel: Kernel, schedule: Schedule, b: w.Bindings, cells: Cells) -> list[str]:
    """For each (accumulator, row, column) of a thread's outputs in its tile: the fused expression of it,
    stored at (row0 + row, col0 + column) when that lies inside the output."""
    *batch, m, n = kernel.out.shape
    coords = [*(f"b{i}" for i in range(len(batch))), "row", "col"]
    out = []
    for acc, row, col in cells:
        epilogue = _epilogue(kernel, schedule, b, coords, acc=acc, first=2)
        out += ["{", f"  let row = row0 + {row};", f"  let col = col0 + {col};"]
        out += [f"  if (row < {m}u && col < {n}u) {{", *(f"    {line}" for line in epilogue), "  }", "}"]
    return out


def _matmul_dot(kernel: Kernel, schedule: Schedule, b: w.Bindings, values: dict[str, str]) -> Source:
    """One invocation per output: its K multiply-adds in K's order, as fma, like tile64's accumulators (so
    the same bits), without workgroup memory or barriers."""
    a, bm = kernel.inputs[:2]
    *batch, m, n = kernel.out.shape
    (am, ak), (bk, bn) = a.strides[-2:], bm.strides[-2:]
    total = math.prod(batch) * m * n
    decode, bcoords = w.decode("bi", tuple(batch), "b")
    body = fragment(
        "matmul_dot",
        **{name: values[name] for name in ("A_BASE", "B_BASE", "N", "K")},
        CELLS=f"{m * n}u",
        DECODE=decode,
        A_AT=b.read(a.buffer, f"a_base + row * {am}u + kk * {ak}u"),
        B_AT=b.read(bm.buffer, f"b_base + kk * {bk}u + col * {bn}u"),
    )
    epilogue = _epilogue(kernel, schedule, b, [*bcoords, "row", "col"], acc="acc", first=2)
    source = template("elementwise").fill(TOTAL=f"{total}u", DECODE=[], BODY=body, EPILOGUE=epilogue)
    return _header(kernel, schedule, b) + "\n" + source, w.grid(-(-total // WORKGROUP))


def tile128(
    values: dict[str, str],
    reads: tuple[str, str],
    stores: Callable[[Cells], list[str]],
    *,
    f16: bool,
    load: list[str] | None = None,
) -> str:
    """128 x 128 tiles (wgsl/matmul_tile128.wgsl, its LOAD matmul_tile128_load.wgsl reading one element at
    a time) for operands that cannot be read as vec4 (wgsl_matmul's pipelined tiles take the others):
    `values` its sizes and bases, `reads` A_AT and B_AT (a[row0 + ra, k0 + ka] and b[k0 + kb, col0 + cb]),
    `stores` the statements storing each cell's sum; `load`, when given, is the LOAD itself (float32 tiles,
    one element of A at a time, as NF4 weights' nf4_tile128_load). f16 (fast only): tiles of float16, 2
    SLICE deep, whose products are summed in float16 slice by slice and added to the float32 sums."""
    depth, scalar, acc = (2 * SLICE, "f16", "h") if f16 else (SLICE, "f32", "c")
    cells = [(i, g) for i in range(8) for g in range(2)]
    rows = [f"4u * lid.y + {i}u" for i in range(4)] + [f"{LARGE // 2}u + 4u * lid.y + {i}u" for i in range(4)]
    outputs = [(f"c{i}_{g}[{c}]", rows[i], f"{g * LARGE // 2 + c}u + 4u * lid.x") for i, g in cells for c in range(4)]
    sizes = {name: values[name] for name in ("M", "N", "K")}
    elem, at = {"ELEM": "f16" if f16 else ""}, {"A_AT": reads[0], "B_AT": reads[1]}
    if load is None:
        load = fragment("matmul_tile128_load", **sizes, **elem, TILE_K=f"{depth}u", **at)
    return template("matmul_tile128").fill(
        **{name: values[name] for name in ("A_BASE", "B_BASE", "K", "DECODE")},
        T=scalar,
        WORDS=f"{depth * LARGE // 4}",
        TILE_K=f"{depth}u",
        LOADS=f"{LARGE * depth // 256}u",
        LOAD=load,
        OPEN_SLICE=[f"var h{i}_{g} = vec4<f16>(0.0);" for i, g in cells] if f16 else [""],
        FMA=[f"{acc}{i}_{g} = fma(vec4<{scalar}>(a{i // 4}[{i % 4}]), b{g}, {acc}{i}_{g});" for i, g in cells],
        CLOSE_SLICE=[f"c{i}_{g} = c{i}_{g} + vec4<f32>(h{i}_{g});" for i, g in cells] if f16 else [""],
        STORES=stores(outputs),
    )


def reduce(kernel: Kernel, schedule: Schedule, b: w.Bindings) -> Source:
    """One workgroup per output element (one invocation, for the variant "serial"); REDUCE's input view is
    [*out, *reduced] (Kind.REDUCE): the value reduced is that view's element, or its prologue's value
    computed there (and stored, by the one lane that visits the element, in the first pass only)."""
    assert isinstance(kernel.arg, Reduction)
    op, correction, prologue, reads = kernel.arg.op, kernel.arg.correction, kernel.arg.prologue, kernel.arg.reads
    view = kernel.inputs[0]
    out_shape = kernel.out.shape
    red_shape = view.shape[len(out_shape) :]
    count, outs = math.prod(red_shape), math.prod(out_shape)
    decode_o, ocoords = w.decode("o", out_shape, "c")
    decode_r, rcoords = w.decode("r", red_shape, "k")
    at = [*ocoords, *rcoords]
    if prologue is None:
        load_x = [f"let x = {b.read(view.buffer, w.index_expr(view, at))};"]
        store_x: list[str] = []
    else:
        loads = _loads(Kernel(kernel.kind, kernel.out, kernel.inputs[:reads]), schedule, b, at)
        lines, value = w.expression(prologue, loads, None, at)
        load_x = [*lines, f"let x = {value};"]
        store_x = _stored(kernel.prologue_stores, prologue, b, at)
    lanes: dict[str, Value] = {"COUNT": f"{count}u", "DECODE_REDUCED": decode_r, "LOAD_X": load_x}
    values: dict[str, Value] = {
        **lanes,
        "STORE_X": store_x,
        "OUTS": f"{outs}u",
        "DECODE": decode_o,
        "EPILOGUE": _epilogue(kernel, schedule, b, ocoords, acc="total", first=reads),
    }
    serial = kernel.variant == "serial"  # one invocation per output (variants.SERIAL)
    combine = "max(s, o)" if op is Op.MAX else "(s + o)"
    tree: dict[str, Value] = {} if serial else {"LANE_TREE": w.lane_tree("lane_tree", COMBINE=combine)}
    if op is Op.MAX:
        values |= {"START": "bitcast<f32>(0xff7fffffu)", "STEP": "max(acc, x)", "FINISH": []}
    else:
        values |= {"START": "0.0", "STEP": "acc + x"}
        values["FINISH"] = [f"total = total / {float(count)!r};"] if op is Op.MEAN else []
    if op is Op.VAR:
        divisors = {"MEAN_DIVISOR": repr(float(count)), "DIVISOR": repr(float(count - correction))}
        values["FINISH"] = fragment("reduce_var_serial" if serial else "reduce_var", **lanes, **divisors, **tree)
    if serial:
        source = template("reduce_serial").fill(**values)
        return _header(kernel, schedule, b) + "\n" + source, w.grid(-(-outs // w.LANES))
    return _header(kernel, schedule, b) + "\n" + template("reduce").fill(**values, **tree), w.grid(outs)


def rows(kernel: Kernel, schedule: Schedule, b: w.Bindings) -> Source:
    """Softmax / log-softmax / argmax over the last axis of [rows..., R]: one workgroup per row, or one
    invocation per row for the variant "serial" (short rows, variants.SERIAL)."""
    (view,) = kernel.inputs
    *row_shape, count = view.shape
    nrows = math.prod(row_shape)
    decode_o, ocoords = w.decode("o", tuple(row_shape), "c")
    x_at = b.read(view.buffer, w.index_expr(view, [*ocoords, "r"]))
    serial = kernel.variant == "serial"
    if kernel.kind is Kind.ARGMAX:
        out_at = w.index_expr(kernel.out, ocoords)
        stored = [f"{b.array(kernel.out.buffer)}[{out_at}] = i32(best_i);"]
        finish = stored if serial else fragment("rows_argmax", OUT_AT=out_at, OUT=b.array(kernel.out.buffer))
    else:
        result = f"exp({x_at} - top) / total" if kernel.kind is Kind.SOFTMAX else f"{x_at} - top - log(total)"
        values: dict[str, Value] = {
            "COUNT": f"{count}u",
            "X_AT": x_at,
            "OUT_AT": w.index_expr(kernel.out, [*ocoords, "r"]),
            "RESULT": result,
        }
        if serial:
            finish = fragment("rows_serial_softmax", **values, OUT=b.array(kernel.out.buffer))
        else:
            tree = w.lane_tree("lane_tree", COMBINE="(s + o)")
            finish = fragment("rows_softmax", **values, LANE_TREE=tree, OUT=b.array(kernel.out.buffer))
    frame: dict[str, Value] = {"ROWS": f"{nrows}u", "COUNT": f"{count}u", "DECODE": decode_o, "X_AT": x_at}
    if serial:
        source = template("rows_serial").fill(**frame, FINISH=finish)
        return _header(kernel, schedule, b) + "\n" + source, w.grid(-(-nrows // w.LANES))
    source = template("rows").fill(**frame, ARGMAX_TREE=w.lane_tree("lane_tree_argmax"), FINISH=finish)
    return _header(kernel, schedule, b) + "\n" + source, w.grid(nrows)
