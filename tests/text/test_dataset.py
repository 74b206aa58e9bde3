"""Text tables as classifier data: each example's features are its ids then its mask, labels its class; the
split is the fixed one; the content key changes with every input and only with them."""

from __future__ import annotations

import json

import numpy as np
import pytest

from scellis.text import WordPiece
from scellis.text.corpus import read_text_csv, split
from scellis.text.dataset import text_splits, tokens_key
from tests.fixtures.minilm import minilm_file

CSV = "text,label\n" + "".join(
    f'"mail number {i}, {"spam " * (i % 4)}text",{"spam" if i % 3 else "ham"}\n' for i in range(20)
)


@pytest.fixture(scope="module")
def tokenizer() -> WordPiece:
    return WordPiece.from_json(json.loads(minilm_file("tokenizer.json")))


def test_features_are_ids_then_mask_and_labels_the_classes(tokenizer: WordPiece) -> None:
    table = read_text_csv(CSV.encode())
    train, held = text_splits(table, tokenizer, 8)
    rows_train, rows_held = split(table.n)
    assert (train.n, held.n, train.width) == (len(rows_train), len(rows_held), 16)
    features = np.frombuffer(held.features, "<i4").reshape(held.n, 2, 8)
    for i, row in enumerate(rows_held):
        encoded = tokenizer.encode(table.texts[row], 8)
        assert features[i, 0].tolist() == list(encoded.ids) and features[i, 1].tolist() == list(encoded.mask)
    assert np.frombuffer(train.labels, "<i4").tolist() == [table.labels[r] for r in rows_train]
    assert text_splits(table, tokenizer, 8)[0].features == train.features


def test_the_key_follows_every_input() -> None:
    base = tokens_key(b"table", b"tokenizer", 128)
    assert base == tokens_key(b"table", b"tokenizer", 128)
    others = [tokens_key(b"table!", b"tokenizer", 128), tokens_key(b"table", b"tokenizer!", 128),
              tokens_key(b"table", b"tokenizer", 64), tokens_key(b"table", b"tokenizer", 128, seed=1)]  # fmt: skip
    assert len({base, *others}) == 5


def test_a_window_without_room_for_text_is_refused(tokenizer: WordPiece) -> None:
    with pytest.raises(ValueError, match="a window of 1 tokens holds no text"):
        text_splits(read_text_csv(CSV.encode()), tokenizer, 1)
