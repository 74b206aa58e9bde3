"""The pipeline, top to bottom. Each stage's artifact is kept: the Guide shows them for the user's own
program, and later stages (loop, kernels, plan, code) extend this same function."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any

from scellis.autodiff import grad
from scellis.autodiff.checkpoint import checkpoint, from_the_loss_back, ordered_like
from scellis.codegen import render
from scellis.graph import ValidProgram, validate
from scellis.graph.lowering import Mode
from scellis.graph.settings import LossScaling
from scellis.ir import Function, structural_key, to_text, verify
from scellis.ir.from_program import Lowered, forward, init_function
from scellis.levels import Level
from scellis.loop import loop_text
from scellis.lower import Schedule, lower
from scellis.lower.text import schedule_text
from scellis.optim import apply_optimizer
from scellis.optim.loss_scaling import SCALED_LOSS, initial_outputs, scale_loss
from scellis.optim.storage import Float16Storage, check_storage, init_in_float16, params_in_float16
from scellis.provenance import links

STAGE_TITLES = (
    "program JSON",
    "typed IR",
    "backward IR",
    "optimizer IR (training step)",
    "loop program",
    "evaluation IR",
    "init IR",
    "kernel schedule (training step)",
    "WGSL (training step)",
)

UNTRAINED_BACKWARD = (
    "# none: the program has no loss, so nothing is differentiated.\n"
    "# Its step is the typed IR: the graph run once, each update node's value carried to the next step."
)
UNTRAINED_OPTIMIZER = "# none: the program has no loss, so it has no optimizer. Its step is the typed IR."

LINKED_TEXTS = {  # the IR texts guide_links numbers ops in -> their stages
    "forward": "typed IR",
    "backward": "backward IR",
    "optimizer": "optimizer IR (training step)",
    "step": "optimizer IR (training step)",
}
KERNEL_STAGES = ("kernel schedule (training step)", "WGSL (training step)")  # kernel i is k{i} in each


@dataclass(frozen=True)
class Compiled:
    program: ValidProgram
    forward: Lowered  # typed IR of the training forward pass
    backward: Function  # ... with gradients of the loss for every trainable parameter
    step: Function  # ... with the optimizer update: the training step
    evaluate: Function  # the forward pass in evaluation mode
    init: Function  # initial parameters and state from the `init` substream
    scaled_backward: Function  # gradients of the scaled loss (level fast)
    scaled_step: Function  # the training step with dynamic loss scaling (level fast's float16 matmuls)
    scaled_init: Function  # init plus the loss scale's initial value
    evaluate_last: Function | None = None  # evaluation of a held-out split's last, smaller batch

    def scales_loss(self, level: Level, features: frozenset[str]) -> bool:
        """Whether `level` on a device with `features` scales its loss: only fast, and only where its
        schedule runs float16 kernels (elsewhere there is nothing for scaling to protect, and its
        checks would cost kernels for nothing). Raises StorageUnsupported where the device cannot hold the
        program's storage type (so every *_for below does)."""
        check_storage(self.program.memory.storage, features)
        if level is not Level.FAST or not self.program.trains:
            return False
        return any(k.variant.endswith("-f16") for k in lower(self.step, level, features).kernels)

    def step_for(self, level: Level, features: frozenset[str]) -> Function:
        """The training step `level` runs on a device with `features`."""
        return self.scaled_step if self.scales_loss(level, features) else self.step

    def backward_for(self, level: Level, features: frozenset[str]) -> Function:
        """The gradient function behind `step_for`."""
        return self.scaled_backward if self.scales_loss(level, features) else self.backward

    def init_for(self, level: Level, features: frozenset[str]) -> Function:
        """The init function that goes with `step_for`."""
        return self.scaled_init if self.scales_loss(level, features) else self.init

    def stages(self, level: Level, features: frozenset[str] = frozenset()) -> list[tuple[str, str]]:
        """(title, printable artifact) for each stage, in pipeline order, as `level` runs them on a device
        with `features` (the schedule's text names the level and its notes)."""
        texts = [json.dumps(self.program.source, indent=1)]
        step, init = self.step_for(level, features), self.init_for(level, features)
        backward = self.backward_for(level, features)
        if self.program.trains:
            texts += [to_text(fn) for fn in (self.forward.fn, backward, step)]
        else:
            texts += [to_text(step), UNTRAINED_BACKWARD, UNTRAINED_OPTIMIZER]
        texts.append(loop_text(self.program.loop, self.program.trains, self.program.has_data))
        texts += [to_text(fn) for fn in (self.evaluate, init)]
        schedule = lower(step, level, features)
        texts.append(f"level {level.value}\n{schedule_text(schedule)}")
        texts.append(wgsl_text(schedule))
        return list(zip(STAGE_TITLES, texts, strict=True))

    def guide(self, level: Level, features: frozenset[str] = frozenset()) -> dict[str, Any]:
        """What the app's Guide shows: the program's name, its key and every stage's artifact."""
        stages = [list(s) for s in self.stages(level, features)]
        key = self.key(level, features)
        return {"name": self.program.name, "key": key, "level": level.value, "stages": stages}

    def guide_links(self, level: Level, features: frozenset[str] = frozenset()) -> dict[str, Any]:
        """The Guide's links between the program's nodes, the IR ops, kernels and code of the training step
        `level` runs on a device with `features` (scellis.provenance); `stage` gives each IR text's place
        in `guide`'s stages."""
        result: dict[str, Any] = {"name": self.program.name, "key": self.key(level, features), "level": level.value}
        result.update(links(self, level, features))
        for text, title in LINKED_TEXTS.items():
            result["texts"][text]["stage"] = STAGE_TITLES.index(title)
        result["kernel_stages"] = [STAGE_TITLES.index(title) for title in KERNEL_STAGES]
        return result

    def key(self, level: Level, features: frozenset[str] = frozenset()) -> str:
        """The structural key of the training step `level` runs on a device with `features` (addresses
        checkpoints; a compile cache adds the level and the features). debug and prod run the same step,
        so they share it; where fast scales its loss, its step has its own."""
        return structural_key(self.step_for(level, features))


