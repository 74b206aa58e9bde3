"""Stage: export. Everything a PyTorch run of a program needs, as files (name -> bytes), in pure Python so the
page writes the same zip the CLI writes a folder of.

Expects the program JSON, its Compiled form at the level the run continues at, the tensors it starts from
(every parameter and state by its program name, float32; optionally the optimizer's `opt.*` state and the
loop counters of a checkpoint), the train and test splits (empty for a program without input nodes), and
where it starts (`Start`: step 0 of a fresh run, or a checkpoint's place). Guarantees: `export_files`
returns model.py (scellis.torchexport.model), train.py (train_torch.py with its CONFIG),
weights.safetensors, for a program that reads data data/train.safetensors and data/test.safetensors
(features and labels as the engine reads them) and data/orders.safetensors (each epoch's order of
training examples from the `shuffle` substream, when the loop shuffles), and manifest.json (program key,
level, source checkpoint, data versions, the SHA-256 of every file, engine). A program without a loss (a
simulation, an analysis) is exported with its states and draws; its train.py runs in one process. A program
that cannot be exported raises ExportError naming why (an op without a torch lowering, a batch the data
cannot fill).
"""

from __future__ import annotations

import hashlib
import json
import pprint
import struct
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from scellis.datasets import Split
from scellis.graph.rules import Rule, SetLr
from scellis.graph.settings import optimizer_json
from scellis.ir.function import input_name, input_role
from scellis.manifest.pins import Engine, data_json, data_versions
from scellis.models.safetensors import write_safetensors
from scellis.models.weights import bind
from scellis.ops import nf4
from scellis.ops.defs import Role
from scellis.pipeline import Compiled
from scellis.rng import permutation, position_substream
from scellis.store.checkpoint import Checkpoint
from scellis.store.history import History
from scellis.store.tensorfile import Tensor
from scellis.torchexport.model import Unsupported, generate

FORMAT = "scellis.torch-export/1"
TRAIN_FILE = "train_torch.py"
CONFIG_LINE = "CONFIG: dict[str, Any] = {}  # the run's settings, written by `scellis export torch`"


class ExportError(ValueError):
    """The program cannot be handed to PyTorch; the message says why."""


@dataclass(frozen=True)
class Start:
    """Where the exported run begins: a fresh run's step 0, or a checkpoint's place (and its key)."""

    seed: int
    step: int = 0
    epoch: int = 0
    cursor: int = 0
    updates: int = 0  # the optimizer's step counter (opt.step)
    positions: dict[str, int] = field(default_factory=lambda: {"init": 1})
    loop: dict[str, Any] | None = None  # the loop rules' state (scellis.loop.LoopState.to_json)
    checkpoint: str | None = None  # the Scellis checkpoint's key

    def to_json(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "epoch": self.epoch,
            "cursor": self.cursor,
            "updates": self.updates,
            "positions": dict(self.positions),
            "loop": self.loop,
        }


def start_of(checkpoint: Checkpoint, key: str) -> Start:
    """Where a run goes on from `checkpoint` (stored under `key`), its decision log in the loop's state."""
    state = dict(checkpoint.loop["state"])
    history = checkpoint.history
    state["events"] = [list(e) for e in history.events] if isinstance(history, History) else []
    steps = checkpoint.tensors.get("opt.step")
    return Start(
        seed=checkpoint.rng.seed,
        step=checkpoint.step,
        epoch=checkpoint.epoch,
        cursor=checkpoint.cursor,
        updates=int.from_bytes(steps.data, "little", signed=True) if steps is not None else 0,
        positions=dict(checkpoint.rng.positions),
        loop=state,
        checkpoint=key,
    )


def pretrained_tensors(
    compiled: Compiled, weights: bytes | None, packed: dict[str, Tensor] | None = None
) -> dict[str, Tensor]:
    """The frozen pretrained parameters a checkpoint leaves out, from the weights file the program pins
    (`weights`: its bytes; None for a program without one); one kept as NF4 words as its words: from
    `packed` (a session's, read from its device) or packed here (scellis.ops.nf4, pure Python: seconds per
    million weights)."""
    if weights is None or compiled.program.weights is None:
        return {}
    slots = {s.name: s for s in compiled.forward.params}
    out = {}
    for name, view in bind(compiled.program, compiled.forward.params, weights).items():
        slot = slots[name]
        if not slot.init.nf4:
            out[name] = Tensor("F32", slot.shape, bytes(view))
        elif packed is not None and name in packed:
            out[name] = packed[name]
        else:
            rows, cols = slot.init.nf4
            words = nf4.quantize(list(struct.unpack(f"<{rows * cols}f", view)), rows, cols)
            out[name] = Tensor("U32", slot.shape, struct.pack(f"<{len(words)}I", *words))
    return out


def _rule_json(rule: Rule) -> dict[str, Any]:
    when: dict[str, Any] | None
    if rule.when is None:
        when = None
    elif hasattr(rule.when, "watch"):
        when = {"non_finite": list(rule.when.watch)}
    elif hasattr(rule.when, "count"):
        when = {"every": rule.when.count}
    else:
        p = rule.when
        when = {"plateau": {"metric": p.metric, "patience": p.patience, "min_delta": p.min_delta, "mode": p.mode}}
    then = [{"set_lr": {"scale": a.scale}} if isinstance(a, SetLr) else a for a in rule.then]
    return {"on": rule.on, "if": when, "then": then}


def _loss_reduction(compiled: Compiled) -> str | None:
    """How the loss reduces over the batch: "mean" or "sum" for a loss node that says so, else None."""
    program = compiled.program
    if program.loss is None:
        return None
    node = program.node(program.loss)
    if node.op in ("cross_entropy", "mse"):
        return str(node.params["reduction"])
    return None


