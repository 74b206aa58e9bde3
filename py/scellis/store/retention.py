"""Which of a run's loop-program checkpoints stay stored: the last `keep` (KEEP unless set), the best by the
run's held-out loss, and every pinned one (a key a manifest or a Runs record keeps). The rule is one pure
function, `retained`, that the session applies as each rule checkpoint is written (page and CLI alike):
what the newest checkpoint makes the rule stop keeping is deleted then, and nothing else."""

from __future__ import annotations

import math
from collections.abc import Iterable, Set
from dataclasses import dataclass

KEEP = 3


@dataclass(frozen=True)
class Best:
    """The rule checkpoint with the lowest held-out loss so far (ties keep the earlier)."""

    loss: float
    step: int
    key: str

    def after(self, loss: float | None, step: int, key: str) -> Best:
        return self if loss is None or not math.isfinite(loss) or loss >= self.loss else Best(loss, step, key)

    @staticmethod
    def first(loss: float | None, step: int, key: str) -> Best | None:
        return None if loss is None or not math.isfinite(loss) else Best(loss, step, key)


def retained(written: Iterable[tuple[int, str]], keep: int, best: Best | None, pinned: Set[str]) -> set[str]:
    """The keys of `written` (step order) the rule keeps: the last `keep`, the best and the pinned."""
    keys = [key for _, key in written]
    kept = set(keys[-keep:]) if keep > 0 else set()
    if best is not None:
        kept.add(best.key)
    return kept | (set(keys) & pinned)


def check_keep(keep: int) -> int:
    if not isinstance(keep, int) or isinstance(keep, bool) or keep < 1:
        raise ValueError(f"keep must be a whole number of checkpoints, at least 1, not {keep!r}")
    return keep
