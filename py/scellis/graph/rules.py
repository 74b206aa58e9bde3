"""The loop program's rules: what a training run does besides "epochs of shuffled batches", written in
the program's `loop` section as data; scellis.loop prints them and decides by them.

A rule is `{"on": HOOK, "if": CONDITION, "then": [ACTION, ...]}` (`if` may be left out: always).

| on | if | then | decided |
| --- | --- | --- | --- |
| `step` | `{"non_finite": ["loss", "gradients"]}` | `skip_batch` | on the device, by predication: no stall |
| `step` | `{"every": N}` | `checkpoint` | by the host, between steps |
| `evaluation` | `{"plateau": {...}}` or none | `{"set_lr": {"scale": s}}`, `stop`, `checkpoint` | by the host |
| `epoch` | `{"every": N}` (epochs) or none | `checkpoint`, `stop` | by the host, after the epoch |
| `end` | none | `checkpoint` | by the host, once the run ends |

A plateau is `{"metric": "loss" or a metric's node id, "patience": P, "min_delta": d, "mode": "min" or
"max"}`: it holds once P evaluations in a row have not improved on the best by more than d (the count
starts again after the rule fires). Evaluation runs every `evaluate_every` steps (0: at each epoch's end),
on the held-out split.

Expects untrusted JSON; every problem is reported with its path (`loop.rules[1].if.plateau.patience`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from scellis.graph.errors import Issue, show

HOOKS = ("step", "evaluation", "epoch", "end")
WATCHED = ("loss", "gradients")
MODES = ("min", "max")


@dataclass(frozen=True)
class NonFinite:
    """The step's loss or any gradient (as listed in `watch`) is inf or NaN."""

    watch: tuple[str, ...]


@dataclass(frozen=True)
class Every:
    """Every `count` steps (on `step`) or epochs (on `epoch`)."""

    count: int


@dataclass(frozen=True)
class Plateau:
    metric: str
    patience: int
    min_delta: float = 0.0
    mode: str = "min"


Condition = NonFinite | Every | Plateau | None


@dataclass(frozen=True)
class SetLr:
    """Multiply the learning rate (the schedule's value) by `scale` from the next step on."""

    scale: float


Action = str | SetLr  # "skip_batch", "stop", "checkpoint", or a SetLr

ALLOWED: dict[str, tuple[tuple[type | None, ...], tuple[str, ...]]] = {  # hook -> (conditions, actions)
    "step": ((NonFinite, Every), ("skip_batch", "checkpoint")),
    "evaluation": ((Plateau, type(None)), ("set_lr", "stop", "checkpoint")),
    "epoch": ((Every, type(None)), ("checkpoint", "stop")),
    "end": ((type(None),), ("checkpoint",)),
}


@dataclass(frozen=True)
class Rule:
    on: str
    when: Condition
    then: tuple[Action, ...]

    @property
    def skips(self) -> bool:
        """Decided on the device: the step's update is kept only where everything watched is finite."""
        return "skip_batch" in self.then


def read_rules(data: Any, path: str, issues: list[Issue]) -> tuple[Rule, ...]:
    """The rules of `data` (a list), each checked; problems go to `issues` with their paths."""
    if data is None:
        return ()
    if not isinstance(data, list):
        issues.append(Issue(path, f"must be a list of rules, got {type(data).__name__}"))
        return ()
    rules = []
    for i, raw in enumerate(data):
        rule = _read_rule(raw, f"{path}[{i}]", issues)
        if rule is not None:
            rules.append(rule)
    return tuple(rules)


def _read_rule(raw: Any, path: str, issues: list[Issue]) -> Rule | None:
    if not isinstance(raw, dict):
        issues.append(Issue(path, f"a rule is an object with on, if and then, got {type(raw).__name__}"))
        return None
    unknown = sorted(set(raw) - {"on", "if", "then"})
    if unknown:
        issues.append(Issue(f"{path}.{unknown[0]}", "unknown field (known: on, if, then)"))
    on = raw.get("on")
    if on not in HOOKS:
        issues.append(Issue(f"{path}.on", f"must be one of {', '.join(HOOKS)}, got {show(on)}"))
        return None
    count = len(issues)
    when = _read_condition(raw.get("if"), f"{path}.if", issues)
    then = _read_actions(raw.get("then"), f"{path}.then", issues)
    if len(issues) == count:
        problem = _misplaced(on, when, then, path)
        if problem is None:
            return Rule(on, when, then)
        issues.append(problem)
    return None


def _misplaced(on: str, when: Condition, then: tuple[Action, ...], path: str) -> Issue | None:
    """What is wrong with a condition or an action on this hook (ALLOWED), if anything."""
    conditions, actions = ALLOWED[on]
    if type(when) not in conditions:
        named = " or ".join(_condition_name(c) for c in conditions)
        return Issue(f"{path}.if", f"on {on}, the condition must be {named}, got {_condition_name(type(when))}")
    for j, action in enumerate(then):
        name = "set_lr" if isinstance(action, SetLr) else action
        if name not in actions:
            return Issue(f"{path}.then[{j}]", f"on {on}, the actions are {', '.join(actions)}; got {name}")
    if isinstance(when, NonFinite) != ("skip_batch" in then):
        return Issue(path, "skip_batch goes with a non_finite condition, and a non_finite condition with it")
    return None


def _condition_name(kind: type | None) -> str:
    names = {NonFinite: "non_finite", Every: "every", Plateau: "plateau", type(None): "none"}
    return names.get(kind, "unknown") if kind is not None else "none"


