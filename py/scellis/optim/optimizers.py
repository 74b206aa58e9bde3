"""Optimizers as IR: a function with gradients -> the training step.

Expects a function with outputs `grad/<p>` for every trainable parameter p (what autodiff adds).
Guarantees: the gradient outputs are replaced by `param/<p>` (the updated parameters), the
optimizer's state enters as inputs `opt.*` (role STATE) and leaves as outputs `state/opt.*`, the step
counter `opt.step` (int32, updates done so far) advances by one, and `lr` reports the rate used.
Update order per parameter: clip by global norm, add L2 weight decay (all but AdamW), then the rule.
Adam's bias corrections 1 - beta^t are within a few float32 ulps of exact at every t (bias_corrections).
With loss scaling (optim.loss_scaling) the gradients are of loss * `opt.loss_scale` and are divided by it
first; a step with a non-finite gradient keeps every parameter, optimizer state and the step counter.

The loop program's rules (graph.rules) add two things. A `skip_batch` rule makes the same kind of step:
where the loss or a gradient it watches is not finite, everything is kept, decided on the device; its
counters `loop.seen` (steps run), `loop.skipped` and `loop.last_skipped` (the `loop.seen` of the last
skipped step) let the host log each skip at its next read, without a read per step. A `set_lr` rule adds
the setting `loop.lr_scale` (float32, 1 to begin with), which multiplies the schedule's rate.

With an owner table (`owners`, which has the gradient function's nodes: scellis.ir.owners), each node the
update adds gets the owners of the outputs that reach it, the loop's where a loop output does.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from scellis.autodiff.grad import grad_name
from scellis.graph.rules import NonFinite, Rule, SetLr
from scellis.graph.settings import LossScaling, Optimizer
from scellis.ir.function import Function
from scellis.ir.owners import Owners
from scellis.ops import DType, Node, Op, const, make
from scellis.ops.build import add, cast, div, mul, scale, sub, total, unary, where
from scellis.ops.defs import Role
from scellis.ops.node import input_node
from scellis.optim.loss_scaling import LOSS_SCALE, all_finite, keep_unless, scale_update
from scellis.optim.schedules import learning_rate

STEP = "opt.step"
LR_SCALE = "loop.lr_scale"
SEEN, SKIPPED, LAST_SKIPPED = "loop.seen", "loop.skipped", "loop.last_skipped"
GRAD_NORM_EPS = 1e-6


def optimizer_state(opt: Optimizer, param: str) -> tuple[str, ...]:
    """Names of the state an optimizer keeps for one parameter (each of the parameter's shape)."""
    if opt.kind == "momentum":
        return (f"opt.velocity/{param}",)
    if opt.kind in ("adam", "adamw"):
        return (f"opt.m/{param}", f"opt.v/{param}")
    return ()


def apply_optimizer(
    fn: Function,
    opt: Optimizer,
    trainable: Sequence[str],
    loss_scaling: LossScaling | None = None,
    rules: Sequence[Rule] = (),
    *,
    owners: Owners | None = None,
) -> Function:
    step = input_node(STEP, Role.STATE, DType.I32, ())
    t = cast(step, DType.F32)
    lr = learning_rate(opt, t)
    new_inputs: list[Node] = [step]
    if any(isinstance(action, SetLr) for rule in rules for action in rule.then):
        lr_scale = input_node(LR_SCALE, Role.SETTING, DType.F32, ())
        new_inputs.append(lr_scale)
        lr = mul(lr, lr_scale)
    params = [fn.input(p) for p in trainable]
    grads = [fn.output(grad_name(p)) for p in trainable]
    watched = _watched(fn, grads, rules)
    finite = None
    if loss_scaling is not None:  # gradients of loss * scale: unscaled before anything reads them
        loss_scale = fn.input(LOSS_SCALE)
        finite = all_finite([*grads, *(w for w in watched if not any(w is g for g in grads))])
        grads = [div(g, loss_scale) for g in grads]
    elif watched:
        finite = all_finite(watched)
    extra_outputs: list[tuple[str, Node]] = []
    if opt.clip_norm is not None and grads:
        grads, norm = _clip(grads, opt.clip_norm)
        extra_outputs.append(("grad_norm", norm))
    updates: list[tuple[str, Node]] = []
    old: list[Node] = []  # the value each update replaces
    corrections = bias_corrections(opt, t)
    for name, p, raw_grad in zip(trainable, params, grads, strict=True):
        g = add(raw_grad, scale(p, opt.weight_decay)) if opt.weight_decay and opt.kind != "adamw" else raw_grad
        states = [input_node(s, Role.STATE, DType.F32, p.shape) for s in optimizer_state(opt, name)]
        new_inputs += states
        new_p, new_states = update_rule(opt, p, g, states=states, lr=lr, corrections=corrections)
        updates.append((f"param/{name}", new_p))
        updates += [(f"state/{s}", v) for s, v in zip(optimizer_state(opt, name), new_states, strict=True)]
        old += [p, *states]
    updates.append((f"state/{STEP}", add(step, const(1, DType.I32))))
    old.append(step)
    if finite is not None:
        updates = keep_unless(finite, updates, old)
    if loss_scaling is not None:
        assert finite is not None
        count, scale_outputs = scale_update(loss_scaling, loss_scale, finite)
        new_inputs.append(count)
        extra_outputs += scale_outputs
    if watched:
        assert finite is not None
        counters, counted = _skip_counters(finite)
        new_inputs += counters
        updates += counted
    kept = tuple((n, node) for n, node in fn.outputs if not n.startswith("grad/"))
    outputs = (*kept, *updates, ("lr", lr), *extra_outputs)
    if owners is not None:
        owners.claim_by_reach(outputs)
    return Function(fn.name.replace(".train", ".step"), (*fn.inputs, *new_inputs), outputs)


def _watched(fn: Function, grads: list[Node], rules: Sequence[Rule]) -> list[Node]:
    """What a skip_batch rule watches: the loss, the gradients (as the backward gives them), or both."""
    watch = next((rule.when.watch for rule in rules if isinstance(rule.when, NonFinite)), ())
    return ([fn.output("loss")] if "loss" in watch else []) + (list(grads) if "gradients" in watch else [])


def _skip_counters(finite: Node) -> tuple[list[Node], list[tuple[str, Node]]]:
    """The skip rule's counters (module docstring): inputs and their next values, kept whatever happens."""
    seen, skipped, last = (input_node(name, Role.STATE, DType.I32, ()) for name in (SEEN, SKIPPED, LAST_SKIPPED))
    one = const(1, DType.I32)
    outputs = [
        (f"state/{SEEN}", add(seen, one)),
        (f"state/{SKIPPED}", where(finite, skipped, add(skipped, one))),
        (f"state/{LAST_SKIPPED}", where(finite, last, seen)),
    ]
    return [seen, skipped, last], outputs


def _clip(grads: list[Node], max_norm: float) -> tuple[list[Node], Node]:
    """Scale all gradients by min(1, max_norm / (global L2 norm + eps))."""
    squares = total(mul(grads[0], grads[0]))
    for g in grads[1:]:
        squares = add(squares, total(mul(g, g)))
    norm = unary(Op.SQRT, squares)
    factor = make(Op.MINIMUM, const(1.0), div(const(max_norm), add(norm, const(GRAD_NORM_EPS))))
    return [mul(g, factor) for g in grads], norm


def bias_corrections(opt: Optimizer, t: Node) -> tuple[Node, Node]:
    """Adam's 1 - beta^(t+1) for both moments (t: the float32 step counter), shared by every parameter.

    As -expm1((t + 1) ln beta), with ln beta taken in float64 on the host and rounded to float32 once
    (5e-8 of itself for 0.999). 1 - pow(beta, t + 1) in float32 cancels instead (for beta2 = 0.999 at
    t = 0 the subtraction loses 3 of float32's 7 digits), and 0.999 rounded to float32 is itself off by
    1.3e-5 of 1 - beta2. This way each factor is within a few float32 ulps at any t, and the step stays
    one device call (the counter lives on the device, and skipped steps leave it where it is).
    """
    t1 = add(t, const(1.0))

    def correction(beta: float) -> Node:  # beta = 0 (allowed) has no logarithm: 1 - 0^(t+1) = 1
        return unary(Op.NEG, unary(Op.EXPM1, scale(t1, math.log(beta)))) if beta else const(1.0)

    return correction(opt.beta1), correction(opt.beta2)


def update_rule(
    opt: Optimizer, p: Node, g: Node, *, states: list[Node], lr: Node, corrections: tuple[Node, Node]
) -> tuple[Node, list[Node]]:
    """The optimizer's rule for one parameter p with gradient g (weight decay, for all but AdamW, already
    in g): the new p and the new values of its `states` (optimizer_state's order). Shapes broadcast."""
    if opt.kind == "sgd":
        return sub(p, mul(lr, g)), []
    if opt.kind == "momentum":
        (velocity,) = states
        v = add(scale(velocity, opt.momentum), g)
        direction = add(g, scale(v, opt.momentum)) if opt.nesterov else v
        return sub(p, mul(lr, direction)), [v]
    m_prev, v_prev = states
    m = add(scale(m_prev, opt.beta1), scale(g, 1 - opt.beta1))
    v = add(scale(v_prev, opt.beta2), scale(mul(g, g), 1 - opt.beta2))
    m_hat, v_hat = div(m, corrections[0]), div(v, corrections[1])
    update = div(m_hat, add(unary(Op.SQRT, v_hat), const(opt.eps)))
    if opt.kind == "adamw" and opt.weight_decay:
        update = add(update, scale(p, opt.weight_decay))
    return sub(p, mul(lr, update)), [m, v]
