"""Stage: kernels. The kernel schedule of an IR function: fusion of elementwise chains into one
kernel and into the epilogue of the matmul / reduction / convolution they follow, views instead of
copies, and the kernel variant chosen per determinism level."""

from scellis.lower.kernels import Buffer, Copy, Expr, Kernel, Kind, Schedule, View
from scellis.lower.schedule import lower

__all__ = ["Buffer", "Copy", "Expr", "Kernel", "Kind", "Schedule", "View", "lower"]
