"""Stage: loop. The loop program as text the user can read: the repeats, the batches, when evaluation
runs, and each rule under the hook it runs on."""

from __future__ import annotations

from scellis.graph.rules import rule_text
from scellis.graph.settings import Loop

HEADINGS = {
    "step": "after each step",
    "evaluation": "after each evaluation",
    "epoch": "after each epoch",
    "end": "at the end",
}


def loop_text(loop: Loop, trains: bool = True, has_data: bool = True) -> str:
    """The loop of a training program, or of one without a loss (`trains` false: a simulation or an
    analysis, whose steps carry its states and whose evaluation computes its results); one without data
    (`has_data` false) runs `loop.steps` steps an epoch on `loop.batch_size` replicas side by side."""
    order = "shuffled by the shuffle substream" if loop.shuffle else "in order"
    every = f"every {loop.evaluate_every} steps" if loop.evaluate_every else "at the end of each epoch"
    step = "one training step" if trains else "one step (its states carried to the next)"
    if has_data:
        body = f"  for each batch of {loop.batch_size} examples ({order}): {step}"
    else:
        body = f"  {loop.steps or 1} steps, each on {loop.batch_size} replicas side by side: {step}"
    if trains:
        evaluation = f"  evaluate on the held-out split {every}"
    else:
        on = f"the first {loop.batch_size} training examples" if has_data else "the states"
        evaluation = f"  compute the results from {on} {every}"
    lines = [f"repeat {loop.epochs} epochs:", body, evaluation]
    for hook, heading in HEADINGS.items():
        rules = [r for r in loop.rules if r.on == hook]
        if rules:
            lines.append(f"{heading}:")
            lines += [f"  {rule_text(r)}" for r in rules]
    if not loop.rules:
        done = "the learning rate follows its schedule, all epochs run" if trains else "all epochs run"
        lines.append(f"no rules: every step updates, {done}")
    return "\n".join(lines)
