"""Memory-planning benchmark: the time of the plan stage (update in place, lifetimes and slots, the
breakdown by category) for programs of 10, 100, 1,000 and 10,000 nodes, in CPython here and in Pyodide
in headless Chromium; and, per example program, the bytes the plan allocates against one allocation per
buffer.

    .venv/bin/python bench/plan.py [--runs 5] [--sizes 10,100,1000,10000]

The same Python code is timed in both (sent to the page as text). The plan stage is timed apart from the
stages before it: compiling the program (IR, gradients, optimizer) and lowering it to kernels are timed
once each and reported beside it, since a plan of a new program waits for them too. Target: 1,000 nodes
planned in at most 200 ms in Pyodide. The app in dist/ must be built.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "py"))
sys.path.insert(0, str(ROOT / "e2e"))

TARGET_S = 0.2

TIMING = """
import json, statistics, time
from scellis.examples import deep_chain
from scellis.levels import Level
from scellis.lower import lower
from scellis.pipeline import compile_program
from scellis.plan import plan_memory, update_in_place
from scellis.plan.breakdown import breakdown, categories

def _median_plan(nodes, runs):
    start = time.perf_counter()
    compiled = compile_program(deep_chain(nodes))
    compiling = time.perf_counter() - start
    schedule = lower(compiled.step, Level.PROD)
    lowering = time.perf_counter() - start - compiling
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        merged = update_in_place(schedule)
        memory = plan_memory(merged)
        breakdown(merged, memory, categories(merged, compiled.step, compiled.forward.fn, compiled.backward))
        times.append(time.perf_counter() - start)
    return {"ir_nodes": len(compiled.step.nodes()), "kernels": len(schedule.kernels),
            "buffers": len(schedule.buffers), "median_s": statistics.median(times),
            "compile_s": compiling, "lower_s": lowering}

json.dumps({n: _median_plan(n, RUNS) for n in SIZES})
"""


def in_cpython(runs: int, sizes: tuple[int, ...]) -> dict:
    scope: dict = {"RUNS": runs, "SIZES": sizes}
    body, last = TIMING.rsplit("\n", 2)[0], TIMING.strip().rsplit("\n", 1)[1]
    exec(body, scope)  # the same text the page runs
    return {int(k): v for k, v in json.loads(eval(last, scope)).items()}


def in_pyodide(runs: int, sizes: tuple[int, ...]) -> dict:
    from appdriver import served_app

    with served_app(ROOT / "dist-test", webgpu=False) as app:
        code = f"RUNS = {runs}\nSIZES = {sizes!r}\n{TIMING}"
        app.page.set_default_timeout(0)  # 10,000 nodes take minutes in Pyodide
        result = app.page.evaluate("(code) => window.scellis.python(code)", code)
    return {int(k): v for k, v in json.loads(result).items()}


def examples() -> list[str]:
    """Per example: the training step's bytes, planned against one allocation per buffer."""
    from scellis.examples import char_transformer, digits_cnn, digits_mlp, mlp
    from scellis.levels import Level
    from scellis.lower import lower
    from scellis.pipeline import compile_program
    from scellis.plan import plan_memory, update_in_place

    lines = ["| example (training step, prod) | one allocation per buffer | planned | ratio |", "| --- " * 4 + "|"]
    for name, program in (
        ("digits MLP 64-128-10, batch 64", digits_mlp()),
        ("digits CNN, batch 64", digits_cnn()),
        ("MLP 784-512-512-10, batch 256", mlp(784, [512, 512], 10, 256)),
        ("transformer block (context 16, width 32), batch 32", char_transformer()),
    ):
        schedule = lower(compile_program(program).step, Level.PROD)
        naive, planned = sum(b.nbytes for b in schedule.buffers), plan_memory(update_in_place(schedule)).allocated
        lines.append(f"| {name} | {naive:,} | {planned:,} | {naive / planned:.2f}x |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--sizes", default="10,100,1000,10000", help="program sizes in nodes (deep_chain)")
    args = parser.parse_args()
    sizes = tuple(int(s) for s in args.sizes.split(","))
    here, browser = in_cpython(args.runs, sizes), in_pyodide(args.runs, sizes)
    print(f"plan stage (update in place + slots + breakdown), median of {args.runs}\n")
    print("| program nodes | IR nodes | kernels | buffers | CPython | Pyodide (Chromium) | Pyodide / CPython |")
    print("| --- " * 7 + "|")
    for n in sizes:
        a, b = here[n], browser[n]
        print(
            f"| {n} | {a['ir_nodes']} | {a['kernels']} | {a['buffers']} | {a['median_s'] * 1000:.1f} ms "
            f"| {b['median_s'] * 1000:.1f} ms | {b['median_s'] / a['median_s']:.2f} |"
        )
    if 1000 in browser:
        worst = browser[1000]["median_s"]
        verdict = "meets" if worst <= TARGET_S else "MISSES"
        share = worst / TARGET_S
        print(f"\n1,000 nodes in Pyodide: {worst * 1000:.0f} ms — {verdict} the target of 200 ms ({share:.2f}x)")
    print("\nthe stages before the plan, one run each (compile: IR, gradients, optimizer; lower: kernels)\n")
    print("| program nodes | compile CPython | lower CPython | compile Pyodide | lower Pyodide |")
    print("| --- " * 5 + "|")
    for n in sizes:
        a, b = here[n], browser[n]
        print(
            f"| {n} | {a['compile_s']:.2f} s | {a['lower_s']:.2f} s | {b['compile_s']:.2f} s | {b['lower_s']:.2f} s |"
        )
    print()
    print("\n".join(examples()))


if __name__ == "__main__":
    main()
