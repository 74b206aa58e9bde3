"""Stage: loop. The host's side of a run's loop program: what each rule has seen (a plateau's best value
and how many evaluations since it improved), the learning-rate scale, whether the run should stop, and
the decision log. The device's side (skip_batch) is in the training step itself (optim.optimizers).

Expects the program's rules (graph.rules). Guarantees: the decisions depend only on the metrics given,
in order, so a run replays them exactly; every decision taken is an Event with the step it happened at;
the state round-trips through JSON (a checkpoint holds it), so a resumed run decides as an unbroken one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from scellis.graph.rules import Every, Plateau, Rule, SetLr


@dataclass(frozen=True)
class Event:
    step: int  # steps run so far when it happened
    epoch: int  # counted from 1
    text: str

    def __str__(self) -> str:
        return f"step {self.step} (epoch {self.epoch}): {self.text}"


@dataclass
class LoopState:
    rules: tuple[Rule, ...]
    lr_scale: float = 1.0
    best: dict[int, float] = field(default_factory=dict)  # rule index -> the plateau's best value
    waits: dict[int, int] = field(default_factory=dict)  # rule index -> evaluations without improvement
    skipped: int = 0  # skipped steps already logged
    stopped: bool = False
    events: list[Event] = field(default_factory=list)

    def _log(self, step: int, epoch: int, text: str) -> None:
        self.events.append(Event(step, epoch, text))

    def _act(self, index: int, rule: Rule, step: int, epoch: int, why: str) -> list[str]:
        """Carry out a rule's host actions and log them; returns those the caller carries out (checkpoint:
        its key is the caller's to keep, since a checkpoint cannot hold its own key)."""
        for_caller = []
        for action in rule.then:
            if isinstance(action, SetLr):
                before, self.lr_scale = self.lr_scale, self.lr_scale * action.scale
                change = f"scale {before:g} -> {self.lr_scale:g}"
                self._log(step, epoch, f"learning rate x {action.scale:g} ({change}), {why}")
            elif action == "stop":
                self.stopped = True
                self._log(step, epoch, f"stop, {why}")
            elif action == "checkpoint":  # logged before it is written: the checkpoint holds its own entry
                self._log(step, epoch, f"checkpoint, {why}")
                for_caller.append(action)
        return for_caller

    def after_evaluation(self, step: int, epoch: int, metrics: dict[str, float]) -> list[str]:
        """Apply the evaluation rules to this evaluation's metrics (`loss`, `metric/<node>`)."""
        out = []
        for index, rule in enumerate(self.rules):
            if rule.on != "evaluation":
                continue
            when = rule.when
            if when is None:
                out += self._act(index, rule, step, epoch, "after every evaluation")
                continue
            assert isinstance(when, Plateau)
            name = "loss" if when.metric == "loss" else f"metric/{when.metric}"
            value = metrics[name]
            sign = 1.0 if when.mode == "min" else -1.0
            best = self.best.get(index)
            if math.isfinite(value) and (best is None or sign * (best - value) > when.min_delta):
                self.best[index], self.waits[index] = value, 0
                continue
            self.waits[index] = self.waits.get(index, 0) + 1
            if self.waits[index] >= when.patience:
                self.waits[index] = 0
                since = "its first finite value" if best is None else f"{best:.6g}"
                why = f"{when.metric} has not improved on {since} for {when.patience} evaluations"
                out += self._act(index, rule, step, epoch, why)
        return out

    def after_step(self, step: int, epoch: int) -> list[str]:
        """Host actions of `every N steps` rules due after step number `step` (counted from 1)."""
        out = []
        for index, rule in enumerate(self.rules):
            if rule.on == "step" and isinstance(rule.when, Every) and step % rule.when.count == 0:
                out += self._act(index, rule, step, epoch, f"every {rule.when.count} steps")
        return out

    def after_epoch(self, step: int, epoch: int) -> list[str]:
        out = []
        for index, rule in enumerate(self.rules):
            due = rule.when is None or (isinstance(rule.when, Every) and epoch % rule.when.count == 0)
            if rule.on == "epoch" and due:
                out += self._act(index, rule, step, epoch, f"after epoch {epoch}")
        return out

    def at_end(self, step: int, epoch: int) -> list[str]:
        out = []
        for index, rule in enumerate(self.rules):
            if rule.on == "end":
                out += self._act(index, rule, step, epoch, "at the end of the run")
        return out

    def note_skips(self, step: int, epoch: int, skipped: int, last_skipped: int) -> None:
        """Log the steps the device skipped since the last note, from its counters: `skipped` in all, the
        last of them at `last_skipped` (counted from 0, so it is step last_skipped + 1)."""
        new = skipped - self.skipped
        if new <= 0:
            return
        self.skipped = skipped
        reason = "the loss or a gradient was not finite"
        if new == 1:
            self._log(last_skipped + 1, epoch, f"skipped, {reason}")
        else:
            self._log(step, epoch, f"{new} steps skipped, the last at step {last_skipped + 1}: {reason}")

    def to_json(self) -> dict[str, Any]:
        """What a checkpoint keeps (the rules come from the program)."""
        return {
            "lr_scale": self.lr_scale,
            "best": {str(k): v for k, v in self.best.items()},
            "waits": {str(k): v for k, v in self.waits.items()},
            "skipped": self.skipped,
            "stopped": self.stopped,
            "events": [[e.step, e.epoch, e.text] for e in self.events],
        }

    @classmethod
    def from_json(cls, rules: tuple[Rule, ...], data: dict[str, Any]) -> LoopState:
        try:
            return cls(
                rules,
                float(data["lr_scale"]),
                {int(k): float(v) for k, v in data["best"].items()},
                {int(k): int(v) for k, v in data["waits"].items()},
                int(data["skipped"]),
                bool(data["stopped"]),
                [Event(int(s), int(e), str(t)) for s, e, t in data["events"]],
            )
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            raise ValueError(f"the loop state is malformed: {err!r}") from err
