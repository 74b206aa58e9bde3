"""Fine-tuning a pretrained model on labelled texts, as the page's Fine-tune card and `scellis.app` read it:
the model's files described, the texts read with the model's tokenizer into the splits a run trains on,
and the three programs a user chooses from (full fine-tuning, LoRA, QLoRA).

Expects `files` (the page's, by name; MODEL_FILES and TEXT_FILES): a Hugging Face BERT model's
`config.json`, `tokenizer.json` and `model.safetensors`, the texts as `texts.csv` (a header row naming the
text and label columns) and the card's settings as `text.json` (TextSettings). Guarantees: `text_data`
returns the (train, held-out, info) splits of scellis.text.dataset at the settings' length, tokenized once
per content (the last few results are kept by scellis.text.dataset.tokens_key, so the page's plans and
its run share one tokenization); `model_summary` and `finetune_json` describe the model or raise
ModelError / TextTableError / ValueError naming the file and the field; every program `programs` returns
pins the weights file by its SHA-256 and size, so a run binds exactly those bytes.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import time
import zipfile
from collections import OrderedDict
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from scellis import jsontext
from scellis.datasets import DataInfo, Split
from scellis.graph.validate import Weights
from scellis.ir.function import input_name
from scellis.models.bert import BertConfig, Classifier, Lora, ModelError, bert_tensors, sentence_classifier
from scellis.models.export import head_file, merged_model, peft_adapter, trained_model
from scellis.models.lora import adapters, merge_function
from scellis.models.safetensors import TensorFile, read_safetensors
from scellis.plan.planned import lowered
from scellis.session import Session
from scellis.text.corpus import HELD_OUT, SPLIT_SEED, read_text_csv
from scellis.text.dataset import text_splits, tokens_key
from scellis.text.wordpiece import WordPiece

MODEL_FILES = ("config.json", "tokenizer.json", "model.safetensors")
TEXT_FILES = ("texts.csv", "text.json")
KEPT = 2  # tokenized splits kept in memory (by content key): the page's current texts and the one before
CHOICES = (  # (choice, label, AdamW's learning rate): bench/finetune.py's recipes
    ("full", "full fine-tuning (every weight)", 2e-5),
    ("lora", "LoRA (rank 8 on query and value; base frozen)", 5e-4),
    ("qlora", "QLoRA (4-bit NF4 base, frozen; LoRA rank 8)", 5e-4),
)


@dataclass(frozen=True)
class TextSettings:
    """The Fine-tune card's settings: the texts' name and columns, and the programs' window and loop."""

    name: str = "texts"
    text_column: str = "text"
    label_column: str = "label"
    length: int = 128
    batch: int = 32
    epochs: int = 3

    @classmethod
    def read(cls, raw: bytes) -> TextSettings:
        data = jsontext.parse(raw, what="text.json")
        if not isinstance(data, dict):
            raise ValueError(f"text.json: expected an object of settings, got {type(data).__name__}")
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"text.json: unknown settings {unknown} (known: {', '.join(sorted(known))})")
        settings = cls(**data)
        settings.check()
        return settings

    def to_bytes(self) -> bytes:
        """The settings as `text.json` holds them."""
        return json.dumps(asdict(self)).encode()

    def check(self) -> None:
        for field in ("name", "text_column", "label_column"):
            value = getattr(self, field)
            if not isinstance(value, str) or not value.strip():
                raise ValueError(f"text.json: {field} must be a non-empty text, got {value!r}")
        for field, low, high in (("length", 2, 4096), ("batch", 1, 4096), ("epochs", 1, 1000)):
            value = getattr(self, field)
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise ValueError(f"text.json: {field} must be a whole number from {low} to {high}, got {value!r}")


def _need(files: dict[str, bytes], names: tuple[str, ...], what: str) -> None:
    missing = [n for n in names if n not in files]
    if missing:
        raise ValueError(f"{what} lacks {', '.join(missing)} (it needs {', '.join(names)})")


_tokenized: OrderedDict[str, tuple[Split, Split, DataInfo]] = OrderedDict()


