"""The op vocabulary shared by every stage: dtypes, ops with their typed arguments, the IR node,
and each op's shape/dtype rule. Base layer: imports nothing else of scellis."""

from scellis.ops.defs import Op
from scellis.ops.dtypes import DType
from scellis.ops.node import Node, ShapeError, const, make

__all__ = ["DType", "Node", "Op", "ShapeError", "const", "make"]
