"""Dynamic loss scaling as IR (level fast): the scaled loss that autodiff differentiates, the test that
every gradient is finite, and the scale's own update. `apply_optimizer` puts them around the update.

The scale is the STATE input `opt.loss_scale` (float32 scalar, a power of two so that unscaling is
exact); `opt.finite_steps` (int32) counts finite steps since the scale last changed. Both start from the
init function (`initial_outputs`), not from zeroed buffers: a zero scale would zero every gradient.
"""

from __future__ import annotations

from collections.abc import Sequence

from scellis.graph.settings import LossScaling
from scellis.ir.function import Function
from scellis.ir.owners import LOOP, Owners
from scellis.ops import DType, Node, Op, const, make
from scellis.ops.build import add, cast, less, mul, reduce, scale, sub, where
from scellis.ops.defs import Role
from scellis.ops.node import input_node

LOSS_SCALE = "opt.loss_scale"
FINITE_STEPS = "opt.finite_steps"
SCALED_LOSS = "loss_scaled"


def scale_loss(fn: Function, loss: str = "loss", owners: Owners | None = None) -> Function:
    """`fn` plus the input `opt.loss_scale` and the output `loss_scaled` = loss * scale, to differentiate
    instead of `loss` (which stays, unscaled, for reporting). With `owners`, both are the loop's."""
    loss_scale = input_node(LOSS_SCALE, Role.STATE, DType.F32, ())
    scaled = mul(fn.output(loss), loss_scale)
    if owners is not None:
        owners.claim([scaled], frozenset({LOOP}))
    return Function(fn.name, (*fn.inputs, loss_scale), (*fn.outputs, (SCALED_LOSS, scaled)))


def initial_outputs(settings: LossScaling) -> tuple[tuple[str, Node], ...]:
    """The init function's outputs for the scale's state."""
    return ((f"state/{LOSS_SCALE}", const(settings.initial)), (f"state/{FINITE_STEPS}", const(0, DType.I32)))


def all_finite(values: Sequence[Node]) -> Node:
    """A bool scalar: no element of any value is inf or NaN. IS_FINITE decides by bits, and the largest
    'not finite' indicator (0 or 1 in float32) is exactly 0 when all are finite."""
    worst = const(0.0)
    for value in values:
        bad = sub(const(1.0), cast(make(Op.IS_FINITE, value), DType.F32))
        if len(value.shape) > 1:  # rows first, in parallel, then the rows' results: not one long serial pass
            bad = reduce(Op.MAX, bad, (len(value.shape) - 1,))
        if bad.shape:
            bad = reduce(Op.MAX, bad, tuple(range(len(bad.shape))))
        worst = make(Op.MAXIMUM, worst, bad)
    return make(Op.EQUAL, worst, const(0.0))


def keep_unless(finite: Node, updates: Sequence[tuple[str, Node]], old: Sequence[Node]) -> list[tuple[str, Node]]:
    """Each update where the step is finite, else the value it replaces (a skipped step changes nothing)."""
    return [(name, where(finite, new, was)) for (name, new), was in zip(updates, old, strict=True)]


def scale_update(settings: LossScaling, loss_scale: Node, finite: Node) -> tuple[Node, list[tuple[str, Node]]]:
    """The counter input and the outputs: the next scale and count, and `loss_scale` (the one this step
    used). A finite step counts; on reaching the growth interval the scale grows (up to the ceiling) and
    the count restarts. A non-finite step backs the scale off (down to the floor) and restarts the count."""
    count = input_node(FINITE_STEPS, Role.STATE, DType.I32, ())
    counted = add(count, const(1, DType.I32))
    below = less(counted, const(settings.growth_interval, DType.I32))
    zero = const(0, DType.I32)
    grown = make(Op.MINIMUM, scale(loss_scale, settings.growth), const(settings.ceiling))
    backed_off = make(Op.MAXIMUM, scale(loss_scale, settings.backoff), const(settings.floor))
    next_scale = where(finite, where(below, loss_scale, grown), backed_off)
    next_count = where(finite, where(below, counted, zero), zero)
    outputs = [(f"state/{LOSS_SCALE}", next_scale), (f"state/{FINITE_STEPS}", next_count), ("loss_scale", loss_scale)]
    return count, outputs
