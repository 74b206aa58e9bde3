"""Deep graphs in the page: releasing an IR graph thousands of nodes deep must not overflow the browser's
stack. Under Pyodide a recursive release of a few thousand nodes is a fatal error that ends the page's
Python; the engine releases graphs in a loop (ops.node.Node.__del__), which this checks with a chain of
100,000 nodes and a 2,000-node program validated (and its type-checking graph dropped) in the page."""

from __future__ import annotations

from appdriver import LoadedApp

PAGE = """
from scellis.examples import deep_chain
from scellis.graph import validate
from scellis.ops import DType, Op
from scellis.ops.node import Node
x = Node(Op.CONST, DType.F32, ())
for _ in range(100_000):
    x = Node(Op.NEG, DType.F32, (), (x,))
del x
program = validate(deep_chain(2000))
str(len(program.nodes))
"""


def test_a_deep_graph_is_released_without_overflowing_the_stack(loaded: LoadedApp) -> None:
    out = loaded.page.evaluate("(code) => window.scellis.python(code)", PAGE)
    assert int(out) == 2000  # the program's nodes, and Python still alive to count them
