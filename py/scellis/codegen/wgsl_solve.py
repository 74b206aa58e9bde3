"""Stage: code. WGSL for SOLVE: Gaussian elimination with partial pivoting and back substitution in the
kernel's output (the augmented matrix [a | b], see Kind.SOLVE), step for step in the order of the CPU
path's kernel (wasm/cpu_solve.c). Two ways to split the work (lower.variants picks by n): small matrices
take one invocation each, running the C kernel's loops; larger ones one workgroup each, whose lanes split
each step's rows and columns, find the pivot by a fixed tree (the first row of largest |value|, compared as
bits, so a NaN never wins) and meet at storage barriers between steps. No atomics: results repeat bit for
bit on one device. The working copy is the output buffer, so no n or k meets a workgroup-memory limit."""

from __future__ import annotations

import math
from collections.abc import Callable

from scellis.codegen import wgsl_expr as w
from scellis.codegen.wgsl_dense import LANES, MAIN
from scellis.lower.kernels import Kernel, Schedule

Source = tuple[str, tuple[int, int, int]]

PIVOT_KEY = """
fn sc_pivot_key(v: f32) -> i32 {
  let bits = bitcast<u32>(v) & 0x7fffffffu;
  return select(i32(bits), -1, bits > 0x7f800000u);
}
"""


def _pivot_tree() -> str:
    """The lanes' best rows combined pairwise in a fixed order: the larger key wins, ties to the lower row."""
    steps, stride = [], LANES // 2
    while stride:
        steps.append(
            f"    if (lid.x < {stride}u) {{\n"
            f"      let ok = best_key[lid.x + {stride}u];\n"
            f"      let orow = best_row[lid.x + {stride}u];\n"
            "      if (ok > best_key[lid.x] || (ok == best_key[lid.x] && orow < best_row[lid.x])) {\n"
            "        best_key[lid.x] = ok;\n"
            "        best_row[lid.x] = orow;\n"
            "      }\n"
            "    }\n"
            "    workgroupBarrier();"
        )
        stride //= 2
    return "\n".join(steps)


