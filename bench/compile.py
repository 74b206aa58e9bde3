"""Compile-time benchmark: validate + typed IR + autodiff + optimizer (+ eval and init functions),
for programs of 10, 100 and 1,000 nodes, in CPython here and in Pyodide in headless Chromium.

    .venv/bin/python bench/compile.py [--runs 5]

The same Python code is timed in both (it is sent to the page as text). Target: 1,000 nodes in at
most 1 s in Pyodide. The test build in dist-test/ must be built (`python build.py --test`).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "e2e"), str(ROOT / "py")]

from appdriver import served_app  # noqa: E402

SIZES = (10, 100, 1000)
TARGET_S = 1.0

TIMING = """
import json, statistics, time
from scellis.examples import deep_chain
from scellis.pipeline import compile_program

def _median_compile(nodes, runs):
    program = deep_chain(nodes)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        compiled = compile_program(program)
        times.append(time.perf_counter() - start)
    return {"program_nodes": len(program["nodes"]), "ir_nodes": len(compiled.step.nodes()),
            "median_s": statistics.median(times), "min_s": min(times)}

json.dumps({n: _median_compile(n, RUNS) for n in SIZES})
"""


def in_cpython(runs: int) -> dict:
    scope: dict = {"RUNS": runs, "SIZES": SIZES}
    body, last = TIMING.rsplit("\n", 2)[0], TIMING.strip().rsplit("\n", 1)[1]
    exec(body, scope)  # the same text the page runs
    return {int(k): v for k, v in json.loads(eval(last, scope)).items()}


def in_pyodide(runs: int) -> dict:
    with served_app(ROOT / "dist-test", webgpu=False) as app:
        code = f"RUNS = {runs}\nSIZES = {SIZES!r}\n{TIMING}"
        result = app.page.evaluate("(code) => window.scellis.python(code)", code)
    return {int(k): v for k, v in json.loads(result).items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    here, browser = in_cpython(args.runs), in_pyodide(args.runs)
    print(f"compile time (validate + IR + autodiff + optimizer + eval + init), median of {args.runs}\n")
    print("| program nodes | IR nodes (training step) | CPython | Pyodide (Chromium) | Pyodide / CPython |")
    print("| --- | --- | --- | --- | --- |")
    for n in SIZES:
        a, b = here[n], browser[n]
        ratio = b["median_s"] / a["median_s"]
        print(
            f"| {a['program_nodes']} | {a['ir_nodes']} | {a['median_s'] * 1000:.1f} ms "
            f"| {b['median_s'] * 1000:.1f} ms | {ratio:.2f} |"
        )
    worst = browser[max(SIZES)]["median_s"]
    verdict = "meets" if worst <= TARGET_S else "MISSES"
    print(
        f"\n1,000 nodes in Pyodide: {worst:.3f} s — {verdict} the target of {TARGET_S:.0f} s ({worst / TARGET_S:.2f} x)"
    )


if __name__ == "__main__":
    main()
