"""Optimizers and schedules as IR, run on the reference, against independent numpy implementations."""

from __future__ import annotations

import math

import numpy as np
import pytest

from scellis.autodiff import grad
from scellis.graph.settings import Optimizer, Schedule
from scellis.ir import Function, structural_key, verify
from scellis.ir.function import input_name, toposort
from scellis.ir.owners import LOOP, Owners
from scellis.ops import DType, Op, const, make
from scellis.ops import defs as d
from scellis.ops.build import mul, sub, total
from scellis.ops.node import input_node
from scellis.optim import apply_optimizer, learning_rate
from scellis.optim.optimizers import STEP
from scellis.runtime.reference.oracle import run

SHAPES = {"w": (3, 4), "b": (4,)}


def quadratic() -> Function:
    """loss = 0.5 * sum((w - tw)^2) + 0.5 * sum((b - tb)^2): the gradient is (w - tw, b - tb)."""
    inputs, loss = [], None
    for name, shape in SHAPES.items():
        p = input_node(name, d.Role.PARAM, DType.F32, shape)
        target = input_node(f"t{name}", d.Role.DATA, DType.F32, shape)
        diff = sub(p, target)
        term = mul(total(mul(diff, diff)), const(0.5))
        loss = term if loss is None else make(Op.ADD, loss, term)
        inputs += [p, target]
    assert loss is not None
    return Function("quadratic", tuple(inputs), (("loss", loss),))


def numpy_steps(opt: Optimizer, values: dict, targets: dict, steps: int) -> tuple[dict, list[float]]:
    """The same updates written directly in numpy (float64)."""
    m = {k: np.zeros_like(v) for k, v in values.items()}
    v2 = {k: np.zeros_like(v) for k, v in values.items()}
    lrs = []
    for t in range(steps):
        lr = opt.lr
        lrs.append(lr)
        grads = {k: values[k] - targets[k] for k in values}
        if opt.clip_norm is not None:
            norm = math.sqrt(sum(float(np.sum(g * g)) for g in grads.values()))
            grads = {k: g * min(1.0, opt.clip_norm / (norm + 1e-6)) for k, g in grads.items()}
        for k, p in list(values.items()):
            g = grads[k]
            if opt.weight_decay and opt.kind != "adamw":
                g = g + opt.weight_decay * p
            if opt.kind == "sgd":
                values[k] = p - lr * g
            elif opt.kind == "momentum":
                m[k] = opt.momentum * m[k] + g
                values[k] = p - lr * (g + opt.momentum * m[k] if opt.nesterov else m[k])
            else:
                m[k] = opt.beta1 * m[k] + (1 - opt.beta1) * g
                v2[k] = opt.beta2 * v2[k] + (1 - opt.beta2) * g * g
                update = (m[k] / (1 - opt.beta1 ** (t + 1))) / (np.sqrt(v2[k] / (1 - opt.beta2 ** (t + 1))) + opt.eps)
                if opt.kind == "adamw":
                    update = update + opt.weight_decay * p
                values[k] = p - lr * update
    return values, lrs


CASES = [
    Optimizer(kind="sgd", lr=0.1),
    Optimizer(kind="sgd", lr=0.1, weight_decay=0.01),
    Optimizer(kind="momentum", lr=0.05, momentum=0.9),
    Optimizer(kind="momentum", lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.001),
    Optimizer(kind="adam", lr=0.01),
    Optimizer(kind="adam", lr=0.01, weight_decay=0.01, clip_norm=0.5),
    Optimizer(kind="adamw", lr=0.01, weight_decay=0.1),
    Optimizer(kind="adam", lr=0.01, beta1=0.0),  # no logarithm of beta1: its correction is 1
    Optimizer(kind="sgd", lr=0.1, clip_norm=1.0),
]


@pytest.mark.parametrize("opt", CASES, ids=lambda o: f"{o.kind}-wd{o.weight_decay}-clip{o.clip_norm}-n{o.nesterov}")
def test_updates_match_numpy(opt: Optimizer) -> None:
    fn = apply_optimizer(grad(quadratic(), "loss", list(SHAPES)), opt, list(SHAPES))
    verify(fn)
    rng = np.random.default_rng(0)
    values = {k: rng.standard_normal(s) for k, s in SHAPES.items()}
    targets = {k: rng.standard_normal(s) for k, s in SHAPES.items()}
    expected, lrs = numpy_steps(opt, {k: v.copy() for k, v in values.items()}, targets, steps=4)
    state = {input_name(n): np.zeros(n.shape) for n in fn.inputs if input_name(n).startswith("opt.")}
    state[STEP] = np.array(0, dtype=np.int32)
    for step in range(4):
        out = run(fn, {**values, **{f"t{k}": v for k, v in targets.items()}, **state})
        values = {k: out[f"param/{k}"] for k in SHAPES}
        state = {name: out[f"state/{name}"] for name in state}
        assert float(out["lr"]) == pytest.approx(lrs[step])
    assert int(state[STEP]) == 4
    for k in SHAPES:
        np.testing.assert_allclose(values[k], expected[k], rtol=1e-12, atol=1e-12)