def text_data(files: dict[str, bytes]) -> tuple[Split, Split, DataInfo]:
    """(train, held-out, info) of the texts in `files` (see the module's contract)."""
    _need(files, ("texts.csv", "text.json", "tokenizer.json"), "the texts to fine-tune on")
    settings = TextSettings.read(files["text.json"])
    key = tokens_key(files["texts.csv"], files["tokenizer.json"], settings.length)
    key = hashlib.sha256(f"{key}\0{settings.text_column}\0{settings.label_column}".encode()).hexdigest()
    if key in _tokenized:
        _tokenized.move_to_end(key)
        train, test, info = _tokenized[key]
        return train, test, DataInfo(settings.name, *_shape(info))
    table = read_text_csv(files["texts.csv"], settings.text_column, settings.label_column, name=settings.name)
    tokenizer = WordPiece.from_json(jsontext.parse(files["tokenizer.json"], what="tokenizer.json"))
    train, test = text_splits(table, tokenizer, settings.length)
    info = DataInfo(settings.name, (2, settings.length), "int32", "int32", table.classes)
    _tokenized[key] = (train, test, info)
    while len(_tokenized) > KEPT:
        _tokenized.popitem(last=False)
    return train, test, info


def _shape(info: DataInfo) -> tuple[tuple[int, ...], str, str, tuple[str, ...] | None]:
    return info.example_shape, info.feature_type, info.label_type, info.classes


def _model(files: dict[str, bytes]) -> tuple[BertConfig, TensorFile]:
    _need(files, MODEL_FILES, "the model")
    config = BertConfig.read(jsontext.parse(files["config.json"], what="config.json"))
    return config, read_safetensors(files["model.safetensors"], "model.safetensors")


def pin_of(raw: bytes, name: str = "model.safetensors") -> Weights:
    """The pin of the weights file `raw`."""
    return Weights(name, hashlib.sha256(raw).hexdigest(), len(raw))


def model_summary(config: BertConfig, tensors: TensorFile, pin: Weights) -> dict[str, Any]:
    """The model as the card shows it: its architecture, parameter count, and the weights file's pin."""
    return {
        "layers": config.layers,
        "hidden": config.hidden,
        "heads": config.heads,
        "intermediate": config.intermediate,
        "vocab": config.vocab,
        "positions": config.positions,
        "parameters": sum(math.prod(t.shape) for t in tensors.tensors.values()),
        "weights": {"file": pin.file, "sha256": pin.sha256, "bytes": pin.bytes},
    }


def programs(
    config: BertConfig, keys: dict[str, str], pin: Weights, settings: TextSettings, classes: int
) -> list[tuple[str, str, dict[str, Any]]]:
    """(choice, label, program JSON) of each choice in CHOICES for this model and the card's settings."""
    loop = {"classes": classes, "length": settings.length, "batch": settings.batch, "epochs": settings.epochs}
    out = []
    for choice, label, lr in CHOICES:
        lora = None if choice == "full" else Lora()
        made = Classifier(**loop, lr=lr, train_encoder=True, lora=lora, nf4=choice == "qlora")
        program = sentence_classifier(config, keys, pin, made)
        program["name"] = f"{settings.name}-{choice}"
        out.append((choice, label, program))
    return out


def finetune_json(source: str, files: dict[str, bytes]) -> str:
    """What the card shows once the model and texts (`source` "text") are read: the model (model_summary),
    the texts (name, classes and rows per split, the split's seed and share, the tokenization's time in
    ms), and each choice's program (JSON text), as JSON."""
    if source != "text":
        raise ValueError(f"fine-tuning reads texts for a pretrained model (source 'text'), not {source!r}")
    start = time.perf_counter()
    train, test, info = text_data(files)
    tokenized_ms = (time.perf_counter() - start) * 1000
    settings = TextSettings.read(files["text.json"])
    config, tensors = _model(files)
    keys = bert_tensors(config, tensors)  # every tensor the encoder reads is there, of its dtype and shape
    pin = pin_of(files["model.safetensors"])
    assert info.classes is not None
    return json.dumps(
        {
            "model": model_summary(config, tensors, pin),
            "texts": {
                "name": info.name,
                "classes": list(info.classes),
                "train": train.n,
                "held_out": test.n,
                "split_seed": SPLIT_SEED,
                "held_out_share": HELD_OUT,
                "settings": asdict(settings),
                "ms": tokenized_ms,
            },
            "programs": [
                {"choice": choice, "label": label, "program": json.dumps(program)}
                for choice, label, program in programs(config, keys, pin, settings, len(info.classes))
            ],
        }
    )


