"""WGSL renderers for elementwise, matmul, reductions and row-wise kernels (softmax, log-softmax,
argmax). Reductions use one workgroup per output and a fixed order: each of the 64 lanes sums a fixed
strided subset in index order, then a fixed pairwise tree combines the lanes, so results repeat bit for
bit on one device."""

from __future__ import annotations

import math

from scellis.codegen import wgsl_expr as w
from scellis.lower.kernels import Kernel, Kind, Reduction, Schedule, View
from scellis.ops import Op

WORKGROUP = 256
LANES = 64
# Matmul blocking: 16 x 16 threads, each computing R x R outputs of a (16 R) x (16 R) tile, over slices of
# K of depth TILE_K staged in workgroup memory. Large products use R = 8 (64 accumulators a thread,
# 16 shared-memory reads per 64 multiply-adds); small ones R = 4, so fewer threads idle at the edges.
BLOCKING = {4: 16, 8: 16}  # R -> TILE_K: both tiles fit WebGPU's default 16 KiB of workgroup memory
PAD = 4  # workgroup rows are TILE + PAD long, so the transposed stores of a K slice hit distinct banks
LARGE = 128

MAIN = (
    "@compute @workgroup_size({size})\nfn main(@builtin(global_invocation_id) gid: vec3<u32>, "
    "@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>, "
    "@builtin(num_workgroups) groups: vec3<u32>) {{"
)


