"""Stage: gradients. Reverse-mode autodiff as an IR -> IR pass, one VJP rule per op."""

from scellis.autodiff.grad import AutodiffError, grad
from scellis.autodiff.rules import VJP

__all__ = ["VJP", "AutodiffError", "grad"]