def wgsl_text(schedule: Schedule) -> str:
    """Each kernel's WGSL with its bindings and workgroup counts."""
    parts = []
    for i, kernel in enumerate(schedule.kernels):
        wk = render(kernel, schedule)
        parts.append(f"// k{i}: {wk.label}, bindings {list(wk.bindings)}, dispatch {wk.workgroups}\n{wk.source}")
    return "\n\n".join(parts)


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
    fwd = forward(program, Mode.TRAIN, batch, resident_examples(program, examples))  # typed IR: shapes inferred
    backward, step = _train(fwd.fn, "loss", fwd, program)  # gradients (reverse mode), the update as IR
    rows_per_call, last = evaluation_batches(eval_batch or batch or program.loop.batch_size, eval_rows)
    evaluate = forward(program, Mode.EVAL, rows_per_call).fn
    evaluate_last = forward(program, Mode.EVAL, last).fn if last else None
    init = init_function(fwd)
    scaled_backward, scaled_step, scaled_init = _loss_scaled(fwd, program, init, LossScaling())
    for fn in (step, evaluate, init, scaled_step, scaled_init):  # steps hold every forward and backward node
        verify(fn, types=False)  # built with `make`: typed by construction (tests verify types too)
    compiled = Compiled(
        program, fwd, backward, step, evaluate, init, scaled_backward, scaled_step, scaled_init, evaluate_last
    )
    return stored_in_float16(compiled) if program.memory.storage == "float16" else compiled


def untrained(program: ValidProgram, examples: int | None) -> Compiled:
    """A program without a loss (a simulation, an analysis): its step is the graph run once, carrying its
    states forward (nothing is differentiated, no optimizer); evaluation computes its results from the
    states, on one batch of the same size (batched states have that size)."""
    fwd = forward(program, Mode.TRAIN, None, resident_examples(program, examples))
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
    return Compiled(program, fwd, step, step, evaluated.fn, init, step, step, init)


def stored_in_float16(c: Compiled) -> Compiled:
    """`c` with parameters and the activations kept for backward stored in float16, float32 master
    weights in the optimizer (optim.storage); the plain and the loss-scaled functions alike."""
    half, trainable = Float16Storage(c.forward.fn, (c.backward, c.scaled_backward)), c.forward.trainable
    return dataclasses.replace(
        c,
        forward=dataclasses.replace(c.forward, fn=half.function(c.forward.fn)),
        backward=half.function(c.backward),
        step=half.function(c.step),
        evaluate=params_in_float16(c.evaluate),
        evaluate_last=params_in_float16(c.evaluate_last) if c.evaluate_last else None,
        init=init_in_float16(c.init, trainable),
        scaled_backward=half.function(c.scaled_backward),
        scaled_step=half.function(c.scaled_step),
        scaled_init=init_in_float16(c.scaled_init, trainable),
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


def _loss_scaled(fwd: Lowered, program: ValidProgram, init: Function, settings: LossScaling) -> tuple[Function, ...]:
    """Gradients of loss * scale; the training step with dynamic loss scaling (gradients unscaled, a
    non-finite step skipped); and init with the scale's initial value."""
    backward, step = _train(scale_loss(fwd.fn), SCALED_LOSS, fwd, program, settings)
    return backward, step, Function(init.name, init.inputs, init.outputs + initial_outputs(settings))


def _train(
    fn: Function, loss: str, fwd: Lowered, program: ValidProgram, settings: LossScaling | None = None
) -> tuple[Function, Function]:
    """Gradients of `loss` for the trainable parameters, and the training step, ordered from the loss back
    (each gradient and its update as soon as its layer's backward has run: fewer bytes held at once).
    With `memory.checkpoint` the backward also recomputes the forward segment by segment
    (autodiff.checkpoint)."""
    backward = grad(fn, loss, fwd.trainable)
    backward = checkpoint(fn, backward, loss) if program.memory.checkpoint else from_the_loss_back(fn, backward)
    step = apply_optimizer(backward, program.optimizer, fwd.trainable, settings, program.loop.rules)
    return backward, ordered_like(step, backward)
