"""Stage: code. WGSL for SORT and SORT_GRAD along the last axis of [rows, R] views (Kind.SORT). Each
invocation takes one element i and counts its rank: the keys smaller than its own plus the equal keys
before it, over the whole row, read a tile of 256 keys at a time into workgroup memory. That is O(R^2) a
row, the same stable order as the CPU path's merge sort. Keys are made from the bits (WGSL may assume
floats are never NaN, so no float comparison decides anything): NaN after +inf, -0.0 equal to 0.0.
SORT writes out[rank(i)] = x[i] (ranks are a permutation: every output is written once); SORT_GRAD
writes out[i] = g[rank(i)]. No atomics: the bytes repeat on every run."""

from __future__ import annotations

import math

from scellis.codegen import wgsl_expr as w
from scellis.codegen.wgsl_dense import MAIN
from scellis.lower.kernels import Kernel, Kind, Schedule

Source = tuple[str, tuple[int, int, int]]
TILE = 256

SORT_KEY = """
fn sc_sort_key(bits: u32) -> u32 {
  let magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) { return 0xffffffffu; }
  if (magnitude == 0u) { return 0x80000000u; }
  return select(bits | 0x80000000u, ~bits, (bits & 0x80000000u) != 0u);
}
"""


def sort(kernel: Kernel, schedule: Schedule, b: w.Bindings) -> Source:
    """Workgroup (row, block) ranks the row's elements block * 256 + lane."""
    x = kernel.inputs[0]
    *rows, count = x.shape
    nrows, blocks = math.prod(rows), -(-count // TILE)
    decode, coords = w.decode("row", tuple(rows), "c")

    def x_at(position: str) -> str:
        return f"bitcast<u32>({b.read(x.buffer, w.index_expr(x, [*coords, position]))})"

    if kernel.kind is Kind.SORT:
        at, value = "rank", b.read(x.buffer, w.index_expr(x, [*coords, "i"]))
    else:
        g = kernel.inputs[1]
        at, value = "i", b.read(g.buffer, w.index_expr(g, [*coords, "rank"]))
    store = f"out[{w.index_expr(kernel.out, [*coords, at])}] = {value};"
    lines = "\n".join(f"  {line}" for line in decode)
    body = f"""var<workgroup> keys: array<u32, {TILE}>;
{MAIN.format(size=TILE)}
  let group = wid.x + wid.y * groups.x;
  let row = group / {blocks}u;
  if (row >= {nrows}u) {{ return; }}
{lines}
  let i = group % {blocks}u * {TILE}u + lid.x;
  let inside = i < {count}u;
  var key = 0u;
  if (inside) {{ key = sc_sort_key({x_at("i")}); }}
  var rank = 0u;
  for (var start = 0u; start < {count}u; start = start + {TILE}u) {{
    let j = start + lid.x;
    if (j < {count}u) {{ keys[lid.x] = sc_sort_key({x_at("j")}); }}
    workgroupBarrier();
    let n = min({TILE}u, {count}u - start);
    for (var t = 0u; t < n; t = t + 1u) {{
      let other = keys[t];
      rank = rank + select(0u, 1u, other < key || (other == key && start + t < i));
    }}
    workgroupBarrier();
  }}
  if (inside) {{
    {store}
  }}
}}"""
    groups = nrows * blocks
    return b.declarations(schedule) + "\n" + SORT_KEY + body, (min(groups, 65535), -(-groups // 65535), 1)
