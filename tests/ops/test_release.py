"""Releasing an IR graph is a loop, not a recursion (Node.__del__): a chain 200,000 nodes deep is freed
in a thread with a small stack, every node is freed, and nothing is left waiting."""

from __future__ import annotations

import gc
import threading
import weakref

from scellis.ops import DType, Op
from scellis.ops.node import _RELEASE, Node


def test_a_deep_chain_is_freed_in_a_loop_on_a_small_stack() -> None:
    seen: list[weakref.ref[Node]] = []
    failures: list[BaseException] = []

    def build_and_drop() -> None:
        try:
            x = Node(Op.CONST, DType.F32, ())
            for i in range(200_000):
                x = Node(Op.NEG, DType.F32, (), (x,))
                if i % 1000 == 0:
                    seen.append(weakref.ref(x))
            del x
        except BaseException as err:  # reported below, in the test's thread
            failures.append(err)

    gc.collect()
    size = threading.stack_size(256 * 1024)
    try:
        thread = threading.Thread(target=build_and_drop)
        thread.start()
        thread.join()
    finally:
        threading.stack_size(size)
    assert not failures
    assert len(seen) == 200 and all(ref() is None for ref in seen)
    assert _RELEASE.pending == [] and not _RELEASE.running


def test_a_shared_source_outlives_one_consumer() -> None:
    shared = Node(Op.CONST, DType.F32, ())
    a = Node(Op.NEG, DType.F32, (), (shared,))
    b = Node(Op.EXP, DType.F32, (), (shared,))
    del a
    assert b.src == (shared,) and _RELEASE.pending == []
