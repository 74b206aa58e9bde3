"""What a drawn node turns into: the context the catalog's builders make its IR nodes in.

It hands out the IR inputs a node needs (its parameters, running statistics, random keys) under
stable names (`<node id>.<name>`), and records how each parameter is initialised, so the same
context serves validation (types only), the training step, evaluation and parameter init.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from scellis.ops import DType, Node, Op, ShapeError, const, make
from scellis.ops.defs import Role
from scellis.ops.node import input_node
from scellis.rng import key_input, position_input

BATCH_ROWS = "batch.rows"  # with a resident data set: the examples of this step's batch, int32 [batch]


def dataset_input(node_id: str) -> str:
    """The name of the whole split of a program input held on the device (a resident data set)."""
    return f"dataset.{node_id}"


class Mode(enum.Enum):
    TRAIN = "train"  # dropout draws masks, batch norm uses and updates batch statistics
    EVAL = "eval"  # dropout is the identity, batch norm uses its running statistics


@dataclass(frozen=True)
class Init:
    """How a parameter or state starts: `uniform` in [-scale, scale], `normal` with std `scale`,
    `zeros`, `ones`, `fill` (every value `scale`), or `pretrained` (the values of `tensor` in the program's
    weights file, which the host writes). Random inits draw from the `init` substream."""

    kind: str
    scale: float = 0.0
    tensor: str = ""  # pretrained only
    nf4: tuple[int, ...] = ()  # pretrained and kept as NF4 words: the tensor's [rows, cols], packed on the device


@dataclass(frozen=True)
class Slot:
    """A parameter or piece of state a node owns."""

    name: str
    shape: tuple[int, ...]
    init: Init
    trainable: bool
    node_id: str


class Builder:
    """Collects the IR inputs that the builders create, in creation order (which is program order)."""

    def __init__(self, batch: int, mode: Mode, examples: int | None = None) -> None:
        self.batch = batch
        self.mode = mode
        self.examples = examples  # a resident data set's number of examples; None: batches are streamed
        self.inputs: list[Node] = []
        self.params: list[Slot] = []
        self.states: list[Slot] = []
        self.state_updates: list[tuple[str, Node]] = []
        self._named: dict[str, Node] = {}
        self._sites: dict[str, int] = {}

    def _input(self, name: str, role: Role, dtype: DType, shape: tuple[int, ...]) -> Node:
        if name not in self._named:
            self._named[name] = input_node(name, role, dtype, shape)
            self.inputs.append(self._named[name])
        return self._named[name]

    def data(self, node_id: str, role: Role, dtype: DType, shape: tuple[int, ...]) -> Node:
        """A batch input: the program's own input node, with the batch axis in front. With a resident data
        set, the batch is gathered on the device from the whole split (`dataset.<node id>`, written once)
        by the batch's example indices (`batch.rows`, the one input written every step)."""
        if self.examples is None:
            return self._input(node_id, role, dtype, (self.batch, *shape))
        table = self._input(dataset_input(node_id), Role.DATASET, dtype, (self.examples, *shape))
        return make(Op.GATHER, table, self._input(BATCH_ROWS, Role.DATA, DType.I32, (self.batch,)))

    def param(
        self, node_id: str, name: str, shape: tuple[int, ...], init: Init, trainable: bool, *, dtype: DType = DType.F32
    ) -> Node:
        """A parameter input; u32 for NF4 words (a frozen, pretrained weight: `init.nf4`)."""
        full = f"{node_id}.{name}"
        self.params.append(Slot(full, shape, init, trainable, node_id))
        return self._input(full, Role.PARAM, dtype, shape)

    def state(self, node_id: str, name: str, shape: tuple[int, ...], init: Init) -> Node:
        full = f"{node_id}.{name}"
        self.states.append(Slot(full, shape, init, False, node_id))
        return self._input(full, Role.STATE, DType.F32, shape)

    def update_state(self, state: Node, value: Node) -> None:
        """In training, `value` becomes the state's next value (an output `state/<name>`). ShapeError (on
        the first input) when `state` is no state input, or one that has its next value already."""
        name = next((n for n, node in self._named.items() if node is state and n in self._state_names()), None)
        if name is None:
            raise ShapeError("the state input must come straight from a state node", 0)
        if any(n == name for n, _ in self.state_updates):
            raise ShapeError(f"{name} has its next value from another node already: one update a state", 0)
        self.state_updates.append((name, value))

    def _state_names(self) -> set[str]:
        return {s.name for s in self.states}

    def rng(self, substream: str) -> tuple[Node, Node, int]:
        """(key, position, site) for one more draw site of `substream` in this program: its draws change
        at every step (the host writes the substream's next position each step)."""
        position = self._input(position_input(substream), Role.SETTING, DType.U32, ())
        return self._key(substream), position, self._site(substream)

    def rng_fixed(self, substream: str) -> tuple[Node, Node, int]:
        """(key, position 0, site): one more draw site of `substream` whose draws are the same at every
        step of a run (e.g. a bootstrap's resamples, which every Newton step refits)."""
        return self._key(substream), const(0, DType.U32), self._site(substream)

    def _key(self, substream: str) -> Node:
        return self._input(key_input(substream), Role.RNG, DType.U32, (2,))

    def _site(self, substream: str) -> int:
        site = self._sites.get(substream, 0)
        self._sites[substream] = site + 1
        return site