def _grid(groups: int) -> tuple[int, int, int]:
    return (min(groups, 65535), -(-groups // 65535), 1)


def _loads(kernel: Kernel, schedule: Schedule, b: w.Bindings, coords: list[str], first: int = 0) -> list[str]:
    """WGSL for each Load(i): inputs from `first` on are read at the output coordinates."""
    out = [""] * len(kernel.inputs)
    for i, view in enumerate(kernel.inputs[first:], start=first):
        out[i] = w.load_expr(view, b.array(view.buffer), schedule.buffer(view.buffer).dtype, coords)
    return out


def _epilogue(
    kernel: Kernel, schedule: Schedule, b: w.Bindings, coords: list[str], *, acc: str | None, first: int
) -> list[str]:
    """Statements that compute the kernel's expression at `coords` and store it."""
    lines, value = w.expression(kernel.expr, _loads(kernel, schedule, b, coords, first), acc, coords)
    index = w.index_expr(kernel.out, coords)
    return [*lines, f"out[{index}] = {w.store(value, kernel.expr.dtype)};"]


def _header(kernel: Kernel, schedule: Schedule, b: w.Bindings) -> str:
    return b.declarations(schedule) + "\n" + w.helpers(kernel.expr)


def elementwise(kernel: Kernel, schedule: Schedule, b: w.Bindings) -> tuple[str, tuple[int, int, int]]:
    shape = kernel.out.shape
    total = math.prod(shape)
    decode, coords = w.decode("i", shape)
    body = [
        MAIN.format(size=WORKGROUP),
        f"  let i = gid.x + gid.y * groups.x * {WORKGROUP}u;",
        f"  if (i >= {total}u) {{ return; }}",
        *(f"  {line}" for line in decode),
        *(f"  {line}" for line in _epilogue(kernel, schedule, b, coords, acc=None, first=0)),
        "}",
    ]
    return _header(kernel, schedule, b) + "\n" + "\n".join(body), _grid(-(-total // WORKGROUP))


def matmul(kernel: Kernel, schedule: Schedule, b: w.Bindings) -> tuple[str, tuple[int, int, int]]:
    """Tiled and register-blocked (see BLOCKING): each workgroup computes one output tile of one batch
    entry; edges are bounds-checked, so any M, N, K works."""
    a, bm = kernel.inputs[:2]
    *batch, m, n = kernel.out.shape
    k = a.shape[-1]
    nbatch = math.prod(batch)
    decode, bcoords = w.decode("wid.z", tuple(batch), "b")
    a_base = w.index_expr(View(a.buffer, tuple(batch), a.strides[:-2], a.offset), bcoords) if batch else f"{a.offset}u"
    b_base = (
        w.index_expr(View(bm.buffer, tuple(batch), bm.strides[:-2], bm.offset), bcoords) if batch else f"{bm.offset}u"
    )
    am, ak = a.strides[-2:]
    bk, bn = bm.strides[-2:]
    coords = [*bcoords, "row", "col"]
    if kernel.variant == "dot":
        return _matmul_dot(kernel, schedule, b, (a_base, b_base), (am, ak, bk, bn))
    if kernel.variant.startswith("tile128"):
        vec4, f16 = kernel.variant.startswith("tile128-vec4"), kernel.variant.endswith("-f16")
        source = _matmul_large(kernel, schedule, b, decode=decode, bases=(a_base, b_base), vec4=vec4, f16=f16)
        declared = b.declarations(schedule, frozenset({a.buffer, bm.buffer}) if vec4 else frozenset(), f16)
        header = declared + "\n" + w.helpers(kernel.expr)
        return header + source, (-(-n // LARGE), -(-m // LARGE), nbatch)
    r = 4
    tile, tile_k = 16 * r, BLOCKING[r]
    loads = tile * tile_k // 256
    # Accumulators and the inner product are written out in full (no local arrays, no inner loops):
    # drivers then keep all R*R sums in registers.
    cells = [(i, j) for i in range(r) for j in range(r)]
    declare = "\n".join(f"  var c{i}_{j} = 0.0;" for i, j in cells)
    fetch = "\n".join(
        f"      let a{i} = tile_a[kk][lid.y + {16 * i}u];\n      let b{i} = tile_b[kk][lid.x + {16 * i}u];"
        for i in range(r)
    )
    fma = "\n".join(f"      c{i}_{j} = fma(a{i}, b{j}, c{i}_{j});" for i, j in cells)
    read_a = b.read(a.buffer, f"a_base + (row0 + ra) * {am}u + (k0 + kk) * {ak}u")
    read_b = b.read(bm.buffer, f"b_base + (k0 + kb) * {bk}u + (col0 + c) * {bn}u")
    stores = []
    for i, j in cells:
        epi = _epilogue(kernel, schedule, b, coords, acc=f"c{i}_{j}", first=2)
        stores.append(
            f"  {{\n    let row = row0 + lid.y + {16 * i}u;\n    let col = col0 + lid.x + {16 * j}u;\n"
            f"    if (row < {m}u && col < {n}u) {{\n" + "\n".join(f"      {line}" for line in epi) + "\n    }\n  }"
        )
    body = f"""
var<workgroup> tile_a: array<array<f32, {tile + PAD}>, {tile_k}>;
var<workgroup> tile_b: array<array<f32, {tile + PAD}>, {tile_k}>;
{MAIN.format(size="16, 16")}
  {" ".join(decode)}
  let a_base = {a_base};
  let b_base = {b_base};
  let row0 = wid.y * {tile}u;
  let col0 = wid.x * {tile}u;
  let t = lid.y * 16u + lid.x;
{declare}
  for (var k0 = 0u; k0 < {k}u; k0 = k0 + {tile_k}u) {{
    for (var e = 0u; e < {loads}u; e = e + 1u) {{
      let flat = t + e * 256u;
      let ra = flat / {tile_k}u;
      let kk = flat % {tile_k}u;
      var va = 0.0;
      if (row0 + ra < {m}u && k0 + kk < {k}u) {{ va = {read_a}; }}
      tile_a[kk][ra] = va;
      let kb = flat / {tile}u;
      let c = flat % {tile}u;
      var vb = 0.0;
      if (k0 + kb < {k}u && col0 + c < {n}u) {{ vb = {read_b}; }}
      tile_b[kb][c] = vb;
    }}
    workgroupBarrier();
    for (var kk = 0u; kk < {tile_k}u; kk = kk + 1u) {{
{fetch}
{fma}
    }}
    workgroupBarrier();
  }}
{chr(10).join(stores)}
}}"""
    groups = (-(-n // tile), -(-m // tile), nbatch)
    return _header(kernel, schedule, b) + body, groups


def _matmul_dot(
    kernel: Kernel, schedule: Schedule, b: w.Bindings, bases: tuple[str, str], strides: tuple[int, ...]
) -> tuple[str, tuple[int, int, int]]:
    """One invocation per output: its K multiply-adds in K's order, as fma, like tile64's accumulators (so
    the same bits), without workgroup memory or barriers."""
    a, bm = kernel.inputs[:2]
    *batch, m, n = kernel.out.shape
    k = a.shape[-1]
    am, ak, bk, bn = strides
    total = math.prod(batch) * m * n
    decode, bcoords = w.decode("bi", tuple(batch), "b")
    epi = _epilogue(kernel, schedule, b, [*bcoords, "row", "col"], acc="acc", first=2)
    read_a = b.read(a.buffer, f"a_base + row * {am}u + kk * {ak}u")
    read_b = b.read(bm.buffer, f"b_base + kk * {bk}u + col * {bn}u")
    body = [
        MAIN.format(size=WORKGROUP),
        f"  let i = gid.x + gid.y * groups.x * {WORKGROUP}u;",
        f"  if (i >= {total}u) {{ return; }}",
        f"  let bi = i / {m * n}u;",
        f"  let row = (i % {m * n}u) / {n}u;",
        f"  let col = i % {n}u;",
        *(f"  {line}" for line in (decode if batch else [])),
        f"  let a_base = {bases[0]};",
        f"  let b_base = {bases[1]};",
        "  var acc = 0.0;",
        f"  for (var kk = 0u; kk < {k}u; kk = kk + 1u) {{",
        f"    acc = fma({read_a}, {read_b}, acc);",
        "  }",
        *(f"  {line}" for line in epi),
        "}",
    ]
    return _header(kernel, schedule, b) + "\n" + "\n".join(body), _grid(-(-total // WORKGROUP))


def _tile_loads(kernel: Kernel, b: w.Bindings, tk: int, vec4: bool, f16: bool = False) -> str:
    """Statements staging one K slice of A (transposed) and B into workgroup memory (rounded to float16
    for the f16 variant)."""
    a, bm = kernel.inputs[:2]
    m, n, k = kernel.out.shape[-2], kernel.out.shape[-1], a.shape[-1]
    am, ak = a.strides[-2:]
    bk, bn = bm.strides[-2:]
    quads = LARGE // 4
    elem = "f16" if f16 else ""
    if not vec4:
        read_a = b.read(a.buffer, f"a_base + (row0 + ra) * {am}u + (k0 + ka) * {ak}u")
        read_b = b.read(bm.buffer, f"b_base + (k0 + kb) * {bk}u + (col0 + cb) * {bn}u")
        return f"""    for (var e = 0u; e < {LARGE * tk // 256}u; e = e + 1u) {{
      let flat = t + e * 256u;
      let ra = flat / {tk}u;
      let ka = flat % {tk}u;
      var va = 0.0;
      if (row0 + ra < {m}u && k0 + ka < {k}u) {{ va = {read_a}; }}
      tile_a[ka * {quads}u + ra / 4u][ra % 4u] = {elem}(va);
      let kb = flat / {LARGE}u;
      let cb = flat % {LARGE}u;
      var vb = 0.0;
      if (k0 + kb < {k}u && col0 + cb < {n}u) {{ vb = {read_b}; }}
      tile_b[kb * {quads}u + cb / 4u][cb % 4u] = {elem}(vb);
    }}"""
    # K and N are multiples of 4 here: a vec4 is either wholly inside the matrix or wholly outside
    scatter = "\n".join(
        f"      tile_a[(4u * kq + {c}u) * {quads}u + ra / 4u][ra % 4u] = {elem}(va[{c}]);" for c in range(4)
    )
    return f"""    for (var e = 0u; e < {LARGE * tk // 1024}u; e = e + 1u) {{
      let flat = t + e * 256u;
      let ra = flat / {tk // 4}u;
      let kq = flat % {tk // 4}u;
      var va = vec4<f32>(0.0);
      if (row0 + ra < {m}u && k0 + 4u * kq < {k}u) {{
        va = {b.read(a.buffer, f"(a_base + (row0 + ra) * {am}u + k0 + 4u * kq) / 4u", vec4=True)};
      }}
{scatter}
      let kb = flat / {quads}u;
      let cq = flat % {quads}u;
      var vb = vec4<f32>(0.0);
      if (k0 + kb < {k}u && col0 + 4u * cq < {n}u) {{
        vb = {b.read(bm.buffer, f"(b_base + (k0 + kb) * {bk}u + col0 + 4u * cq) / 4u", vec4=True)};
      }}
      tile_b[kb * {quads}u + cq] = {"vec4<f16>" if f16 else ""}(vb);
    }}"""


def _matmul_large(
    kernel: Kernel,
    schedule: Schedule,
    b: w.Bindings,
    *,
    decode: list[str],
    bases: tuple[str, str],
    vec4: bool,
    f16: bool = False,
) -> str:
    """128 x 128 tiles; each thread owns rows {4 ty.., 64 + 4 ty..} and columns {4 tx.., 64 + 4 tx..}
    (8 x 8 outputs as 16 vec4 sums), so every K step reads 4 vec4 from workgroup memory for 64
    multiply-adds. Tiles are stored K-major as vec4 rows; edges are bounds-checked on load and store.

    f16 (fast only): tiles hold float16 (16 K values per slice in the same memory), each slice's 16
    products are summed in float16, and the slice sums are added in float32 — so rounding grows with
    the slice (fixed) and not with K."""
    a = kernel.inputs[0]
    *batch, m, n = kernel.out.shape
    k = a.shape[-1]
    bcoords = [f"b{i}" for i in range(len(batch))]
    tk = 2 * BLOCKING[8] if f16 else BLOCKING[8]
    quads = LARGE // 4
    rows = [f"4u * lid.y + {i}u" for i in range(4)] + [f"{LARGE // 2}u + 4u * lid.y + {i}u" for i in range(4)]
    cells = [(i, g) for i in range(8) for g in range(2)]
    declare = "\n".join(f"  var c{i}_{g} = vec4<f32>(0.0);" for i, g in cells)
    scalar, acc, open_slice, close_slice = "f32", "c", "", ""
    if f16:
        scalar, acc = "f16", "h"
        open_slice = "\n".join(f"    var h{i}_{g} = vec4<f16>(0.0);" for i, g in cells)
        close_slice = "\n".join(f"    c{i}_{g} = c{i}_{g} + vec4<f32>(h{i}_{g});" for i, g in cells)
    fma = "\n".join(
        f"      {acc}{i}_{g} = fma(vec4<{scalar}>(a{i // 4}[{i % 4}]), b{g}, {acc}{i}_{g});" for i, g in cells
    )
    stores = []
    for i in range(8):
        for g in range(2):
            for comp in range(4):
                col = f"{g * LARGE // 2 + comp}u + 4u * lid.x"
                epi = _epilogue(kernel, schedule, b, [*bcoords, "row", "col"], acc=f"c{i}_{g}[{comp}]", first=2)
                stores.append(
                    f"  {{\n    let row = row0 + {rows[i]};\n    let col = col0 + {col};\n"
                    f"    if (row < {m}u && col < {n}u) {{\n" + "\n".join(f"      {x}" for x in epi) + "\n    }\n  }"
                )
    return f"""
var<workgroup> tile_a: array<vec4<{scalar}>, {tk * quads}>;
var<workgroup> tile_b: array<vec4<{scalar}>, {tk * quads}>;
{MAIN.format(size="16, 16")}
  {" ".join(decode)}
  let a_base = {bases[0]};
  let b_base = {bases[1]};
  let row0 = wid.y * {LARGE}u;
  let col0 = wid.x * {LARGE}u;
  let t = lid.y * 16u + lid.x;
{declare}
  for (var k0 = 0u; k0 < {k}u; k0 = k0 + {tk}u) {{
{_tile_loads(kernel, b, tk, vec4, f16)}
    workgroupBarrier();
{open_slice}
    for (var kk = 0u; kk < {tk}u; kk = kk + 1u) {{
      let a0 = tile_a[kk * {quads}u + lid.y];
      let a1 = tile_a[kk * {quads}u + {quads // 2}u + lid.y];
      let b0 = tile_b[kk * {quads}u + lid.x];
      let b1 = tile_b[kk * {quads}u + {quads // 2}u + lid.x];
{fma}
    }}
{close_slice}
    workgroupBarrier();
  }}
{chr(10).join(stores)}
}}"""


def _lane_tree(name: str, combine: str) -> str:
    """Fixed pairwise combination of the LANES partial results in workgroup memory."""
    steps = []
    stride = LANES // 2
    while stride:
        steps.append(
            f"  if (lid.x < {stride}u) {{ let o = {name}[lid.x + {stride}u]; let s = {name}[lid.x]; "
            f"{name}[lid.x] = {combine.format(a='s', b='o')}; }}\n  workgroupBarrier();"
        )
        stride //= 2
    return "\n".join(steps)


def reduce(kernel: Kernel, schedule: Schedule, b: w.Bindings) -> tuple[str, tuple[int, int, int]]:
    """One workgroup per output element; REDUCE's input view is [*out, *reduced]."""
    (view,) = kernel.inputs[:1]
    assert isinstance(kernel.arg, Reduction)
    op, correction = kernel.arg.op, kernel.arg.correction
    out_shape = kernel.out.shape
    red_shape = view.shape[len(out_shape) :]
    count = math.prod(red_shape)
    outs = math.prod(out_shape)
    decode_o, ocoords = w.decode("o", out_shape, "c")
    decode_r, rcoords = w.decode("r", red_shape, "k")
    index = w.index_expr(view, [*ocoords, *rcoords])
    is_max = op is Op.MAX
    start = "bitcast<f32>(0xff7fffffu)" if is_max else "0.0"
    combine = "max({a}, {b})" if is_max else "({a} + {b})"
    accumulate = "acc = max(acc, x);" if is_max else "acc = acc + x;"
    lines = [
        f"var<workgroup> part: array<f32, {LANES}>;",
        MAIN.format(size=LANES),
        "  let o = wid.x + wid.y * groups.x;",
        f"  if (o >= {outs}u) {{ return; }}",
        *(f"  {line}" for line in decode_o),
        f"  var acc = {start};",
        f"  for (var r = lid.x; r < {count}u; r = r + {LANES}u) {{",
        *(f"    {line}" for line in decode_r),
        f"    let x = {b.read(view.buffer, index)};",
        f"    {accumulate}",
        "  }",
        "  part[lid.x] = acc;",
        "  workgroupBarrier();",
        _lane_tree("part", combine),
        "  var total = part[0];",
    ]
    if op is Op.MEAN:
        lines.append(f"  total = total / {float(count)!r};")
    if op is Op.VAR:
        lines += [
            f"  let mean = total / {float(count)!r};",
            "  workgroupBarrier();",
            "  var sq = 0.0;",
            f"  for (var r = lid.x; r < {count}u; r = r + {LANES}u) {{",
            *(f"    {line}" for line in decode_r),
            f"    let dx = {b.read(view.buffer, index)} - mean;",
            "    sq = sq + dx * dx;",
            "  }",
            "  part[lid.x] = sq;",
            "  workgroupBarrier();",
            _lane_tree("part", "({a} + {b})"),
            f"  total = part[0] / {float(count - correction)!r};",
        ]
    lines += [
        "  if (lid.x == 0u) {",
        *(f"    {x}" for x in _epilogue(kernel, schedule, b, ocoords, acc="total", first=1)),
        "  }",
        "}",
    ]
    return _header(kernel, schedule, b) + "\n" + "\n".join(lines), _grid(outs)


def rows(kernel: Kernel, schedule: Schedule, b: w.Bindings) -> tuple[str, tuple[int, int, int]]:
    """Softmax / log-softmax / argmax over the last axis of [rows..., R], one workgroup per row."""
    (view,) = kernel.inputs
    *row_shape, count = view.shape
    nrows = math.prod(row_shape)
    decode_o, ocoords = w.decode("o", tuple(row_shape), "c")
    x_at = b.read(view.buffer, w.index_expr(view, [*ocoords, "r"]))
    head = [
        f"var<workgroup> part: array<f32, {LANES}>;",
        f"var<workgroup> part_i: array<u32, {LANES}>;",
        MAIN.format(size=LANES),
        "  let o = wid.x + wid.y * groups.x;",
        f"  if (o >= {nrows}u) {{ return; }}",
        *(f"  {line}" for line in decode_o),
        "  var best = bitcast<f32>(0xff7fffffu);",
        "  var best_i = 0u;",
        f"  for (var r = lid.x; r < {count}u; r = r + {LANES}u) {{",
        f"    let x = {x_at};",
        "    if (x > best) { best = x; best_i = r; }",
        "  }",
        "  part[lid.x] = best;",
        "  part_i[lid.x] = best_i;",
        "  workgroupBarrier();",
    ]
    # first maximum: on ties the lower index wins, whatever lane found it
    stride, tree = LANES // 2, []
    while stride:
        tree.append(
            f"  if (lid.x < {stride}u) {{ let ov = part[lid.x + {stride}u]; let oi = part_i[lid.x + {stride}u]; "
            "if (ov > part[lid.x] || (ov == part[lid.x] && oi < part_i[lid.x])) "
            "{ part[lid.x] = ov; part_i[lid.x] = oi; } }\n  workgroupBarrier();"
        )
        stride //= 2
    if kernel.kind is Kind.ARGMAX:
        out_row = w.index_expr(kernel.out, ocoords)
        tail = ["  if (lid.x == 0u) {", f"    out[{out_row}] = i32(part_i[0]);", "  }", "}"]
        return _header(kernel, schedule, b) + "\n" + "\n".join(head + tree + tail), _grid(nrows)
    out_at = w.index_expr(kernel.out, [*ocoords, "r"])
    tail = [
        "  let top = part[0];",
        "  workgroupBarrier();",
        "  var s = 0.0;",
        f"  for (var r = lid.x; r < {count}u; r = r + {LANES}u) {{ s = s + exp({x_at} - top); }}",
        "  part[lid.x] = s;",
        "  workgroupBarrier();",
        _lane_tree("part", "({a} + {b})"),
        "  let total = part[0];",
        f"  for (var r = lid.x; r < {count}u; r = r + {LANES}u) {{",
        f"    out[{out_at}] = "
        + ("exp(" + x_at + " - top) / total;" if kernel.kind is Kind.SOFTMAX else x_at + " - top - log(total);"),
        "  }",
        "}",
    ]
    return _header(kernel, schedule, b) + "\n" + "\n".join(head + tree + tail), _grid(nrows)
