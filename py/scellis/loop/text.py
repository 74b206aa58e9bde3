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


def loop_text(loop: Loop) -> str:
    order = "shuffled by the shuffle substream" if loop.shuffle else "in order"
    every = f"every {loop.evaluate_every} steps" if loop.evaluate_every else "at the end of each epoch"
    lines = [
        f"repeat {loop.epochs} epochs:",
        f"  for each batch of {loop.batch_size} examples ({order}): one training step",
        f"  evaluate on the held-out split {every}",
    ]
    for hook, heading in HEADINGS.items():
        rules = [r for r in loop.rules if r.on == hook]
        if rules:
            lines.append(f"{heading}:")
            lines += [f"  {rule_text(r)}" for r in rules]
    if not loop.rules:
        lines.append("no rules: every step updates, the learning rate follows its schedule, all epochs run")
    return "\n".join(lines)
