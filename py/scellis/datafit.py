"""Whether a program can train on a data set: its features input takes one example as the data holds it
(as many values, of the same type), its labels input takes the data's labels (class indices or numbers),
and a classifier has a class for every class of the data. A program without a loss that reads no data (a
simulation) fits any; one that reads data (an analysis) needs no labels input. Each mismatch is one line
naming the input node and both sides; the page shows them before planning, with the built-in data sets that would fit.
Given the splits, every index in every split (token indices, class labels) is compared with each table it
indexes (an embedding's rows, the classes): a refusal names the split, the example, the index and the size.

Also a starter program for a data set: the smallest sensible model a user can train at once and then edit
(a ReLU MLP for vectors, a small CNN for images, an embedding MLP for token windows, its table holding
every index of every split: `vocabulary`)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from scellis.datasets import DataInfo, Split, words
from scellis.graph import Program
from scellis.graph.building import dataset_input
from scellis.ir.function import input_name
from scellis.ops import Node, Op
from scellis.ops.defs import ClassesArg
from scellis.ops.indices import index_use
from scellis.pipeline import Compiled

VIEWS = {Op.RESHAPE, Op.EXPAND, Op.PERMUTE, Op.SLICE}
INDEXED = {Op.GATHER: 1, Op.SCATTER_ADD: 0, Op.ONE_HOT: 0}  # op -> its input holding indices


def _input(program: dict[str, Any], role: str) -> dict[str, Any] | None:
    for node in program.get("nodes", []):
        if node.get("op") == "input" and node.get("params", {}).get("role", "features") == role:
            return node
    return None


def _shape(node: dict[str, Any]) -> tuple[int, ...]:
    return tuple(node.get("params", {}).get("shape", ()))


def _dtype(node: dict[str, Any]) -> str:
    return str(node.get("params", {}).get("dtype", "float32"))


def program_classes(compiled: Compiled) -> int | None:
    """The classes the program's loss and metrics tell apart (the one-hot width of its labels), or None
    when it has no class labels (a regression)."""
    widths = {n.arg.classes for n in compiled.evaluate.nodes() if n.op is Op.ONE_HOT and isinstance(n.arg, ClassesArg)}
    return max(widths) if widths else None


def fit_problems(
    program: dict[str, Any], compiled: Compiled, info: DataInfo, splits: Mapping[str, Split] | None = None
) -> list[str]:
    """Every way `program` (compiled as `compiled`) cannot train on data described by `info`, and, given
    `splits` (by name: train, validation, test...), every split whose indices lie outside a table they
    index (index_problems); none when it can. A program whose example shape differs but holds as many
    values reads them in row-major order, so that is no problem (the digits' 64 pixels fill an input of
    [1, 8, 8] as they fill [64])."""
    return _shape_problems(program, compiled, info) + (
        index_problems(program, compiled, info, splits) if splits else []
    )


def _shape_problems(program: dict[str, Any], compiled: Compiled, info: DataInfo) -> list[str]:
    out: list[str] = []
    features, labels = _input(program, "features"), _input(program, "labels")
    data_shape = list(info.example_shape)
    if features is None and labels is None and not compiled.program.trains:
        return out  # a program without data (a simulation) reads none, so any data fits it
    if features is None:
        out.append("the program has no features input (an input node with role 'features')")
    else:
        shape = _shape(features)
        if math.prod(shape) != math.prod(info.example_shape):
            out.append(
                f"input {features['id']!r} takes examples of shape {list(shape)} ({math.prod(shape)} values); "
                f"the data's examples have shape {data_shape} ({math.prod(info.example_shape)} values)"
            )
        if _dtype(features) != info.feature_type:
            kind = "token indices (int32)" if info.feature_type == "int32" else "numbers (float32)"
            out.append(f"input {features['id']!r} takes {_dtype(features)} values; the data's features are {kind}")
    if labels is None:
        if compiled.program.trains:  # an analysis may read features only
            out.append("the program has no labels input (an input node with role 'labels')")
        return out
    if _dtype(labels) != info.label_type:
        kind = "class indices (int32)" if info.label_type == "int32" else "numbers (float32)"
        out.append(f"input {labels['id']!r} takes {_dtype(labels)} labels; the data's labels are {kind}")
    if _shape(labels) != ():
        out.append(f"input {labels['id']!r} takes labels of shape {list(_shape(labels))}; the data has one per example")
    classes = program_classes(compiled)
    if info.classes is not None and classes is not None and classes < len(info.classes):
        out.append(
            f"the program tells {classes} classes apart (its logits' last axis); the data has {len(info.classes)}"
        )
    return out


def _reads(node: Node, name: str) -> bool:
    """Whether `node`'s values are those of the program input `name`: through views, or gathered from its
    resident copy."""
    while node.op in VIEWS:
        node = node.src[0]
    if node.op is Op.GATHER and node.src[0].op is Op.INPUT:
        node = node.src[0]
    return node.op is Op.INPUT and input_name(node) in (name, dataset_input(name))


def _bounds(program: dict[str, Any], compiled: Compiled, name: str) -> dict[int, str]:
    """Each size of a table the input `name` indexes, with words naming the table (an embedding by its
    node, classes as classes)."""
    ops = {node.get("id"): node.get("op") for node in program.get("nodes", []) if isinstance(node, dict)}
    out: dict[int, str] = {}
    for node in [*compiled.evaluate.nodes(), *compiled.step.nodes()]:
        use = index_use(node)
        if use is None or use.bound in out or not _reads(node.src[INDEXED[node.op]], name):
            continue
        table = node.src[0]
        if node.op is Op.GATHER and table.op is Op.INPUT and input_name(table).endswith(".weight"):
            owner = input_name(table).removesuffix(".weight")
            out[use.bound] = f"the {ops.get(owner, 'table')} {owner!r} has {use.bound} rows"
        elif node.op is Op.ONE_HOT:
            out[use.bound] = f"the program tells {use.bound} classes apart"
        else:
            out[use.bound] = f"{use.what} has {use.bound} rows"
    return out


def _outside(values: Any, bound: int) -> list[int]:
    """Positions of the values outside [0, bound)."""
    if not values or (min(values) >= 0 and max(values) < bound):
        return []
    return [i for i, v in enumerate(values) if not 0 <= v < bound]


def _more(bad: list[int], values: Any, what: str) -> str:
    return f"; {len(bad)} of the split's {len(values)} {what} lie outside" if len(bad) > 1 else ""


def index_problems(
    program: dict[str, Any], compiled: Compiled, info: DataInfo, splits: Mapping[str, Split]
) -> list[str]:
    """One line for each split and table where an index of the split lies outside the table: the first
    such example, the index and the table's size (and how many lie outside, when more do). Token indices
    are compared with every table they index; labels with the fewest classes the program tells apart."""
    out: list[str] = []
    features, labels = _input(program, "features"), _input(program, "labels")
    tokens = features is not None and info.feature_type == "int32" and _dtype(features) == "int32"
    classed = labels is not None and info.label_type == "int32" and _dtype(labels) == "int32"
    token_bounds = _bounds(program, compiled, str(features["id"])) if tokens and features else {}
    label_bounds = sorted(_bounds(program, compiled, str(labels["id"])).items())[:1] if classed and labels else []
    for split, data in splits.items():
        values = words(data.features, "i") if token_bounds else []
        for bound, table in sorted(token_bounds.items()):
            bad = _outside(values, bound)
            if bad and features is not None:
                row, at = divmod(bad[0], max(data.width, 1))
                where = f"at position {at} of input {features['id']!r}"
                line = f"the {split} split's example {row} holds token index {values[bad[0]]} ({where}); "
                out.append(line + f"{table} (indices 0 to {bound - 1})" + _more(bad, values, "indices"))
        values = words(data.labels, "i") if label_bounds else []
        for bound, table in label_bounds:
            bad = _outside(values, bound)
            if bad and labels is not None:
                line = f"the {split} split's example {bad[0]} has label {values[bad[0]]}; {table} "
                line += f"(labels 0 to {bound - 1}, input {labels['id']!r})"
                out.append(line + _more(bad, values, "labels"))
    return out


def vocabulary(info: DataInfo, splits: Mapping[str, Split]) -> int:
    """Token windows' vocabulary: the largest index of every split + 1 (0 for other features)."""
    if info.feature_type != "int32":
        return 0
    return max((max(words(s.features, "i"), default=-1) for s in splits.values()), default=-1) + 1


