"""The pipeline, top to bottom: program JSON -> validated program -> typed IR -> gradients -> optimizer
step -> (per level and device features) kernel schedules -> memory plans. Each stage runs once per
program and level; its artifact is kept and passed forward (the Guide, scellis.guide, presents them),
and devices compile the planned schedules as they are."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from scellis.autodiff import grad
from scellis.autodiff.checkpoint import checkpoint, from_the_loss_back, ordered_like
from scellis.gcpause import paused
from scellis.graph import ValidProgram, validate
from scellis.graph.building import Mode
from scellis.graph.settings import LossScaling
from scellis.ir import Function, structural_key, verify
from scellis.ir.from_program import ProgramIR, forward, init_function
from scellis.ir.owners import Owners
from scellis.levels import Level
from scellis.lower import Schedule, lower
from scellis.optim import apply_optimizer
from scellis.optim.loss_scaling import SCALED_LOSS, initial_outputs, scale_loss
from scellis.optim.storage import Float16Storage, check_storage, init_in_float16, params_in_float16
from scellis.plan.budget import Budget
from scellis.plan.program import ProgramPlan, judge, plan_program
from scellis.plan.remedies import Planner, Target, advise, device_judge
from scellis.plan.report import Report

if TYPE_CHECKING:
    from scellis.runtime.device import Device


@dataclass(frozen=True)
class LossScaled:
    """The functions of dynamic loss scaling (level fast's float16 matmuls)."""

    backward: Function  # gradients of the scaled loss
    step: Function  # the training step: gradients unscaled, a non-finite step skipped
    init: Function  # init plus the loss scale's initial value


@dataclass(frozen=True)
class Compiled:
    program: ValidProgram
    forward: ProgramIR  # typed IR of the training forward pass
    backward: Function  # ... with gradients of the loss for every trainable parameter
    step: Function  # ... with the optimizer update: the training step
    evaluate: Function  # the forward pass in evaluation mode
    init: Function  # initial parameters and state from the `init` substream
    evaluate_last: Function | None = None  # evaluation of a held-out split's last, smaller batch
    scaled: LossScaled | None = None  # built with the rest only where float16 storage needs it; else on use
    owners: Owners = field(default_factory=Owners, compare=False, repr=False)  # of the training functions
    _levels: dict[tuple[Level, frozenset[str]], AtLevel] = field(
        default_factory=dict, init=False, compare=False, repr=False
    )

    @cached_property
    def loss_scaled(self) -> LossScaled:
        """The loss-scaled functions (built once, when a level first needs them)."""
        if self.scaled is not None:
            return self.scaled
        if not self.program.trains:
            return LossScaled(self.step, self.step, self.init)
        return _loss_scaled(self.forward, self.program, self.init, LossScaling(), self.owners)

    def at(self, level: Level, features: frozenset[str] = frozenset()) -> AtLevel:
        """What `level` runs on a device with `features`, decided once per (level, features): whether it
        scales its loss (only fast, and only where its step's schedule runs float16 kernels: elsewhere
        there is nothing for scaling to protect, and its checks would cost kernels for nothing). Raises
        StorageUnsupported where the device cannot hold the program's storage type."""
        known = self._levels.get((level, features))
        if known is not None:
            return known
        check_storage(self.program.memory.storage, features)
        schedule = None
        scales = False
        if level is Level.FAST and self.program.trains:
            schedule = lower(self.step, level, features)
            scales = any(k.variant.endswith("-f16") for k in schedule.kernels)
        if scales:
            s = self.loss_scaled
            at = AtLevel(self, level, features, True, s.step, s.backward, s.init, None)
        else:
            at = AtLevel(self, level, features, False, self.step, self.backward, self.init, schedule)
        self._levels[(level, features)] = at
        return at


@dataclass(frozen=True)
class AtLevel:
    """The functions a session at `level` compiles on a device with `features`, with their plan. Every
    consumer (session, planner, Guide, manifests) takes them from here: nothing decides the level again."""

    compiled: Compiled
    level: Level
    features: frozenset[str]
    scales_loss: bool
    step: Function  # the training step this level runs
    backward: Function  # the gradient function behind it
    init: Function  # the init function that goes with it
    step_schedule: Schedule | None = field(default=None, repr=False)  # the step lowered to decide, if it was

    @property
    def evaluate(self) -> Function:
        return self.compiled.evaluate

    @property
    def evaluate_last(self) -> Function | None:
        return self.compiled.evaluate_last

    @cached_property
    def key(self) -> str:
        """The structural key of the training step (addresses checkpoints; a compile cache adds the level
        and the features). debug and prod run the same step, so they share it; where fast scales its
        loss, its step has its own."""
        return structural_key(self.step)

    def functions(self) -> list[tuple[str, Function]]:
        """(title, function) of everything a session compiles, the training step first."""
        named = [("training step", self.step), ("evaluation", self.evaluate)]
        if self.evaluate_last is not None:
            named.append(("evaluation, last batch", self.evaluate_last))
        return [*named, ("init", self.init)]

    @cached_property
    def plan(self) -> ProgramPlan:
        """Every function lowered, updated in place and planned: once."""
        program = self.compiled.program
        phases = (self.compiled.forward.fn, self.backward)
        batch = program.loop.batch_size
        return plan_program(
            program.name, self.functions(), phases, self.level, self.features, batch=batch,
            step_schedule=self.step_schedule,
        )  # fmt: skip


@paused
def compile_program(
    data: Any,
    batch: int | None = None,
    eval_batch: int | None = None,
    examples: int | None = None,
    eval_rows: int | None = None,
) -> Compiled:
    """The program's stages. Evaluation takes `eval_batch` rows a call (the training batch unless given);
    with `eval_rows`, the held-out split's size, a split that is not a whole number of batches gets a
    second evaluation function for its last batch (`evaluate_last`), and a split smaller than one batch
    is evaluated in one call. A program that keeps its data set on the device (`memory.data` resident)
    needs `examples`, the training split's size; one that streams its batches ignores it."""
    program = validate(data)  # drawn program: JSON checked against the catalog, all problems at once
    if not program.trains:
        return untrained(program, examples)
    owners = Owners()  # each training node's program nodes, recorded by the stages as they make it
    fwd = forward(program, Mode.TRAIN, batch, resident_examples(program, examples), owners)  # typed IR
    backward, step = _train(fwd.fn, "loss", fwd, program, owners=owners)  # gradients (reverse mode), the update
    rows_per_call, last = evaluation_batches(eval_batch or batch or program.loop.batch_size, eval_rows)
    evaluate = forward(program, Mode.EVAL, rows_per_call).fn
    evaluate_last = forward(program, Mode.EVAL, last).fn if last else None
    init = init_function(fwd)
    for fn in (step, evaluate, init):  # steps hold every forward and backward node
        verify(fn, types=False)  # built with `make`: typed by construction (tests verify types too)
    if program.memory.storage != "float16":
        return Compiled(program, fwd, backward, step, evaluate, init, evaluate_last, owners=owners)
    # float16 storage rounds the activations either backward keeps: both are built before it rewrites
    scaled = _loss_scaled(fwd, program, init, LossScaling(), owners)
    return stored_in_float16(Compiled(program, fwd, backward, step, evaluate, init, evaluate_last, scaled, owners))


def untrained(program: ValidProgram, examples: int | None) -> Compiled:
    """A program without a loss (a simulation, an analysis): its step is the graph run once, carrying its
    states forward (nothing is differentiated, no optimizer); evaluation computes its results from the
    states, on one batch of the same size (batched states have that size)."""
    owners = Owners()
    fwd = forward(program, Mode.TRAIN, None, resident_examples(program, examples), owners)
    evaluated = forward(program, Mode.EVAL)
    held = {s.name for s in fwd.states}
    only_read = [s.name for s in evaluated.states if s.name not in held]
    if only_read:
        raise ValueError(
            f"{program.name}: the state {only_read[0]!r} is read by the results only and never updated, so no "
            "step carries it: use a constant or a random node (per run) instead"
        )
    init = init_function(fwd)
    for fn in (fwd.fn, evaluated.fn, init):
        verify(fn, types=False)
    step = fwd.fn
    return Compiled(program, fwd, step, step, evaluated.fn, init, owners=owners)


def stored_in_float16(c: Compiled) -> Compiled:
    """`c` with parameters and the activations kept for backward stored in float16, float32 master
    weights in the optimizer (optim.storage); the plain and the loss-scaled functions alike."""
    assert c.scaled is not None
    half, trainable = Float16Storage(c.forward.fn, (c.backward, c.scaled.backward), c.owners), c.forward.trainable
    scaled = LossScaled(
        half.function(c.scaled.backward), half.function(c.scaled.step), init_in_float16(c.scaled.init, trainable)
    )
    return dataclasses.replace(
        c,
        forward=dataclasses.replace(c.forward, fn=half.function(c.forward.fn)),
        backward=half.function(c.backward),
        step=half.function(c.step),
        evaluate=params_in_float16(c.evaluate),
        evaluate_last=params_in_float16(c.evaluate_last) if c.evaluate_last else None,
        init=init_in_float16(c.init, trainable),
        scaled=scaled,
    )


def evaluation_batches(eval_batch: int, eval_rows: int | None) -> tuple[int, int]:
    """(rows per evaluation call, rows of the last, smaller call or 0) for a held-out split of
    `eval_rows` rows (unknown: whole calls only)."""
    if eval_batch < 1 or (eval_rows is not None and eval_rows < 1):
        raise ValueError(f"evaluation needs at least one row a call and in the split, got {eval_batch}, {eval_rows}")
    if eval_rows is None:
        return eval_batch, 0
    if eval_rows <= eval_batch:
        return eval_rows, 0
    return eval_batch, eval_rows % eval_batch


def resident_examples(program: ValidProgram, examples: int | None) -> int | None:
    """The resident data set's size for the training step, or None when the program streams its batches."""
    if program.memory.data != "resident":
        return None
    if examples is None or examples < 1:
        raise ValueError(
            f"{program.name} keeps its training split on the device (memory.data 'resident'), so planning it "
            f"needs the number of training examples; got {examples}"
        )
    if examples < program.loop.batch_size:
        raise ValueError(
            f"{program.name}: the training split has {examples} examples, fewer than one batch of "
            f"{program.loop.batch_size}"
        )
    return examples


def _loss_scaled(
    fwd: ProgramIR, program: ValidProgram, init: Function, settings: LossScaling, owners: Owners
) -> LossScaled:
    """Gradients of loss * scale; the training step with dynamic loss scaling (gradients unscaled, a
    non-finite step skipped); and init with the scale's initial value."""
    backward, step = _train(scale_loss(fwd.fn, owners=owners), SCALED_LOSS, fwd, program, settings, owners=owners)
    scaled_init = Function(init.name, init.inputs, init.outputs + initial_outputs(settings))
    for fn in (step, scaled_init):
        verify(fn, types=False)
    return LossScaled(backward, step, scaled_init)


def _train(
    fn: Function,
    loss: str,
    fwd: ProgramIR,
    program: ValidProgram,
    settings: LossScaling | None = None,
    *,
    owners: Owners,
) -> tuple[Function, Function]:
    """Gradients of `loss` for the trainable parameters, and the training step, ordered from the loss back
    (each gradient and its update as soon as its layer's backward has run: fewer bytes held at once).
    The backward draws again what it reads of draws (dropout masks); with `memory.checkpoint` it also
    recomputes the forward segment by segment (autodiff.checkpoint). Every node either adds gets its
    owners in `owners`."""
    backward = grad(fn, loss, fwd.trainable, owners)
    if program.memory.checkpoint:
        backward = checkpoint(fn, backward, loss, owners)
    else:
        backward = from_the_loss_back(fn, backward, loss, owners, pointwise=program.memory.storage == "float32")
    step = apply_optimizer(backward, program.optimizer, fwd.trainable, settings, program.loop.rules, owners=owners)
    return backward, ordered_like(step, backward)


def planner(level: Level, features: frozenset[str], **sizes: int | None) -> Planner:
    """Program JSON -> its plan at `level` on a device with `features`, compiled with `sizes`
    (compile_program's eval_batch, eval_rows, examples): what remedies re-plan with."""
    return lambda data: compile_program(data, **sizes).at(level, features).plan


async def plan_report(
    data: dict[str, Any], at: AtLevel, device: Device, sizes: dict[str, int | None], budget: Budget | None = None
) -> Report:
    """`data` (program JSON), compiled and decided for the device as `at`, judged against the device's
    budget (measured once around the plan's need, or `budget` when given: planning for a smaller device),
    and when the verdict is not green, the remedies, each re-planned and judged against the same budget."""
    plan = at.plan
    if budget is None:
        budget = await device.budget(plan.total)
    verdict = judge(plan, device.limits, budget)
    advice = None
    if verdict.color != "green":
        target = Target(planner(at.level, at.features, **sizes), device_judge(device.limits, budget))
        advice = advise(data, plan, budget, target)
    return Report(device.name, plan, budget, verdict, advice)