def _read_condition(raw: Any, path: str, issues: list[Issue]) -> Condition:
    if raw is None:
        return None
    if not isinstance(raw, dict) or len(raw) != 1:
        issues.append(Issue(path, f"a condition is an object with one of non_finite, every, plateau; got {show(raw)}"))
        return None
    ((kind, value),) = raw.items()
    reader = CONDITIONS.get(kind)
    if reader is None:
        issues.append(Issue(f"{path}.{kind}", "unknown condition (known: non_finite, every, plateau)"))
        return None
    return reader(value, f"{path}.{kind}", issues)


def _read_non_finite(value: Any, path: str, issues: list[Issue]) -> NonFinite | None:
    watched = value if isinstance(value, list) else None
    if not watched or any(w not in WATCHED for w in watched) or len(set(watched)) != len(watched):
        issues.append(Issue(path, f"must list some of {', '.join(WATCHED)}, got {show(value)}"))
        return None
    return NonFinite(tuple(watched))


def _read_every(value: Any, path: str, issues: list[Issue]) -> Every | None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        issues.append(Issue(path, f"must be a positive whole number, got {show(value)}"))
        return None
    return Every(value)


def _read_plateau(raw: Any, path: str, issues: list[Issue]) -> Plateau | None:
    if not isinstance(raw, dict):
        issues.append(Issue(path, f"must be an object with metric and patience, got {show(raw)}"))
        return None
    unknown = sorted(set(raw) - {"metric", "patience", "min_delta", "mode"})
    if unknown:
        issues.append(Issue(f"{path}.{unknown[0]}", "unknown field (known: metric, patience, min_delta, mode)"))
    metric, patience = raw.get("metric"), raw.get("patience")
    min_delta, mode = raw.get("min_delta", 0.0), raw.get("mode", "min")
    count = len(issues)
    if not isinstance(metric, str) or not metric:
        issues.append(Issue(f"{path}.metric", f"must name loss or a metric's node, got {show(metric)}"))
    if not isinstance(patience, int) or isinstance(patience, bool) or patience < 1:
        issues.append(
            Issue(f"{path}.patience", f"must be a positive whole number of evaluations, got {show(patience)}")
        )
    if not isinstance(min_delta, int | float) or isinstance(min_delta, bool) or not min_delta >= 0:
        issues.append(Issue(f"{path}.min_delta", f"must be a number at least 0, got {show(min_delta)}"))
    if mode not in MODES:
        issues.append(Issue(f"{path}.mode", f"must be min or max, got {show(mode)}"))
    if len(issues) > count:
        return None
    assert isinstance(patience, int)  # checked above
    return Plateau(str(metric), patience, float(min_delta), str(mode))


CONDITIONS = {"non_finite": _read_non_finite, "every": _read_every, "plateau": _read_plateau}


def _read_actions(raw: Any, path: str, issues: list[Issue]) -> tuple[Action, ...]:
    if not isinstance(raw, list) or not raw:
        issues.append(Issue(path, f"must be a non-empty list of actions, got {show(raw)}"))
        return ()
    out: list[Action] = []
    for i, action in enumerate(raw):
        if action in ("skip_batch", "stop", "checkpoint"):
            out.append(action)
        elif isinstance(action, dict) and set(action) == {"set_lr"}:
            spec = action["set_lr"]
            factor = spec.get("scale") if isinstance(spec, dict) and set(spec) == {"scale"} else None
            if not isinstance(factor, int | float) or isinstance(factor, bool) or not 0 < factor < float("inf"):
                issues.append(Issue(f"{path}[{i}].set_lr", f'must be {{"scale": a positive number}}, got {show(spec)}'))
                continue
            out.append(SetLr(float(factor)))
        else:
            issues.append(
                Issue(f"{path}[{i}]", f"unknown action {show(action)} (known: skip_batch, set_lr, stop, checkpoint)")
            )
    return tuple(out)


def check_metrics(rules: tuple[Rule, ...], metrics: tuple[str, ...], issues: list[Issue]) -> None:
    """Each plateau watches the loss or one of the program's metrics."""
    for i, rule in enumerate(rules):
        if isinstance(rule.when, Plateau) and rule.when.metric != "loss" and rule.when.metric not in metrics:
            known = ", ".join(("loss", *metrics))
            issues.append(Issue(f"loop.rules[{i}].if.plateau.metric", f"{rule.when.metric!r} is not one of {known}"))


def rule_text(rule: Rule) -> str:
    """One rule as a line of the loop program's text."""
    return f"{_condition_text(rule)}: {', '.join(_action_text(a) for a in rule.then)}"


def _condition_text(rule: Rule) -> str:
    when = rule.when
    if isinstance(when, NonFinite):
        watched = " or ".join("any gradient" if w == "gradients" else "the loss" for w in when.watch)
        return f"if {watched} is not finite"
    if isinstance(when, Every):
        unit = "steps" if rule.on == "step" else "epochs"
        return f"every {when.count} {unit}"
    if isinstance(when, Plateau):
        better = "fallen" if when.mode == "min" else "risen"
        by = f" by more than {when.min_delta:g}" if when.min_delta else ""
        return f"if {when.metric} has not {better}{by} for {when.patience} evaluations"
    return "always"


def _action_text(action: Action) -> str:
    if isinstance(action, SetLr):
        return f"learning rate x {action.scale:g}"
    return {
        "skip_batch": "skip this batch's update (decided on the device)",
        "stop": "stop",
        "checkpoint": "checkpoint",
    }[action]
