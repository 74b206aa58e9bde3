"""A labelled text table as the training data of a text classifier: every text tokenized once, the table split
by the fixed seeded rule, each split the features and labels a session reads.

Expects a TextTable (scellis.text.corpus), a WordPiece tokenizer and a length in tokens. Guarantees:
`text_splits` returns (train, held-out) Splits in the rows' order within each part (corpus.split): each
example's features are int32 [2, length], the token ids then the attention mask (1 a token, 0 padding),
what scellis.models.bert's programs read; its label is the row's class index. `tokens_key` names that
result by content (the table's bytes, the tokenizer file's bytes, the length, the split's seed and
share), so a cache keyed by it is never stale: the same inputs give the same bytes.
"""

from __future__ import annotations

import array
import hashlib
import sys

from scellis.datasets import Split
from scellis.text.corpus import HELD_OUT, SPLIT_SEED, TextTable, split
from scellis.text.wordpiece import WordPiece


def tokens_key(table_bytes: bytes, tokenizer_bytes: bytes, length: int, seed: int = SPLIT_SEED) -> str:
    """The content key of `text_splits`' result for these inputs."""
    digest = hashlib.sha256(b"scellis.text-splits/1\0")
    for part in (table_bytes, tokenizer_bytes):
        digest.update(hashlib.sha256(part).digest())
    digest.update(f"{length}\0{seed}\0{HELD_OUT!r}".encode())
    return digest.hexdigest()


def text_splits(table: TextTable, tokenizer: WordPiece, length: int, seed: int = SPLIT_SEED) -> tuple[Split, Split]:
    """(train, held-out) of `table` at `length` tokens (see the module's contract)."""
    if length < 2:
        raise ValueError(f"a window of {length} tokens holds no text between [CLS] and [SEP]: give 2 or more")
    train_rows, held_rows = split(table.n, seed)
    return _split(table, train_rows, tokenizer, length), _split(table, held_rows, tokenizer, length)


def _split(table: TextTable, rows: list[int], tokenizer: WordPiece, length: int) -> Split:
    features, labels = array.array("i"), array.array("i")
    for row in rows:
        encoded = tokenizer.encode(table.texts[row], length)
        features.extend(encoded.ids)
        features.extend(encoded.mask)
        labels.append(table.labels[row])
    if sys.byteorder == "big":
        features.byteswap()
        labels.byteswap()
    return Split(features.tobytes(), labels.tobytes(), 2 * length)