def starter_program(info: DataInfo, vocab: int = 0) -> dict[str, Any]:
    """A small program for data described by `info`: classification (cross-entropy and accuracy) or, for a
    numeric target, regression (mean squared error on one output); Adam at 3e-3 for 20 epochs. Token
    windows (int32 features) are embedded in a table of `vocab` rows: `vocabulary` of every split, so no
    split holds an index past its end."""
    p = Program(f"starter-{_slug(info.name)}")
    shape = list(info.example_shape)
    x = p.input("features", shape, dtype=info.feature_type)
    if info.feature_type == "int32":  # token windows: embedded, flattened, then an MLP
        if vocab < 1:
            raise ValueError("token windows need the vocabulary size (their largest index + 1)")
        h = p.flatten(p.embedding(x, vocab, 32, id="embed"), id="flat")
    elif len(shape) == 3 and shape[2] in (1, 3) and min(shape[:2]) >= 4:  # images, height x width x channels
        h = p.permute(x, [2, 0, 1], id="channels_first")
        for i, channels in enumerate((16, 32), start=1):
            h = p.max_pool2d(
                p.relu(p.conv2d(h, channels, 3, padding=1, id=f"conv{i}"), id=f"relu{i}"), 2, id=f"pool{i}"
            )
        h = p.flatten(h, id="flat")
    else:
        h = x if len(shape) == 1 else p.flatten(x, id="flat")
    h = p.relu(p.linear(h, 64, id="hidden"), id="relu")
    if info.classes is None:
        y = p.input("target", [], dtype="float32", role="labels")
        pred = p.reshape(p.linear(h, 1, id="out"), [], id="prediction")
        p.set_loss(p.mse(pred, y, id="loss"))
    else:
        y = p.input("label", [], dtype="int32", role="labels")
        logits = p.linear(h, len(info.classes), id="logits")
        p.set_loss(p.cross_entropy(logits, y, id="loss"))
        p.add_metric(p.accuracy(logits, y, id="accuracy"))
    p.set_optimizer("adam", lr=3e-3)
    p.set_loop(epochs=20, batch_size=32)
    return p.to_json()


def _slug(name: str) -> str:
    kept = "".join(c if c.isalnum() else "-" for c in name.lower()).strip("-")
    return "-".join(part for part in kept.split("-") if part)[:40] or "data"
