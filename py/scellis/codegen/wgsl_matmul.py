"""Stage: code. The pipelined matmul tiles (wgsl/matmul_pipelined.wgsl): a register block per thread, the
next K slice fetched while the current one is multiplied, the slice's steps written out, and bounds checks
only where the shape has ragged edges. `Blocking` says how a variant blocks; BLOCKINGS names the ones the
plan chooses from (lower/variants.py). And the blocks of a software adapter (wgsl/matmul_block.wgsl,
`blocks`): one invocation per block of outputs, its operands read as vec4 from their buffers."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from scellis.codegen import wgsl_expr as w
from scellis.codegen.wgsl_template import Value, template
from scellis.lower.kernels import Kernel, Schedule
from scellis.lower.variants import BLOCKS, block_grid, quads_along_k

THREADS = 256  # a workgroup: a 16 x 16 grid of threads
SPAN = 64  # 16 threads x 4: how far apart a thread's vec4 groups of rows (and of columns) lie

Cells = list[tuple[str, str, str]]  # (accumulator, row in the tile, column in the tile) of a thread's outputs


@dataclass(frozen=True)
class Blocking:
    """rows x cols: a thread's register block (multiples of 4), so the tile is 16 rows x 16 cols;
    depth: the K slice (a multiple of 4); stages: workgroup tiles (2: the next slice is staged into the
    other while this one is multiplied, one barrier a slice; 1: staged after a second barrier); lanes: a
    warp's 32 lanes as (x, y) in the 16 x 16 grid; along_k: where an operand is contiguous along K,
    "rows" gives a warp's lanes consecutive rows (its transposed stores into the tile hit distinct banks),
    "quads" consecutive quads of one row (its loads read a row's slice at once); swizzle: when > 0, the
    workgroups take their tiles in bands of this many tile rows, column by column (wid.x and wid.y in
    order otherwise); early (two stages only): a step stages the slice fetched a step before, then
    fetches the one after, then multiplies (the loads have a whole step to arrive), else it fetches,
    multiplies, then stages."""

    rows: int = 8
    cols: int = 8
    depth: int = 8
    stages: int = 2
    lanes: tuple[int, int] = (16, 2)
    along_k: str = "rows"
    swizzle: int = 0
    early: bool = False

    @property
    def tile(self) -> tuple[int, int]:
        return 16 * self.rows, 16 * self.cols

    def workgroup_bytes(self) -> int:
        return self.stages * self.depth * (self.tile[0] + self.tile[1]) * 4


# The variants the plan may choose (lower/variants.py), all within WebGPU's default 16 KiB of workgroup
# memory; bench/matmul.py sweeps others.
BLOCKINGS = {
    "tile128-pipe": Blocking(along_k="quads"),
    "tile64x128-pipe": Blocking(rows=4, depth=16, stages=1),
    "tile64-pipe": Blocking(rows=4, cols=4, depth=16),
}


@dataclass(frozen=True)
class Operand:
    """One factor as the tiles read it: `read(i)` is the WGSL reading the vec4 at vec4 index i; `base`
    where the matrix starts (in elements); `across` its stride along the tile's side (M for A, N for B),
    `deep` along K; `extent` the side's size; `along_k`: the vec4 run along K (`deep` is 1), else along
    the side (`across` is 1)."""

    read: Callable[[str], str]
    base: str
    across: int
    deep: int
    extent: int
    along_k: bool


def _fetch(
    name: str, op: Operand, origin: str, *, tile_side: int, k: int, blocking: Blocking, checked: bool
) -> tuple[list[str], list[str], list[str]]:
    """The registers of one operand's slice, the lines fetching it at k1 (`origin`: the tile's first row or
    column) and the lines staging it into tile `nxt` (a name the caller replaces)."""
    depth, side_quads = blocking.depth, tile_side // 4
    total = tile_side * depth // 4  # vec4 a slice
    regs, fetch, stage = [], [], []
    for e in range(-(-total // THREADS)):
        reg, flat = f"p{name}{e}", f"t + {THREADS * e}u"
        if op.along_k and blocking.along_k == "rows":
            side, kq = f"({flat}) % {tile_side}u", f"({flat}) / {tile_side}u"
        elif op.along_k:
            side, kq = f"({flat}) / {depth // 4}u", f"({flat}) % {depth // 4}u"
        else:
            kq, side = f"({flat}) / {side_quads}u", f"({flat}) % {side_quads}u"
        at = [f"let {name}s{e} = {side};", f"let {name}k{e} = {kq};"]
        if op.along_k:  # a vec4 along K at (side, 4 kq): transposed into four rows of the tile
            index = f"({op.base} + ({origin} + {name}s{e}) * {op.across}u + k1 + 4u * {name}k{e}) / 4u"
            inside = f"{origin} + {name}s{e} < {op.extent}u && k1 + 4u * {name}k{e} < {k}u"
            put = [
                f"tile_{name}[nxt][4u * {name}k{e} + {i}u][{name}s{e} / 4u][{name}s{e} % 4u] = {reg}[{i}];"
                for i in range(4)
            ]
        else:  # a vec4 across at (k, 4 side): one vec4 of the tile
            index = f"({op.base} + (k1 + {name}k{e}) * {op.deep}u + {origin} + 4u * {name}s{e}) / 4u"
            inside = f"k1 + {name}k{e} < {k}u && {origin} + 4u * {name}s{e} < {op.extent}u"
            put = [f"tile_{name}[nxt][{name}k{e}][{name}s{e}] = {reg};"]
        load = [f"{reg} = vec4<f32>(0.0);", f"if ({inside}) {{", f"  {reg} = {op.read(index)};", "}"]
        body = [*at, *(load if checked else [f"{reg} = {op.read(index)};"])]
        staged = [*at, *put]
        if total % THREADS and e == total // THREADS:  # the last round of loads, where threads outnumber them
            body = [f"if ({flat} < {total}u) {{", *(f"  {line}" for line in body), "}"]
            staged = [f"if ({flat} < {total}u) {{", *(f"  {line}" for line in staged), "}"]
        regs.append(f"var {reg} = vec4<f32>(0.0);")
        fetch += ["{", *(f"  {line}" for line in body), "}"]
        stage += ["{", *(f"  {line}" for line in staged), "}"]
    return regs, fetch, stage


def _products(blocking: Blocking, tile: int) -> list[str]:
    """Each step kk of the slice in `tile`, written out: the thread's vec4 of A and B, then its
    multiply-adds."""
    out = []
    for kk in range(blocking.depth):
        out.append("{")
        out += [f"  let a{g} = tile_a[{tile}][{kk}][ty + {16 * g}u];" for g in range(blocking.rows // 4)]
        out += [f"  let b{h} = tile_b[{tile}][{kk}][tx + {16 * h}u];" for h in range(blocking.cols // 4)]
        out += [
            f"  c{i}_{h} = fma(vec4<f32>(a{i // 4}[{i % 4}]), b{h}, c{i}_{h});"
            for i in range(blocking.rows)
            for h in range(blocking.cols // 4)
        ]
        out.append("}")
    return out


def _slices(blocking: Blocking, k: int, fetch: list[str], stage: Callable[[int], list[str]]) -> dict[str, Value]:
    """The schedule of the K slices, written out. Step j multiplies slice j (in tile j % stages) while a
    later one is in flight: with `early`, slice j + 1 (fetched a step before) is staged into the other
    tile first and slice j + 2 fetched; else slice j + 1 is fetched first and staged after the products.
    FIRST fetches and stages what the first step needs; the loop takes `stages` steps at a time (so its
    tiles are constants) while every part of a step has a slice to work on; AFTER: the steps left."""
    depth, stages, early = blocking.depth, blocking.stages, blocking.early
    slices, ahead = -(-k // depth), 2 if early else 1

    def step(j: int, k0: str, full: bool) -> list[str]:
        """Step j (`k0`: where its slice starts, an expression with the loop's k0 or a constant)."""
        staged, fetched = full or j + 1 < slices, full or j + ahead < slices
        lines = stage((j + 1) % stages) if early and staged else []
        lines += [f"k1 = {k0}{ahead * depth}u;", *fetch] if fetched else []
        lines += _products(blocking, j % stages)
        if staged and not early:
            lines += ["workgroupBarrier();"] * (stages == 1) + stage((j + 1) % stages)
        return lines + ["workgroupBarrier();"] * staged

    first = [*fetch, *stage(0)] + ([f"k1 = {depth}u;", *fetch] if early and slices > 1 else [])
    rounds = max(slices - ahead, 0) // stages
    looped = [line for j in range(stages) for line in step(j, f"k0 + {j * depth}u + ", True)]
    after = [line for j in range(rounds * stages, slices) for line in step(j, f"{j * depth}u + ", False)]
    return {
        "FIRST": [*first, "workgroupBarrier();"],
        "LOOP_END": f"{rounds * stages * depth}u",
        "LOOP_STEP": f"{stages * depth}u",
        "STEPS": looped,
        "AFTER": after,
    }


def _lanes(blocking: Blocking) -> tuple[str, str]:
    """A thread's (column, row) in the 16 x 16 grid: a warp covers lanes = (x, y) of it, warps side by side."""
    x, y = blocking.lanes
    across = 16 // x
    tx = f"t % {x}u + {x}u * ((t / 32u) % {across}u)" if across > 1 else f"t % {x}u"
    ty = f"(t % 32u) / {x}u + {y}u * ((t / 32u) / {across}u)"
    return tx, ty


def _origin(blocking: Blocking, m: int, n: int) -> list[str]:
    """row0 and col0: where the workgroup's tile starts."""
    tile_m, tile_n = blocking.tile
    if not blocking.swizzle:
        return [f"let row0 = wid.y * {tile_m}u;", f"let col0 = wid.x * {tile_n}u;"]
    across, down, band = -(-n // tile_n), -(-m // tile_m), blocking.swizzle
    return [
        f"let pid = wid.y * {across}u + wid.x;",
        f"let first = pid / {band * across}u * {band}u;",
        f"let tall = min({down}u - first, {band}u);",
        f"let within = pid % {band * across}u;",
        f"let row0 = (first + within % tall) * {tile_m}u;",
        f"let col0 = within / tall * {tile_n}u;",
    ]


def interior(blocking: Blocking, m: int, n: int, k: int) -> bool:
    """Whether every tile lies inside the matrices, so no load or store needs a bounds check."""
    tile_m, tile_n = blocking.tile
    return m % tile_m == 0 and n % tile_n == 0 and k % blocking.depth == 0


def pipelined(
    blocking: Blocking,
    sizes: tuple[int, int, int],
    operands: tuple[Operand, Operand],
    values: dict[str, str],
    stores: Callable[[Cells], list[str]],
    *,
    checked: bool | None = None,
) -> str:
    """wgsl/matmul_pipelined.wgsl filled for an (m, n, k) product of `operands` (A, B), `values` its
    A_BASE, B_BASE and DECODE, `stores` the statements storing each output's sum. The loads are
    bounds-checked where the shape has ragged edges (`checked` forces it either way: bench/matmul.py)."""
    m, n, k = sizes
    tile_m, tile_n = blocking.tile
    checked = not interior(blocking, m, n, k) if checked is None else checked
    ra, fa, sa = _fetch("a", operands[0], "row0", tile_side=tile_m, k=k, blocking=blocking, checked=checked)
    rb, fb, sb = _fetch("b", operands[1], "col0", tile_side=tile_n, k=k, blocking=blocking, checked=checked)

    def stage(tile: int) -> list[str]:
        return [line.replace("[nxt]", f"[{tile}]") for line in sa + sb]

    groups = blocking.cols // 4
    accumulators = [f"var c{i}_{h} = vec4<f32>(0.0);" for i in range(blocking.rows) for h in range(groups)]
    cells = [
        (f"c{i}_{h}[{c}]", f"{SPAN * (i // 4)}u + 4u * ty + {i % 4}u", f"{SPAN * h + c}u + 4u * tx")
        for i in range(blocking.rows)
        for h in range(groups)
        for c in range(4)
    ]
    tx, ty = _lanes(blocking)
    return template("matmul_pipelined").fill(
        **values,
        A_QUADS=f"{tile_m // 4}u",
        B_QUADS=f"{tile_n // 4}u",
        DEPTH=f"{blocking.depth}u",
        STAGES=f"{blocking.stages}u",
        ORIGIN=_origin(blocking, m, n),
        TX=tx,
        TY=ty,
        ACCUMULATORS=accumulators,
        REGISTERS=ra + rb,
        **_slices(blocking, k, fa + fb, stage),
        STORES=stores(cells),
    )


def operands(kernel: Kernel, b: w.Bindings) -> tuple[Operand, Operand]:
    """A and B of a matmul kernel as the pipelined tiles read them (every vec4 index from A_BASE and
    B_BASE, the batch entry's starts)."""
    a, bm = kernel.inputs[:2]
    (am, ak), (bk, bn) = a.strides[-2:], bm.strides[-2:]
    *_, m, n = kernel.out.shape
    k = a.shape[-1]

    def reader(buffer: int) -> Callable[[str], str]:
        return lambda index: b.read(buffer, index, vec4=True)

    return (
        Operand(reader(a.buffer), "a_base", am, ak, m, quads_along_k(ak, am, k)),
        Operand(reader(bm.buffer), "b_base", bn, bk, n, quads_along_k(bk, bn, k)),
    )


def matmul(
    kernel: Kernel, schedule: Schedule, b: w.Bindings, values: dict[str, str], stores: Callable[[Cells], list[str]]
) -> tuple[str, tuple[int, int, int]]:
    """The kernel's source and workgroups in the blocking its variant names (BLOCKINGS); `values` its
    A_BASE, B_BASE, DECODE (and sizes), `stores` the statements storing each output's sum."""
    blocking = BLOCKINGS[kernel.variant]
    a = kernel.inputs[0]
    *batch, m, n = kernel.out.shape
    k = a.shape[-1]
    frame = {name: values[name] for name in ("A_BASE", "B_BASE", "DECODE")}
    source = pipelined(blocking, (m, n, k), operands(kernel, b), frame, stores)
    declared = b.declarations(schedule, frozenset(v.buffer for v in kernel.inputs[:2]))
    tile_m, tile_n = blocking.tile
    groups = (-(-n // tile_n), -(-m // tile_m), math.prod(batch))
    return declared + "\n" + w.helpers(kernel.expr) + "\n" + source, groups


BLOCK_GROUP = 64  # wgsl/matmul_block.wgsl's workgroup size


def _block_step(block: tuple[int, int], a: Operand, b: Operand, sizes: tuple[int, int]) -> list[str]:
    """Four steps of K from k0 for a rows x cols `block` at (row0, col0) of an m x n output (`sizes`): the
    loads (a row or column past a ragged edge clamped to the last one: read, never stored), then the
    multiply-adds in K's order."""
    (rows, cols), (m, n), groups = block, sizes, block[1] // 4

    def at(origin: str, first: int, side: int, size: int, step: int) -> str:
        """Row or column `origin` + `first`, clamped to the last one that starts `step` inside `side`."""
        return f"min({origin} + {first}u, {side - step}u)" if side % size else f"({origin} + {first}u)"

    def load(name: str, op: Operand, index: str) -> str:
        return f"let {name} = {op.read(f'({op.base} + {index}) / 4u')};"

    lines, a_at, b_at = [], {}, {}
    if a.along_k:  # a vec4 of K per row: a[row, k0 + kk] is ar[kk]
        lines += [load(f"a{r}", a, f"{at('row0', r, m, rows, 1)} * {a.across}u + k0") for r in range(rows)]
        a_at = {(r, kk): f"a{r}[{kk}]" for r in range(rows) for kk in range(4)}
    else:  # a vec4 of rows per step of K (M is a multiple of 4 then)
        for kk in range(4):
            lines += [
                load(f"a{kk}_{g}", a, f"(k0 + {kk}u) * {a.deep}u + {at('row0', 4 * g, m, rows, 4)}")
                for g in range(-(-rows // 4))
            ]
        a_at = {(r, kk): f"a{kk}_{r // 4}[{r % 4}]" for r in range(rows) for kk in range(4)}
    if b.along_k:  # a vec4 of K per column, regrouped into vec4 of columns per step of K
        lines += [load(f"q{c}", b, f"{at('col0', c, n, cols, 1)} * {b.across}u + k0") for c in range(cols)]
        quads = [[", ".join(f"q{4 * h + c}[{kk}]" for c in range(4)) for h in range(groups)] for kk in range(4)]
        b_at = {(kk, h): f"vec4<f32>({quads[kk][h]})" for kk in range(4) for h in range(groups)}
    else:  # a vec4 of columns per step of K (N is a multiple of 4 then)
        for kk in range(4):
            lines += [
                load(f"b{kk}_{h}", b, f"(k0 + {kk}u) * {b.deep}u + {at('col0', 4 * h, n, cols, 4)}")
                for h in range(groups)
            ]
        b_at = {(kk, h): f"b{kk}_{h}" for kk in range(4) for h in range(groups)}
    for kk in range(4):
        lines += [
            f"c{r}_{h} = fma(vec4<f32>({a_at[r, kk]}), {b_at[kk, h]}, c{r}_{h});"
            for r in range(rows)
            for h in range(groups)
        ]
    return lines


def blocks(
    kernel: Kernel, schedule: Schedule, b: w.Bindings, values: dict[str, str], stores: Callable[[Cells], list[str]]
) -> tuple[str, tuple[int, int, int]]:
    """The kernel's source and workgroups in the blocks its variant names (lower/variants.py's BLOCKS):
    wgsl/matmul_block.wgsl filled; `values` its A_BASE and B_BASE, `stores` the statements storing each
    output's sum."""
    rows, cols = BLOCKS[kernel.variant]
    *batch, m, n = kernel.out.shape
    k = kernel.inputs[0].shape[-1]
    a, bm = operands(kernel, b)
    across, cells, total = block_grid(kernel.out.shape, (rows, cols))
    decode, _ = w.decode("bi", tuple(batch), "b")
    source = template("matmul_block").fill(
        BLOCKS=f"{total}u",
        CELLS=f"{cells}u",
        ACROSS=f"{across}u",
        ROWS=f"{rows}u",
        COLS=f"{cols}u",
        K=f"{k}u",
        A_BASE=values["A_BASE"],
        B_BASE=values["B_BASE"],
        DECODE=decode,
        ACCUMULATORS=[f"var c{r}_{h} = vec4<f32>(0.0);" for r in range(rows) for h in range(cols // 4)],
        STEP=_block_step((rows, cols), a, bm, (m, n)),
        STORES=stores(
            [
                (f"c{r}_{h}[{c}]", f"{r}u", f"{4 * h + c}u")
                for r in range(rows)
                for h in range(cols // 4)
                for c in range(4)
            ]
        ),
    )
    declared = b.declarations(schedule, frozenset(v.buffer for v in kernel.inputs[:2]))
    return declared + "\n" + w.helpers(kernel.expr) + "\n" + source, w.grid(-(-total // BLOCK_GROUP))