def solve(kernel: Kernel, schedule: Schedule, b: w.Bindings) -> Source:
    """out[m] = [a | b] of matrix m, reduced until its last k columns hold x: by one invocation per matrix
    (variant solve-invocation, small n: no barriers, many matrices a workgroup) or by one workgroup."""
    a_view, b_view = kernel.inputs[:2]
    *batch, n, width = kernel.out.shape
    k, count = width - n, math.prod(batch)
    read_a = b.read(a_view.buffer, f"{a_view.offset}u + m * {n * n}u + r * {n}u + c")
    read_b = b.read(b_view.buffer, f"{b_view.offset}u + m * {n * k}u + r * {k}u + c - {n}u")
    copy = f"if (c < {n}u) {{ out[base + e] = {read_a}; }} else {{ out[base + e] = {read_b}; }}"
    header = b.declarations(schedule) + "\n" + PIVOT_KEY
    if kernel.variant == "solve-invocation":
        return header + _per_invocation(kernel, copy), _grid(-(-count // LANES))
    return header + _per_workgroup(kernel, copy), _grid(count)


def _grid(groups: int) -> tuple[int, int, int]:
    return (min(groups, 65535), -(-groups // 65535), 1)


def _cell(width: int) -> Callable[[str, str], str]:
    return lambda row, col: f"out[base + {row} * {width}u + {col}]"


def _per_invocation(kernel: Kernel, copy: str) -> str:
    """Matrix m by invocation m, in the C kernel's loops."""
    *batch, n, width = kernel.out.shape
    t = _cell(width)
    return f"""{MAIN.format(size=LANES)}
  let m = gid.x + gid.y * groups.x * {LANES}u;
  if (m >= {math.prod(batch)}u) {{ return; }}
  let base = {kernel.out.offset}u + m * {n * width}u;
  for (var e = 0u; e < {n * width}u; e = e + 1u) {{
    let r = e / {width}u;
    let c = e % {width}u;
    {copy}
  }}
  for (var j = 0u; j < {n}u; j = j + 1u) {{
    var key = -1;
    var p = j;
    for (var r = j; r < {n}u; r = r + 1u) {{
      let candidate = sc_pivot_key({t("r", "j")});
      if (candidate > key) {{ key = candidate; p = r; }}
    }}
    if (p != j) {{
      for (var c = j; c < {width}u; c = c + 1u) {{
        let s = {t("j", "c")};
        {t("j", "c")} = {t("p", "c")};
        {t("p", "c")} = s;
      }}
    }}
    for (var r = j + 1u; r < {n}u; r = r + 1u) {{
      let f = {t("r", "j")} / {t("j", "j")};
      for (var c = j + 1u; c < {width}u; c = c + 1u) {{
        {t("r", "c")} = {t("r", "c")} - f * {t("j", "c")};
      }}
    }}
  }}
  for (var s = 0u; s < {n}u; s = s + 1u) {{
    let i = {n - 1}u - s;
    for (var c = {n}u; c < {width}u; c = c + 1u) {{
      {t("i", "c")} = {t("i", "c")} / {t("i", "i")};
    }}
    for (var r = 0u; r < i; r = r + 1u) {{
      for (var c = {n}u; c < {width}u; c = c + 1u) {{
        {t("r", "c")} = {t("r", "c")} - {t("r", "i")} * {t("i", "c")};
      }}
    }}
  }}
}}"""


def _per_workgroup(kernel: Kernel, copy: str) -> str:
    """Matrix m by workgroup m: its lanes split each step's rows and columns."""
    *batch, n, width = kernel.out.shape
    k = width - n
    t = _cell(width)
    return f"""var<workgroup> best_key: array<i32, {LANES}>;
var<workgroup> best_row: array<u32, {LANES}>;
{MAIN.format(size=LANES)}
  let m = wid.x + wid.y * groups.x;
  if (m >= {math.prod(batch)}u) {{ return; }}
  let base = {kernel.out.offset}u + m * {n * width}u;
  for (var e = lid.x; e < {n * width}u; e = e + {LANES}u) {{
    let r = e / {width}u;
    let c = e % {width}u;
    {copy}
  }}
  storageBarrier();
  for (var j = 0u; j < {n}u; j = j + 1u) {{
    var key = -1;
    var row = j;
    for (var r = j + lid.x; r < {n}u; r = r + {LANES}u) {{
      let candidate = sc_pivot_key({t("r", "j")});
      if (candidate > key) {{ key = candidate; row = r; }}
    }}
    best_key[lid.x] = key;
    best_row[lid.x] = row;
    workgroupBarrier();
{_pivot_tree()}
    let p = best_row[0];
    workgroupBarrier();
    if (p != j) {{
      for (var c = j + lid.x; c < {width}u; c = c + {LANES}u) {{
        let s = {t("j", "c")};
        {t("j", "c")} = {t("p", "c")};
        {t("p", "c")} = s;
      }}
    }}
    storageBarrier();
    let cols = {width - 1}u - j;
    for (var e = lid.x; e < ({n - 1}u - j) * cols; e = e + {LANES}u) {{
      let r = j + 1u + e / cols;
      let c = j + 1u + e % cols;
      let f = {t("r", "j")} / {t("j", "j")};
      {t("r", "c")} = {t("r", "c")} - f * {t("j", "c")};
    }}
    storageBarrier();
  }}
  for (var s = 0u; s < {n}u; s = s + 1u) {{
    let i = {n - 1}u - s;
    for (var c = {n}u + lid.x; c < {width}u; c = c + {LANES}u) {{
      {t("i", "c")} = {t("i", "c")} / {t("i", "i")};
    }}
    storageBarrier();
    for (var e = lid.x; e < i * {k}u; e = e + {LANES}u) {{
      let r = e / {k}u;
      let c = {n}u + e % {k}u;
      {t("r", "c")} = {t("r", "c")} - {t("r", "i")} * {t("i", "c")};
    }}
    storageBarrier();
  }}
}}"""