def _tensor_bytes(tensors: dict[str, Tensor]) -> bytes:
    return write_safetensors({name: (t.dtype, t.shape, t.data) for name, t in tensors.items()}, {})


def _split_file(split: Split, inputs: list[Any]) -> bytes:
    """A split's columns for the program's input nodes (features, then labels), as the engine reads them."""
    out = {}
    for node in inputs:
        shape, role = (split.n, *node.params["shape"]), node.params["role"]
        if role == "labels":
            out["labels"] = Tensor("I32", shape, split.labels)
        else:
            out["features"] = Tensor("F32" if node.params["dtype"] == "float32" else "I32", shape, split.features)
    return _tensor_bytes(out)


def _orders(n: int, seed: int, epochs: int) -> bytes:
    flat = b"".join(struct.pack(f"<{n}i", *permutation(n, seed, epoch)) for epoch in range(epochs))
    return _tensor_bytes({"orders": Tensor("I32", (epochs, n), flat)})


def kept_names(compiled: Compiled, level: Any) -> tuple[list[str], list[str]]:
    """(model, optimizer): the names a Scellis checkpoint of the program holds, parameters and states of the
    model (not the frozen pretrained weights), then the optimizer's state."""
    at = compiled.at(level, frozenset())
    frozen = {s.name for s in compiled.forward.params if s.init.kind == "pretrained" and not s.trainable}
    kept = [
        input_name(n)
        for n in at.step.inputs
        if input_role(n) in (Role.PARAM, Role.STATE) and input_name(n) not in frozen
    ]
    return [k for k in kept if not k.startswith(("opt.", "loop."))], [k for k in kept if k.startswith("opt.")]


def export_files(
    program_json: dict[str, Any],
    compiled: Compiled,
    *,
    level: Any,
    tensors: dict[str, Tensor],
    start: Start,
    train: Split,
    test: Split,
    engine: Engine,
) -> dict[str, bytes]:
    valid = compiled.program
    at = compiled.at(level, frozenset())
    try:
        model = generate(valid, f"{valid.name}, exported from Scellis (program {at.key}).")
    except Unsupported as err:
        raise ExportError(str(err)) from None
    batch = valid.loop.batch_size
    if valid.has_data and train.n < batch:
        raise ExportError(f"the training split has {train.n} examples, fewer than one batch of {batch}")
    model_names, optimizer_names = kept_names(compiled, level)
    state_names = [s.name for s in compiled.forward.params] + [s.name for s in compiled.forward.states]
    missing = [name for name in state_names if name not in tensors]
    if missing:
        raise ExportError(f"no values for {', '.join(missing[:5])}")
    weights = {name: tensors[name] for name in state_names}
    weights.update({name: t for name, t in tensors.items() if name.startswith("opt.") and name != "opt.step"})
    inputs = sorted((n for n in valid.nodes if n.op == "input"), key=lambda n: n.params["role"] == "labels")
    files = {"model.py": model.text.encode(), "weights.safetensors": _tensor_bytes(weights)}
    if inputs:
        files["data/train.safetensors"] = _split_file(train, inputs)
        files["data/test.safetensors"] = _split_file(test, inputs)
    loop = valid.loop
    if loop.shuffle and inputs:
        files["data/orders.safetensors"] = _orders(train.n, start.seed, loop.epochs)
    digests = {name: hashlib.sha256(data).hexdigest() for name, data in files.items() if name.startswith("data/")}
    substreams = sorted(s for s in (position_substream(input_name(n)) for n in at.step.inputs) if s is not None)
    config = {
        "program": {"name": valid.name, "key": at.key, "level": level.value},
        "seed": start.seed,
        "trains": valid.trains,
        "optimizer": optimizer_json(valid.optimizer) if valid.trains else None,
        "epochs": loop.epochs,
        "steps": loop.steps or 1,  # steps an epoch of a program without data
        "batch": batch,
        "eval_batch": batch,
        "shuffle": loop.shuffle,
        "evaluate_every": loop.evaluate_every,
        "rules": [_rule_json(r) for r in loop.rules],
        "inputs": ["labels" if n.params["role"] == "labels" else "features" for n in inputs],
        "loss_reduction": _loss_reduction(compiled),
        "per_step_substreams": substreams,
        "draws": model.draws,  # whether Model takes the seed, and forward the positions
        "checkpoint": {"model": model_names, "optimizer": optimizer_names},
        "start": start.to_json(),
        "files": digests,
    }
    files["train.py"] = train_source(config).encode()
    manifest = {
        "format": FORMAT,
        "program": {"name": valid.name, "key": at.key, "level": level.value, "json": program_json},
        "source": {"checkpoint": start.checkpoint, "seed": start.seed, "step": start.step},
        "data": [data_json(v) for v in data_versions(train, test)] if inputs else [],
        "files": {name: hashlib.sha256(data).hexdigest() for name, data in sorted(files.items())},
        "engine": engine.to_json(),
        "draws": "Scellis's Philox substreams, reproduced (model.py's Philox)",
        "dropout": "torch's generator (Scellis's Philox masks are not reproduced)",
    }
    files["manifest.json"] = (json.dumps(manifest, indent=1) + "\n").encode()
    return files


def train_source(config: dict[str, Any]) -> str:
    text = resources.files("scellis.torchexport").joinpath(TRAIN_FILE).read_text(encoding="utf-8")
    if CONFIG_LINE not in text:
        raise AssertionError(f"{TRAIN_FILE} lost its CONFIG line")
    literal = pprint.pformat(config, width=110, sort_dicts=False)
    return text.replace(CONFIG_LINE, f"CONFIG: dict[str, Any] = {literal}")
