"""Stage: typed IR. SSA functions over `scellis.ops` nodes: ordering, verification, text, structural key."""

from scellis.ir.function import Function, IRError, toposort, verify
from scellis.ir.key import structural_key
from scellis.ir.text import to_text

__all__ = ["Function", "IRError", "structural_key", "to_text", "toposort", "verify"]