def test_frozen_parameters_get_no_update_and_no_state() -> None:
    fn = apply_optimizer(grad(quadratic(), "loss", ["w"]), Optimizer(kind="adam"), ["w"])
    names = {n.arg.name for n in fn.inputs}
    assert "opt.m/w" in names and "opt.m/b" not in names
    assert "param/b" not in dict(fn.outputs)


def lr_at(opt: Optimizer, step: int) -> float:
    fn = Function("lr", (), (("lr", learning_rate(opt, const(float(step)))),))
    return float(run(fn, {})["lr"])


@pytest.mark.parametrize("step", [0, 1, 5, 9, 10, 11, 99, 250, 1000])
def test_schedules(step: int) -> None:
    lr = 0.1
    assert lr_at(Optimizer(lr=lr), step) == pytest.approx(lr)
    decay = Optimizer(lr=lr, schedule=Schedule(kind="step", step_size=10, gamma=0.5))
    assert lr_at(decay, step) == pytest.approx(lr * 0.5 ** (step // 10))
    cosine = Optimizer(lr=lr, schedule=Schedule(kind="cosine", total_steps=100, min_lr=0.01))
    expected = 0.01 + (lr - 0.01) * 0.5 * (1 + math.cos(math.pi * min(step, 100) / 100))
    assert lr_at(cosine, step) == pytest.approx(expected)
    warm = Optimizer(lr=lr, schedule=Schedule(kind="cosine", total_steps=100, warmup_steps=10))
    after = max(step - 10, 0)
    expected = min(1.0, (step + 1) / 10) * lr * 0.5 * (1 + math.cos(math.pi * min(after, 100) / 100))
    assert lr_at(warm, step) == pytest.approx(expected)


def test_grad_norm_is_reported_when_clipping() -> None:
    fn = apply_optimizer(grad(quadratic(), "loss", list(SHAPES)), Optimizer(kind="sgd", clip_norm=1.0), list(SHAPES))
    values = {k: np.full(s, 2.0) for k, s in SHAPES.items()}
    targets = {f"t{k}": np.zeros(s) for k, s in SHAPES.items()}
    out = run(fn, {**values, **targets, STEP: np.array(0, dtype=np.int32)})
    assert float(out["grad_norm"]) == pytest.approx(2.0 * math.sqrt(12 + 4))


def test_each_update_is_its_parameters_and_what_the_loop_reports_the_loops() -> None:
    """The owner table (scellis.ir.owners) through grad and the update: Adam's moments are their
    parameter's, the bias corrections and the clipping factor (read by every update) both parameters', the
    learning rate, the step counter and the norm the loop's."""
    fn = quadratic()
    owners = Owners()
    owners.slots = {"w": "W", "b": "B"}
    for name in SHAPES:
        owners.claim([fn.input(name), fn.input(f"t{name}")], frozenset({name.upper()}))
    owners.claim([fn.output("loss")], frozenset({"loss"}))
    backward = grad(fn, "loss", list(SHAPES), owners)
    opt = Optimizer(kind="adam", clip_norm=1.0, schedule=Schedule(kind="cosine", total_steps=10, warmup_steps=2))
    step = apply_optimizer(backward, opt, list(SHAPES), owners=owners)
    assert structural_key(step) == structural_key(apply_optimizer(grad(fn, "loss", list(SHAPES)), opt, list(SHAPES)))
    outputs = dict(step.outputs)
    assert owners[outputs["param/w"]] == owners[outputs["state/opt.m/w"]] == {"W"}
    assert owners[outputs["state/opt.v/b"]] == {"B"}
    assert owners[outputs["lr"]] == owners[outputs["state/opt.step"]] == owners[outputs["grad_norm"]] == {LOOP}
    corrections = [n for n in step.nodes() if n.op is Op.EXPM1]
    assert len(corrections) == 2 and all(owners[n] == {"W", "B"} for n in corrections)
    norm = outputs["grad_norm"]  # min(1, max_norm / (norm + eps)) scales every gradient
    (factor,) = [n for n in step.nodes() if n.op is Op.MINIMUM and norm in toposort([n]) and n is not norm]
    assert owners[factor] == {"W", "B"}
    assert all(n in owners for n in step.nodes() if n.op is not Op.CONST)
