"""Stage: the update. Optimizers (SGD, momentum, Adam, AdamW), weight decay, gradient clipping and
learning-rate schedules, all as ordinary IR ops appended to a function that has gradients."""

from scellis.optim.optimizers import apply_optimizer, optimizer_state
from scellis.optim.schedules import learning_rate

__all__ = ["apply_optimizer", "learning_rate", "optimizer_state"]