def read_model_folder(folder: Path) -> dict[str, bytes]:
    """A Hugging Face model folder's files (MODEL_FILES): ModelError naming the folder and what it lacks."""
    missing = [name for name in MODEL_FILES if not (folder / name).is_file()]
    if missing:
        raise ModelError(
            f"{folder}: no {', '.join(missing)} there (a BERT model folder holds {', '.join(MODEL_FILES)})"
        )
    return {name: (folder / name).read_bytes() for name in MODEL_FILES}


def settings_for(program: dict[str, Any], name: str, text_column: str, label_column: str) -> TextSettings:
    """The settings that tokenize texts for `program` (a sentence classifier): its window, batch and epochs."""
    features = [
        n for n in program.get("nodes", []) if n.get("op") == "input" and n.get("params", {}).get("role") != "labels"
    ]
    shape = features[0].get("params", {}).get("shape") if len(features) == 1 else None
    if not (isinstance(shape, list) and len(shape) == 2 and shape[0] == 2 and isinstance(shape[1], int)):
        raise ValueError(
            f"{program.get('name', 'the program')} takes no token window (one input of shape [2, length]: token "
            "ids and attention mask), so it does not read texts"
        )
    loop = program.get("loop", {})
    settings = TextSettings(
        name, text_column, label_column, shape[1], loop.get("batch_size", 32), loop.get("epochs", 1)
    )
    settings.check()
    return settings


def model_of(program: dict[str, Any], files: dict[str, bytes]) -> dict[str, bytes] | None:
    """The model files a run of `program` binds, when it pins a weights file (else None): ModelError when
    `files` lacks them (the texts were read for no model)."""
    if "weights" not in program:
        return None
    missing = [name for name in MODEL_FILES if name not in files]
    if missing:
        pinned = program["weights"].get("file", "a weights file") if isinstance(program["weights"], dict) else ""
        raise ModelError(
            f"{program.get('name', 'the program')} starts from pretrained weights ({pinned}): choose its model "
            f"and texts in the Fine-tune card first (the data given lacks {', '.join(missing)})"
        )
    return {name: files[name] for name in MODEL_FILES}


EXPORTS = ("adapter", "model")


async def exported(session: Session, what: str, model: dict[str, bytes]) -> bytes:
    """A ZIP (stored, not compressed) of the trained model's files for the Hugging Face tools, from the
    values `session` holds now (scellis.models.export): `adapter` gives the LoRA adapter in PEFT's format and
    the head; `model` gives the whole encoder as a `model.safetensors` with `config.json` (each adapted weight
    merged with its adapter, on the device; after full fine-tuning, every trained weight) and the head.
    `model` is the base model's files (MODEL_FILES). ValueError names what cannot be exported."""
    if what not in EXPORTS:
        raise ValueError(f"unknown export {what!r} (expected one of {', '.join(EXPORTS)})")
    _need(model, MODEL_FILES, "the base model")
    valid = session.compiled.program
    found = adapters(valid)
    files: dict[str, bytes] = {}
    head = ["head.weight", "head.bias"]
    if what == "adapter":
        if not found:
            raise ValueError(f"{valid.name} has no LoRA adapters (it fine-tunes every weight): export the model")
        values = await session.step.fetch(head + [n for a in found for n in (a.a, a.b)])
        files.update(peft_adapter(valid, values, base=_base_name(model)))
    else:
        base = read_safetensors(model["model.safetensors"], "model.safetensors")
        if found:
            merge = merge_function(found)
            values = await session.step.fetch(head + [input_name(n) for n in merge.inputs])
            merging = await session.device.compile(lowered(merge, session.level, session.device.features))
            merged = await merging.step({input_name(n): values[input_name(n)] for n in merge.inputs},
                                        [name for name, _ in merge.outputs])  # fmt: skip
            files["model.safetensors"] = merged_model(valid, base, merged)
        else:
            trained = {s.name: s.init.tensor for s in session.compiled.forward.params if s.init.kind == "pretrained"}
            values = await session.step.fetch(head + list(trained))
            files["model.safetensors"] = trained_model(base, {trained[n]: values[n] for n in trained})
        files["config.json"] = model["config.json"]
        files["tokenizer.json"] = model["tokenizer.json"]
    files["head.safetensors"] = head_file(values)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as archive:
        for name in sorted(files):
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))  # the same bytes for the same values
            archive.writestr(info, files[name])
    return out.getvalue()


def _base_name(model: dict[str, bytes]) -> str:
    config = jsontext.parse(model["config.json"], what="config.json")
    name = config.get("_name_or_path", "") if isinstance(config, dict) else ""
    return name if isinstance(name, str) else ""
