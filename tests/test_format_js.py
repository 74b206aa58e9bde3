"""app/src/format.js under Node: what the page says about the engine, its self-check included."""

from __future__ import annotations

from pathlib import Path

from nodejs import run_node

SRC = (Path(__file__).resolve().parents[1] / "app" / "src").as_uri()
PRELUDE = f"""
import * as format from "{SRC}/format.js";
const check = (ok) => ({{ device: "d", level: "debug", kernels: ["matmul [dot]", "reduce"], ok,
  outputs_sha256: "67edfee7e3f2cf20a17b7849274baeb75820eb3739fd8c25a8fa1327e907e780" }});
const build = {{ engine_version: "0.1.0+abc", tools: {{ pyodide: "0.27.0" }} }};
const report = {{ engine_version: "0.1.0+abc", python: "CPython 3.12", environment: "browser (Pyodide)",
  cpu_check: check(true), webgpu_check: null }};
const out = {{}};
"""


def test_the_engine_facts_say_what_the_self_check_ran_and_found() -> None:
    out = run_node(
        PRELUDE,
        """
out.cpu = Object.fromEntries(format.engineFacts(report, build, 1500));
out.both = Object.fromEntries(format.engineFacts({ ...report, webgpu_check: check(false) }, build, 1500));
""",
    )
    assert out["cpu"]["CPU path self-check"] == (
        "matmul [dot] + reduce at debug: agrees with float64; output 67edfee7e3f2cf20…"
    )
    assert "WebGPU self-check" not in out["cpu"] and out["cpu"]["Ready in"] == "1.50 s"
    assert out["both"]["WebGPU self-check"].startswith("matmul [dot] + reduce at debug: DISAGREES with float64")
