"""Float16 storage (the program setting `memory.storage`): the training step, evaluation and init -> the
same functions holding parameters and the activations kept for backward in float16, with float32 master
weights in the optimizer. Arithmetic stays float32: a stored value is cast to float16 where it is
computed and back to float32 wherever it is read (the lowering writes every float16 value to a buffer
and converts on load, so the cast back costs nothing).

Expects the forward function and the gradient functions built from it (they share the forward's nodes),
and training steps built from those. A node's phase is the first of forward, backward (any gradient
function) and optimizer (the rest) that holds it. Guarantees:
- every PARAM input is float16 (same name and role); forward and backward read it widened to float32;
- each parameter `p` the step updates gets a float32 master copy, the STATE input `opt.master/<p>`: the
  optimizer reads and updates the master, outputs it as `state/opt.master/<p>`, and `param/<p>` is the
  updated master rounded to float16 (init outputs both, the second from the first);
- every float32 forward value a backward node reads (through views: the value they view) that is
  computed, and not a scalar, is rounded to float16 where it is computed; forward and backward both read
  the rounded value, so they agree on the activations, and outputs (loss, metrics, running statistics)
  keep the exact value;
- gradients and optimizer state stay float32.

It needs no loss scaling of its own: it rounds what is stored, not what is summed, and gradients stay
float32. At level fast, where the step scales its loss (float16 matmul tiles), the scaled step stores the
same way. A value past float16's range (65504) is stored as inf: where the step scales its loss, a step
whose gradients are then not finite is skipped; elsewhere it reaches the parameters, as at float32 when
a float32 value overflows.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from scellis.ir.function import Function, input_name, input_role, toposort
from scellis.ir.owners import Owners
from scellis.ops import DType, Node, Op, make
from scellis.ops.build import cast
from scellis.ops.defs import Role
from scellis.ops.node import input_node

MASTER = "opt.master/"
STORAGES = {"float32": frozenset(), "float16": frozenset({"shader-f16"})}  # -> device features each needs
VIEWS = {Op.RESHAPE, Op.EXPAND, Op.PERMUTE, Op.SLICE}


class StorageUnsupported(ValueError):
    """A program asks for a storage type the device it would run on cannot hold."""


def master_name(param: str) -> str:
    return f"{MASTER}{param}"


def check_storage(storage: str, features: frozenset[str]) -> None:
    """Raise StorageUnsupported unless a device with `features` can hold `storage` (never a fallback)."""
    missing = sorted(STORAGES[storage] - features)
    if missing:
        has = ", ".join(sorted(features)) or "none"
        raise StorageUnsupported(
            f"{storage} storage (the program's memory.storage) needs the device feature {', '.join(missing)}, "
            f"which this device lacks (its features: {has}); store in float32 here, or use a WebGPU device "
            f"with {', '.join(missing)}"
        )


def _root(node: Node) -> Node:
    """The value a view reads (itself when it is no view)."""
    while node.op in VIEWS:
        node = node.src[0]
    return node


class Float16Storage:
    """The rewrite of one program's forward, gradient and step functions, with one memo: functions that
    share nodes get the same rewritten nodes, so phases still tell forward from backward afterwards. With
    `owners`, each node it makes has the owners of the node it rewrites (a cast: of what it rounds or
    widens; a float16 parameter or a master: of the parameter)."""

    def __init__(self, forward: Function, backwards: Sequence[Function], owners: Owners | None = None) -> None:
        self.owners = owners
        self.forward_ids = {id(n) for n in forward.nodes()}
        self.backward_ids = {id(n) for fn in backwards for n in fn.nodes()} - self.forward_ids
        self.kept: set[int] = set()  # the activations kept for backward: rounded to float16
        for fn in backwards:
            for node in fn.nodes():
                if id(node) in self.backward_ids:
                    self.kept.update(id(r) for r in map(_root, node.src) if self._keepable(r))
        self.exact: dict[int, Node] = {}  # node -> its rewrite
        self.stored: dict[int, Node] = {}  # kept activation -> its rewrite rounded to float16 and widened
        self.params: dict[str, Node] = {}  # float16 inputs
        self.working: dict[str, Node] = {}  # ... widened to float32
        self.masters: dict[str, Node] = {}

    def _keepable(self, node: Node) -> bool:
        computed = node.op not in (Op.INPUT, Op.CONST)
        return computed and id(node) in self.forward_ids and node.dtype is DType.F32 and node.shape != ()

    def _param(self, node: Node) -> Node:
        name = input_name(node)
        if name not in self.params:
            self.params[name] = self._made(input_node(name, Role.PARAM, DType.F16, node.shape), node)
            self.working[name] = self._made(cast(self.params[name], DType.F32), node)
        return self.working[name]

    def _master(self, node: Node) -> Node:
        name = input_name(node)
        if name not in self.masters:
            self.masters[name] = self._made(input_node(master_name(name), Role.STATE, DType.F32, node.shape), node)
        return self.masters[name]

    def _made(self, new: Node, old: Node) -> Node:
        """`new`, made in place of `old`, with `old`'s owners."""
        if self.owners is not None:
            self.owners.keep(new, old)
        return new

    def _read(self, src: Node, user: Node, updated: frozenset[str]) -> Node:
        """What `user` reads in place of `src`: the optimizer reads updated parameters' masters."""
        if src.op is Op.INPUT and input_role(src) is Role.PARAM:
            optimizer = id(user) not in self.forward_ids and id(user) not in self.backward_ids
            return self._master(src) if optimizer and input_name(src) in updated else self._param(src)
        return self.stored[id(src)] if id(src) in self.stored else self.exact.get(id(src), src)

    def _rewrite(self, fn: Function, updated: frozenset[str]) -> Callable[[Node], Node]:
        for node in toposort([*fn.first, *(n for _, n in fn.outputs)]):
            if node.op is Op.INPUT or id(node) in self.exact:
                continue
            src = tuple(self._read(s, node, updated) for s in node.src)
            same = all(a is b for a, b in zip(src, node.src, strict=True))
            new = node if same else self._made(make(node.op, *src, arg=node.arg), node)
            self.exact[id(node)] = new
            if id(node) in self.kept:
                self.stored[id(node)] = self._made(cast(self._made(cast(new, DType.F16), node), DType.F32), node)
        return lambda node: self.exact.get(id(node), node)

    def function(self, fn: Function) -> Function:
        """`fn` (the forward, a gradient function or a step built from them) stored in float16."""
        updated = frozenset(name.removeprefix("param/") for name, _ in fn.outputs if name.startswith("param/"))
        value = self._rewrite(fn, updated)
        outputs: list[tuple[str, Node]] = []
        for name, node in fn.outputs:
            param = name.removeprefix("param/")
            if param != name:  # the updated master, and the float16 copy rounded from it
                rounded = self._made(cast(value(node), DType.F16), node)
                outputs += [(name, rounded), (f"state/{master_name(param)}", value(node))]
            else:
                outputs.append((name, value(node)))
        inputs = [self._input(n) for n in fn.inputs]
        inputs += [self._master(n) for n in fn.inputs if input_name(n) in updated]
        return Function(fn.name, tuple(inputs), tuple(outputs), tuple(map(value, fn.first)))

    def _input(self, node: Node) -> Node:
        """A PARAM input's float16 replacement; any other input as it is."""
        if input_role(node) is not Role.PARAM:
            return node
        self._param(node)
        return self.params[input_name(node)]


def params_in_float16(fn: Function) -> Function:
    """`fn` (evaluation) reading its parameters from float16 storage."""
    return Float16Storage(fn, ()).function(fn)


def init_in_float16(init: Function, updated: Sequence[str]) -> Function:
    """`init` with every `param/<p>` rounded to float16, and for each parameter in `updated` its float32
    master `state/opt.master/<p>` (the value the float16 one is rounded from)."""
    outputs: list[tuple[str, Node]] = []
    for name, node in init.outputs:
        param = name.removeprefix("param/")
        if param == name:
            outputs.append((name, node))
            continue
        outputs.append((name, cast(node, DType.F16)))
        if param in updated:
            outputs.append((f"state/{master_name(param)}", node))
    return Function(init.name, init.inputs, tuple(outputs), init.first)
