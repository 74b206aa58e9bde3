"""`scellis compile`: every stage of a program file printed, or every problem named."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from scellis.examples import digits_mlp, mlp
from scellis.guide import STAGE_TITLES
from scellis.levels import Level
from scellis.pipeline import compile_program


def scellis(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "scellis", *args], capture_output=True, text=True, check=False)


def test_prints_every_stage_and_the_key(tmp_path: Path) -> None:
    program = tmp_path / "digits.json"
    program.write_text(json.dumps(digits_mlp()))
    done = scellis("compile", str(program), "--level", "prod")
    assert done.returncode == 0, done.stderr
    for title in STAGE_TITLES:
        assert f"== {title} ==" in done.stdout
    assert done.stdout.rstrip().endswith(f"training-step key {compile_program(digits_mlp()).at(Level.PROD).key}")


def test_one_stage_and_batch(tmp_path: Path) -> None:
    program = tmp_path / "digits.json"
    program.write_text(json.dumps(digits_mlp()))
    done = scellis("compile", str(program), "--level", "debug", "--stage", "typed IR", "--batch", "8")
    assert done.returncode == 0 and "%pixels: f32[8,64] data" in done.stdout and "backward IR" not in done.stdout
    assert scellis("compile", str(program), "--level", "prod", "--stage", "nope").returncode == 2


def test_bad_files_are_named(tmp_path: Path) -> None:
    missing = scellis("compile", str(tmp_path / "none.json"), "--level", "prod")
    assert missing.returncode == 2 and "cannot read" in missing.stderr
    broken = tmp_path / "broken.json"
    data = digits_mlp()
    data["nodes"][2]["params"]["features"] = 0
    broken.write_text(json.dumps(data))
    done = scellis("compile", str(broken), "--level", "prod")
    assert done.returncode == 2
    assert "node 'hidden' (nodes[2].params.features): must be at least 1, got 0" in done.stderr


def test_the_level_is_required(tmp_path: Path) -> None:
    program = tmp_path / "digits.json"
    program.write_text(json.dumps(digits_mlp()))
    done = scellis("compile", str(program))
    assert done.returncode == 2 and "--level" in done.stderr
    debug = scellis("compile", str(program), "--level", "debug", "--stage", "kernel schedule (training step)")
    assert debug.returncode == 0 and "level debug" in debug.stdout and "tile128" not in debug.stdout


def test_compiles_for_a_device_that_binds_more_buffers(tmp_path: Path) -> None:
    program = tmp_path / "digits.json"
    program.write_text(json.dumps(digits_mlp()))

    def kernels(*extra: str) -> int:
        done = scellis("compile", str(program), "--level", "prod", "--stage", "kernel schedule (training step)", *extra)
        assert done.returncode == 0, done.stderr
        line = next(x for x in done.stdout.splitlines() if x.startswith("schedule "))
        return int(line.split(": ")[1].split()[0])

    assert kernels("--bindings", "16") < kernels() == kernels("--bindings", "8")
    too_few = scellis("compile", str(program), "--level", "prod", "--bindings", "4")
    assert too_few.returncode == 2 and "--bindings 4" in too_few.stderr


def test_compiles_for_a_software_adapter(tmp_path: Path) -> None:
    """--software: the matmuls of the 784-512-512-10 MLP that read as vec4 take blocks, not tiles."""
    program = tmp_path / "mlp.json"
    program.write_text(json.dumps(mlp(784, [512, 512], 10, 256)))
    stage = ("--level", "prod", "--stage", "kernel schedule (training step)")
    tiles, blocks = scellis("compile", str(program), *stage), scellis("compile", str(program), *stage, "--software")
    assert tiles.returncode == blocks.returncode == 0, blocks.stderr
    assert "block8x8" in blocks.stdout and "block" not in tiles.stdout and "-pipe" in tiles.stdout
