"""Compile-time benchmark: the three stages a new program waits for before its first step, timed apart, for
programs of 10, 100 and 1,000 nodes, in CPython here and in Pyodide in headless Chromium:

- compile: validate + typed IR + autodiff + optimizer (+ evaluation and init functions), `compile_program`;
- lower: the training step to kernels at prod, `lower`;
- plan: that schedule updated in place and planned, `planned`.

    .venv/bin/python bench/compile.py [--runs 5] [--sizes 10,100,1000]

The same Python code is timed in both (it is sent to the page as text); each stage's figure is the median
of `--runs` runs, and so is their sum. Target: the three for 1,000 nodes in at most 1 s in Pyodide. The test
build in dist-test/ must be built (`python build.py --test`). To compare two checkouts, run this from each in
turn (interleaved, several times): it times the code of the checkout it is in.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "e2e"), str(ROOT / "py")]

STAGES = ("compile", "lower", "plan")
TARGET_S = 1.0

TIMING = """
import json, statistics, time
from scellis.examples import deep_chain
from scellis.levels import Level
from scellis.lower import lower
from scellis.pipeline import compile_program
from scellis.plan import planned

def _stages(nodes, runs):
    program = deep_chain(nodes)
    rows = []
    for _ in range(runs):
        start = time.perf_counter()
        compiled = compile_program(program)
        compiled_at = time.perf_counter()
        schedule = lower(compiled.step, Level.PROD)
        lowered_at = time.perf_counter()
        plan = planned(schedule)
        rows.append((compiled_at - start, lowered_at - compiled_at, time.perf_counter() - lowered_at))
        sizes = len(compiled.step.nodes()), len(plan.schedule.kernels)
        del compiled, schedule, plan  # freed here, not inside the next run's stages (a page's first program frees none)
    median = {stage: statistics.median(r[i] for r in rows) for i, stage in enumerate(("compile", "lower", "plan"))}
    return {"program_nodes": len(program["nodes"]), "ir_nodes": sizes[0], "kernels": sizes[1],
            "total": statistics.median(sum(r) for r in rows), **median}

json.dumps({n: _stages(n, RUNS) for n in SIZES})
"""


def in_cpython(runs: int, sizes: tuple[int, ...]) -> dict:
    scope: dict = {"RUNS": runs, "SIZES": sizes}
    body, last = TIMING.rsplit("\n", 2)[0], TIMING.strip().rsplit("\n", 1)[1]
    exec(body, scope)  # the same text the page runs
    return {int(k): v for k, v in json.loads(eval(last, scope)).items()}


def in_pyodide(runs: int, sizes: tuple[int, ...]) -> dict:
    from appdriver import served_app

    with served_app(ROOT / "dist-test", webgpu=False) as app:
        app.page.set_default_timeout(0)  # slow machines take minutes for the largest program
        code = f"RUNS = {runs}\nSIZES = {sizes!r}\n{TIMING}"
        result = app.page.evaluate("(code) => window.scellis.python(code)", code)
    return {int(k): v for k, v in json.loads(result).items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--sizes", default="10,100,1000", help="program sizes in nodes (deep_chain)")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    sizes = tuple(int(s) for s in args.sizes.split(","))
    here, browser = in_cpython(args.runs, sizes), in_pyodide(args.runs, sizes)
    print(f"compile + lower + plan of deep_chain(n), training step at prod, ms, median of {args.runs}\n")
    print("| program nodes | IR nodes | kernels | where | compile | lower | plan | total |")
    print("| --- " * 8 + "|")
    for n in sizes:
        for where, row in (("CPython", here[n]), ("Pyodide", browser[n])):
            cells = " | ".join(f"{row[stage] * 1000:.0f}" for stage in (*STAGES, "total"))
            print(f"| {row['program_nodes']} | {row['ir_nodes']} | {row['kernels']} | {where} | {cells} |")
    if args.json:
        args.json.write_text(json.dumps({"cpython": here, "pyodide": browser}, indent=1))
    worst = browser[max(sizes)]["total"]
    verdict = "meets" if worst <= TARGET_S else "MISSES"
    print(f"\n{max(sizes):,} nodes in Pyodide: {worst:.3f} s — {verdict} the target of {TARGET_S:.0f} s")


if __name__ == "__main__":
    main()
