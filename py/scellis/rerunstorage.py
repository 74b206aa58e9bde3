"""The storage a re-run of a pinned run (a share link's) takes before it starts: the steps it will run and
an upper bound on the checkpoints its loop program's rules write, each the size of the run's state.

Expects a validated program (a link's) and its pinned settings. Guarantees: `checkpoints` is never fewer
than a re-run writes (every `checkpoint` action of every rule, at the most it can fire in the steps and
epochs the re-run takes, plus the final state a re-run's comparison saves), and `bytes` is `checkpoints`
times `per_checkpoint` (the state's tensors plus METADATA_BYTES): every checkpoint is assumed kept. Pure:
nothing is compiled for a device, nothing runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from scellis.graph.rules import Every, Plateau, Rule
from scellis.graph.settings import Loop
from scellis.ir.function import input_role
from scellis.ops.defs import Role
from scellis.pipeline import compile_program

METADATA_BYTES = 64 * 1024  # a checkpoint's metadata and framing beside its tensors, an upper bound


@dataclass(frozen=True)
class RerunStorage:
    steps: int  # the steps the re-run takes (its pinned steps, or its epochs' when fewer)
    checkpoints: int  # at most this many checkpoint objects
    per_checkpoint: int  # bytes of one
    bytes: int  # checkpoints * per_checkpoint

    def to_json(self) -> dict[str, int]:
        return {
            "steps": self.steps,
            "checkpoints": self.checkpoints,
            "per_checkpoint": self.per_checkpoint,
            "bytes": self.bytes,
        }


def _fires(rule: Rule, steps: int, epochs: int, evaluations: int) -> int:
    """The most times `rule` fires in `steps` steps, `epochs` whole epochs and `evaluations` evaluations."""
    when = rule.when
    if rule.on == "step":
        return steps // when.count if isinstance(when, Every) else steps
    if rule.on == "epoch":
        return epochs // when.count if isinstance(when, Every) else epochs
    if rule.on == "evaluation":
        return evaluations // when.patience if isinstance(when, Plateau) else evaluations
    return 1  # "end"


def checkpoint_count(loop: Loop, steps: int, steps_per_epoch: int, epochs: int) -> int:
    """The most checkpoints a run of `steps` steps (`steps_per_epoch` an epoch, at most `epochs` epochs)
    writes under `loop`'s rules, with the final state."""
    epochs = min(steps // max(steps_per_epoch, 1) + 1, epochs)  # a last, partial epoch included
    every = loop.evaluate_every
    evaluations = (steps // every if every else 0) + epochs + 1  # by step, at each epoch's end, at the end
    rules = [rule for rule in loop.rules if "checkpoint" in rule.then]
    return sum(_fires(rule, steps, epochs, evaluations) for rule in rules) + 1


def rerun_storage(program: dict[str, Any], epochs: int, steps: int | None, train_examples: int | None) -> RerunStorage:
    """The storage a re-run of `program` (validated) for `epochs`, stopping at `steps` (None: at its
    epochs' end), on a training split of `train_examples` (None: a program that reads no data) takes."""
    compiled = compile_program(program, examples=train_examples)
    loop = compiled.program.loop
    per_epoch = (loop.steps or 1) if train_examples is None else max(train_examples // loop.batch_size, 1)
    taken = epochs * per_epoch if steps is None else min(steps, epochs * per_epoch)
    count = checkpoint_count(loop, taken, per_epoch, epochs)
    roles = (Role.PARAM, Role.STATE)
    tensors = sum(n.size * n.dtype.itemsize for n in compiled.step.inputs if input_role(n) in roles)
    per = tensors + METADATA_BYTES
    return RerunStorage(taken, count, per, count * per)
