"""Learning-rate schedules as IR: lr(step) built from the step counter, so the schedule runs on the
device with the update and never needs the host between steps."""

from __future__ import annotations

import math

from scellis.graph.settings import Optimizer
from scellis.ops import Node, Op, const, make
from scellis.ops.build import add, div, mul, scale, sub, unary


def _decayed(opt: Optimizer, step: Node) -> Node:
    """The schedule after warmup, at `step` steps past the warmup (a float32 scalar)."""
    s = opt.schedule
    if s.kind == "constant":
        return const(opt.lr)
    if s.kind == "step":
        periods = unary(Op.FLOOR, div(step, const(float(s.step_size))))
        return scale(make(Op.POW, const(s.gamma), periods), opt.lr)
    progress = div(make(Op.MINIMUM, step, const(float(s.total_steps))), const(float(s.total_steps)))
    wave = scale(add(const(1.0), unary(Op.COS, scale(progress, math.pi))), 0.5)
    return add(const(s.min_lr), scale(wave, opt.lr - s.min_lr))


def learning_rate(opt: Optimizer, step: Node) -> Node:
    """lr for the update numbered `step` (0 for the first update): a linear warmup from lr/warmup to lr
    over `warmup_steps`, then the schedule counted from the end of the warmup."""
    warmup = opt.schedule.warmup_steps
    if warmup == 0:
        return _decayed(opt, step)
    after = make(Op.MAXIMUM, sub(step, const(float(warmup))), const(0.0))
    ramp = make(Op.MINIMUM, const(1.0), div(add(step, const(1.0)), const(float(warmup))))
    return mul(ramp, _decayed(opt, after))
