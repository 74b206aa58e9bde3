"""The imported MiniLM as the tests run it: the classifier program over the bundled files, the function that
computes its sentence embedding, and inputs for fixture rows."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from functools import cache

import numpy as np

from scellis.graph import validate
from scellis.graph.validate import Weights
from scellis.ir import Function
from scellis.ir.function import input_name
from scellis.models.bert import BertConfig, Classifier, bert_tensors, sentence_classifier
from scellis.models.infer import node_function
from scellis.models.safetensors import read_safetensors
from scellis.models.weights import bind
from scellis.text import WordPiece
from tests.fixtures.minilm import minilm_file, minilm_reference


@dataclass(frozen=True)
class Model:
    config: BertConfig
    raw: bytes
    keys: dict[str, str]


@cache
def model() -> Model:
    config = BertConfig.read(json.loads(minilm_file("config.json")))
    raw = minilm_file("model.safetensors")
    keys = bert_tensors(config, read_safetensors(raw))
    return Model(config, raw, keys)


def classifier(length: int, batch: int, **settings: object) -> dict:
    m = model()
    pin = Weights("model.safetensors", hashlib.sha256(m.raw).hexdigest(), len(m.raw))
    return sentence_classifier(m.config, m.keys, pin, Classifier(length=length, batch=batch, **settings))


def embedding_function(length: int, batch: int, **settings: object) -> tuple[Function, dict[str, np.ndarray]]:
    """The evaluation-mode function from the token input to the `embedding` node, and its parameters'
    pretrained values (float32 arrays by input name; the function's other parameters, such as LoRA's
    adapters, are the caller's to give)."""
    return embedding_of(classifier(length, batch, **settings), model().raw, batch)


def embedding_of(program: dict, raw: bytes, batch: int) -> tuple[Function, dict[str, np.ndarray]]:
    """`embedding_function` for any program of the encoder and the weights file `raw` it pins."""
    valid = validate(program)
    fn, slots = node_function(valid, ["embedding"], batch)
    shapes = {input_name(n): n.shape for n in fn.inputs}
    return fn, {k: np.frombuffer(v, "<f4").reshape(shapes[k]) for k, v in bind(valid, slots, raw).items()}


def tokens(rows: list[dict], length: int) -> np.ndarray:
    """int32 [rows, 2, length]: each fixture row's ids (checked: this project's tokenizer gives the ones
    sentence-transformers gave) and its attention mask."""
    wordpiece = WordPiece.from_json(json.loads(minilm_file("tokenizer.json")))
    out = np.zeros((len(rows), 2, length), dtype=np.int32)
    for i, row in enumerate(rows):
        text = row["text"] if "text" in row else mail_texts()[row["mail"]]
        encoded = wordpiece.encode(text, length)
        assert list(encoded.ids[: len(row["ids"])]) == row["ids"], row.get("mail", text)
        out[i, 0], out[i, 1] = encoded.ids, encoded.mask
    return out


@cache
def mail_texts() -> dict[str, str]:
    import csv
    import io
    from pathlib import Path

    from scellis.text.corpus import spam_assassin_csv

    corpus = Path(__file__).resolve().parents[2] / "node_modules" / "@stdlib" / "datasets-spam-assassin" / "data"
    reader = csv.DictReader(io.StringIO(spam_assassin_csv(corpus).decode("utf-8"), newline=""))
    return {row["id"]: row["text"] for row in reader}


def reference_rows(pick: list[int]) -> tuple[list[dict], np.ndarray]:
    record, embeddings = minilm_reference()
    return [record["rows"][i] for i in pick], embeddings[pick]
