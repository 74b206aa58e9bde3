"""Stage: export. A checkpoint written by an exported train.py, read back as a Scellis checkpoint.

Expects the bytes of a train.py checkpoint (safetensors: the program's parameter, state and optimizer
names, metadata `scellis.torch` with the run's place) and the export's program key and level. Guarantees:
`from_torch` returns a Checkpoint of that program key and level holding exactly the tensors a Scellis
checkpoint of the program holds (float32 parameters and state, int32 counters), the step, epoch, cursor,
RNG positions and loop state train.py reached, and the decision log it kept with a last entry naming the
PyTorch run; anything else raises TorchCheckpointError naming the tensor or field at fault. `Session.resume` then
goes on from it as from a checkpoint of its own (another device: the log says so). `take_back` does it for a
compiled program, at the level given or the one the checkpoint names.
"""

from __future__ import annotations

import json
from typing import Any

from scellis.ir.function import input_name
from scellis.levels import Level
from scellis.models.safetensors import SafetensorsError, read_safetensors
from scellis.pipeline import Compiled
from scellis.rng import RngState
from scellis.store.checkpoint import Checkpoint
from scellis.store.history import History
from scellis.store.tensorfile import STORED, Tensor
from scellis.torchexport.bundle import kept_names

FORMAT = "scellis.torch-checkpoint/1"
COUNTERS = ("opt.step", "loop.seen", "loop.skipped", "loop.last_skipped")


class TorchCheckpointError(ValueError):
    """A file that is not a train.py checkpoint of the expected program; the message names what differs."""


def _field(state: dict[str, Any], name: str, kind: type | tuple[type, ...]) -> Any:
    value = state.get(name)
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is int):
        raise TorchCheckpointError(f"its metadata field {name!r} is {value!r}, not a {getattr(kind, '__name__', kind)}")
    return value


def from_torch(
    data: bytes, *, program: str, level: Level, expect: dict[str, tuple[str, tuple[int, ...]]]
) -> Checkpoint:
    """The Scellis checkpoint of train.py checkpoint `data` for program key `program` at `level`; `expect`:
    name -> (dtype, shape) of every tensor a Scellis checkpoint of that program holds."""
    try:
        tensors = read_safetensors(data)
    except SafetensorsError as err:
        raise TorchCheckpointError(f"not a safetensors file: {err}") from None
    raw = tensors.metadata.get("scellis.torch")
    if raw is None:
        raise TorchCheckpointError("it has no scellis.torch metadata: it was not written by an exported train.py")
    try:
        state = json.loads(raw)
    except ValueError as err:
        raise TorchCheckpointError(f"its scellis.torch metadata is not JSON: {err}") from None
    if not isinstance(state, dict) or state.get("format") != FORMAT:
        raise TorchCheckpointError(f"its scellis.torch metadata is not of format {FORMAT}")
    if state.get("program") != program:
        raise TorchCheckpointError(f"it is a checkpoint of program {state.get('program')}, not of {program}")
    if state.get("level") != level.value:
        raise TorchCheckpointError(f"it continues a run at level {state.get('level')}, not {level.value}")
    got = set(tensors.tensors)
    missing, extra = sorted(set(expect) - got), sorted(got - set(expect))
    if missing or extra:
        raise TorchCheckpointError(f"its tensors do not match the program's: missing {missing}, unexpected {extra}")
    out: dict[str, Tensor] = {}
    for name, (dtype, shape) in expect.items():
        t = tensors.tensors[name]
        if (t.dtype, tuple(t.shape)) != (dtype, shape):
            raise TorchCheckpointError(f"tensor {name!r} is {t.dtype} {list(t.shape)}, expected {dtype} {list(shape)}")
        out[name] = Tensor(dtype, shape, bytes(t.data))
    step, epoch, cursor = (_field(state, k, int) for k in ("step", "epoch", "cursor"))
    positions = _field(state, "positions", dict)
    loop = dict(_field(state, "loop", dict))
    events = [tuple(e) for e in loop.pop("events", [])]
    by = _field(state, "by", str)
    events.append((step, epoch + 1, f"imported from a checkpoint of {by} at step {step}"))
    metrics = state.get("metrics") or {}
    loss = metrics.get("loss") if isinstance(metrics, dict) else None
    scellis_loop = {"state": loop, "order_drawn": cursor > 0, "by_rule": False, "best": None, "loss": loss}
    rng = RngState(_field(state, "seed", int), {str(k): int(v) for k, v in positions.items()})
    return Checkpoint(program, level, by, step, epoch, cursor, rng, scellis_loop, out, History(events=tuple(events)))


def expected_tensors(compiled: Compiled, level: Level) -> dict[str, tuple[str, tuple[int, ...]]]:
    """name -> (dtype, shape) of every tensor a Scellis checkpoint of the program holds at `level`."""
    model, optimizer = kept_names(compiled, level)
    kept = set(model) | set(optimizer)
    nodes = {input_name(n): n for n in compiled.at(level, frozenset()).step.inputs}
    counters = [n for n in ("loop.seen", "loop.skipped", "loop.last_skipped") if n in nodes]
    return {name: (STORED[nodes[name].dtype], nodes[name].shape) for name in [*sorted(kept), *counters]}


def checkpoint_level(data: bytes) -> Level:
    """The level a train.py checkpoint continues a run at (its metadata says); TorchCheckpointError otherwise."""
    try:
        raw = read_safetensors(data).metadata.get("scellis.torch")
    except SafetensorsError as err:
        raise TorchCheckpointError(f"not a safetensors file: {err}") from None
    try:
        return Level(json.loads(raw or "{}").get("level"))
    except ValueError:
        raise TorchCheckpointError(
            "it has no scellis.torch metadata naming a level: was it written by train.py?"
        ) from None


def take_back(data: bytes, compiled: Compiled, level: Level | None = None) -> Checkpoint:
    """`from_torch` for the compiled program at `level` (None: the level the checkpoint's metadata names)."""
    at = checkpoint_level(data) if level is None else level
    return from_torch(data, program=compiled.at(at, frozenset()).key, level=at, expect=expected_tensors(compiled, at))
