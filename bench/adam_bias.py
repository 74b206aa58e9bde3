"""Adam's bias corrections on each device against an independent float64 Adam: the max relative error of
the corrections 1 - beta1^t and 1 - beta2^t and of the update, for t = 1..5 (five steps from a zero
state) and for one step at t = 1000, for the corrections as the optimizer computes them and, in the same
run, as it computed them before (1 - pow(beta, t + 1) in float32 on the device).

    .venv/bin/python bench/adam_bias.py

Devices: the reference device (numpy float64 kernels), WebGPU through wgpu-py (lavapipe here) and the
CPU path (wasmtime), at debug and prod. The corrections are the optimizer's own expression
(optim.optimizers.bias_corrections) compiled as a function of the step counter. The update is
(p - p_new) / lr of apply_optimizer's step on loss = sum(w * c), whose gradient c is exact; each step gets
fresh small parameters (|p| < 2**-6, which only AdamW's decay reads), so the float32 rounding of p_new
is ~6e-8 of the update. The device carries m, v and the step counter from step to step (the schedule's
carry copies).
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "py"))

from scellis.autodiff import grad
from scellis.graph.settings import Optimizer
from scellis.ir import Function
from scellis.levels import Level
from scellis.ops import DType, Node, Op, const, make
from scellis.ops.build import add, cast, mul, sub, total
from scellis.ops.defs import Role
from scellis.ops.node import input_node
from scellis.optim import apply_optimizer, optimizers
from scellis.optim.optimizers import STEP
from scellis.plan import lowered
from scellis.runtime.cpu.device import CpuDevice
from scellis.runtime.reference.device import ReferenceDevice
from scellis.runtime.webgpu.native import WgpuDevice

SHAPE = (256,)
LR = 1.0  # the update as large as p_new: its float32 rounding hides nothing
OPTIMIZERS = (Optimizer(kind="adam", lr=LR), Optimizer(kind="adamw", lr=LR, weight_decay=0.01))
LEVELS = (Level.DEBUG, Level.PROD)
WIRE = {DType.F32: "<f4", DType.I32: "<i4"}


def step_function(opt: Optimizer) -> Function:
    w, c = input_node("w", Role.PARAM, DType.F32, SHAPE), input_node("c", Role.DATA, DType.F32, SHAPE)
    fn = Function("linear.train", (w, c), (("loss", total(mul(w, c))),))
    return apply_optimizer(grad(fn, "loss", ["w"]), opt, ["w"])


def pow_corrections(opt: Optimizer, t: Node) -> tuple[Node, Node]:
    """The corrections as the optimizer computed them before: 1 - beta^(t + 1) in float32."""
    t1 = add(t, const(1.0))
    return (
        sub(const(1.0), make(Op.POW, const(opt.beta1), t1)),
        sub(const(1.0), make(Op.POW, const(opt.beta2), t1)),
    )


FORMULAS = {"-expm1((t+1) ln beta)": optimizers.bias_corrections, "1 - pow(beta, t+1), before": pow_corrections}


def corrections_function(opt: Optimizer) -> Function:
    step = input_node(STEP, Role.STATE, DType.I32, ())
    c1, c2 = optimizers.bias_corrections(opt, cast(step, DType.F32))
    return Function("corrections", (step,), (("c1", c1), ("c2", c2)))


def adam64(opt: Optimizer, p: np.ndarray, g: np.ndarray, *, m: np.ndarray, v: np.ndarray, t: int) -> tuple:
    """One Adam (AdamW) step in float64, written out: the update (p - p_new) / lr and the new m and v."""
    m = opt.beta1 * m + (1 - opt.beta1) * g
    v = opt.beta2 * v + (1 - opt.beta2) * g * g
    update = (m / (1 - opt.beta1**t)) / (np.sqrt(v / (1 - opt.beta2**t)) + opt.eps)
    if opt.kind == "adamw":
        update = update + opt.weight_decay * p
    return update, m, v


def relative(got: np.ndarray, want: np.ndarray) -> float:
    return float(np.max(np.abs(np.asarray(got, np.float64) - want) / np.abs(want)))


def f32(x: np.ndarray) -> np.ndarray:
    return np.asarray(x, np.float32).astype(np.float64)


def correction_errors(device: object, opt: Optimizer, level: Level, steps: list[int]) -> float:
    fn = corrections_function(opt)
    compiled = asyncio.run(device.compile(lowered(fn, level)))  # type: ignore[attr-defined]
    worst = 0.0
    for step in steps:
        compiled.write(STEP, np.int32(step).tobytes())
        compiled.run()
        for name, beta in (("c1", opt.beta1), ("c2", opt.beta2)):
            got = np.frombuffer(compiled.read(name), "<f4")[0]
            worst = max(worst, relative(got, np.float64(1 - beta ** (step + 1))))
    return worst


def update_errors(device: object, opt: Optimizer, level: Level, *, start: int, steps: int, seed: int) -> float:
    """Steps from `start` (the counter's value: t = start + 1 first) with random m, v (zero from 0)."""
    rng = np.random.default_rng(seed)
    sign = rng.choice([-1.0, 1.0], SHAPE)
    m = f32(sign * rng.uniform(0.5, 1.5, SHAPE)) if start else np.zeros(SHAPE)
    v = f32(m * m * rng.uniform(1.0, 3.0, SHAPE)) if start else np.zeros(SHAPE)
    fn = step_function(opt)
    compiled = asyncio.run(device.compile(lowered(fn, level)))  # type: ignore[attr-defined]
    for name, value in (("opt.m/w", m), ("opt.v/w", v)):
        compiled.write(name, value.astype("<f4").tobytes())
    compiled.write(STEP, np.int32(start).tobytes())
    worst = 0.0
    for t in range(start + 1, start + steps + 1):
        p, g = f32(rng.uniform(-(2**-6), 2**-6, SHAPE)), f32(sign * rng.uniform(0.5, 2.0, SHAPE))
        compiled.write("w", p.astype("<f4").tobytes())
        compiled.write("c", g.astype("<f4").tobytes())
        compiled.run()
        p_new = np.frombuffer(compiled.read("param/w"), "<f4").astype(np.float64)
        want, m, v = adam64(opt, p, g, m=m, v=v, t=t)
        worst = max(worst, relative((p - p_new) / opt.lr, want))
    return worst


def measure(device: object, level: Level) -> list[float]:
    """Max over Adam and AdamW: corrections t = 1..5, corrections t = 1000, updates t = 1..5, t = 1000."""
    rows = [
        [
            correction_errors(device, opt, level, [0, 1, 2, 3, 4]),
            correction_errors(device, opt, level, [999]),
            update_errors(device, opt, level, start=0, steps=5, seed=1),
            update_errors(device, opt, level, start=999, steps=1, seed=2),
        ]
        for opt in OPTIMIZERS
    ]
    return [max(column) for column in zip(*rows, strict=True)]


def main() -> None:
    gpu = WgpuDevice()
    devices = {
        "reference (numpy float64)": ReferenceDevice(),
        f"webgpu ({gpu.name})": gpu,
        "cpu (wasmtime)": asyncio.run(CpuDevice.open()),
    }
    print("max relative error against float64 Adam (Adam and AdamW, beta1 0.9, beta2 0.999)\n")
    print("| device | level | corrections as | corrections t=1..5 | t=1000 | update t=1..5 | t=1000 |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for label, device in devices.items():
        for level in LEVELS:
            for formula, corrections in FORMULAS.items():
                optimizers.bias_corrections = corrections  # apply_optimizer looks it up at each call
                cells = " | ".join(f"{e:.1e}" for e in measure(device, level))
                print(f"| {label} | {level.value} | {formula} | {cells} |")


if __name__ == "__main__":
    main()
