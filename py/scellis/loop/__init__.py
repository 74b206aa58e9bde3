"""Stage: loop. A run's loop program: its text (what the Guide shows) and the host's decisions by its
rules (LoopState). The device's decisions are compiled into the training step (optim.optimizers)."""

from scellis.loop.state import Event, LoopState
from scellis.loop.text import loop_text

__all__ = ["Event", "LoopState", "loop_text"]
