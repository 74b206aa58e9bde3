"""Data sets: scikit-learn's 8x8 digits, which the app ships, extracted at build time from the package's
own file into little-endian float32 features and int32 labels; and next-character windows of a text, such
as the Zen of Python the standard library holds. Pure Python, so the browser reads them too."""

from __future__ import annotations

import array
import codecs
import contextlib
import csv
import gzip
import io
import math
import struct
import sys
from dataclasses import dataclass
from pathlib import Path

DIGITS_FEATURES = 64
DIGITS_CLASSES = 10
TEST_EVERY = 5  # example i is held out for testing when i % 5 == 4: a fixed split, no randomness
CHARS_CONTEXT = 16  # characters a next-character example sees


@dataclass(frozen=True)
class Split:
    """n examples: `features` holds n * width 4-byte values row by row (float32, or int32 indices), `labels`
    n int32 values."""

    features: bytes
    labels: bytes
    width: int

    @property
    def n(self) -> int:
        return len(self.labels) // 4

    def rows(self, indices: list[int]) -> tuple[bytes, bytes]:
        """Features and labels of the chosen examples, in that order."""
        row = self.width * 4
        return (
            b"".join(self.features[i * row : (i + 1) * row] for i in indices),
            b"".join(self.labels[i * 4 : i * 4 + 4] for i in indices),
        )


def digits_csv() -> Path:
    """scikit-learn's copy of the UCI digits (1,797 rows: 64 pixels 0..16, then the label)."""
    import sklearn.datasets

    return Path(sklearn.datasets.__file__).parent / "data" / "digits.csv.gz"


def read_digits(raw_csv_gz: bytes) -> tuple[Split, Split]:
    """(train, test) from the gzipped CSV: pixels scaled to [0, 1]."""
    train_x, train_y, test_x, test_y = bytearray(), bytearray(), bytearray(), bytearray()
    text = gzip.decompress(raw_csv_gz).decode()
    for i, row in enumerate(csv.reader(io.StringIO(text))):
        if len(row) != DIGITS_FEATURES + 1:
            raise ValueError(f"digits.csv.gz row {i + 1}: expected {DIGITS_FEATURES + 1} values, got {len(row)}")
        pixels = struct.pack(f"<{DIGITS_FEATURES}f", *(float(v) / 16 for v in row[:-1]))
        label = struct.pack("<i", int(float(row[-1])))
        xs, ys = (test_x, test_y) if i % TEST_EVERY == TEST_EVERY - 1 else (train_x, train_y)
        xs += pixels
        ys += label
    return Split(bytes(train_x), bytes(train_y), DIGITS_FEATURES), Split(bytes(test_x), bytes(test_y), DIGITS_FEATURES)


DATA_FILES = ("digits-train-x.f32", "digits-train-y.i32", "digits-test-x.f32", "digits-test-y.i32")


def to_files(train: Split, test: Split) -> dict[str, bytes]:
    """The files the app serves under data/ (names in DATA_FILES)."""
    return dict(zip(DATA_FILES, (train.features, train.labels, test.features, test.labels), strict=True))


def from_files(files: dict[str, bytes]) -> tuple[Split, Split]:
    """(train, test) from the app's data files (names in DATA_FILES), checked: ValueError names the file and
    the example that is wrong (a file missing, a size that is no whole number of examples, features and
    labels of different counts, a label that is no class, a pixel that is not finite)."""
    missing = [name for name in DATA_FILES if name not in files]
    if missing:
        raise ValueError(f"the data files lack {', '.join(missing)} (the four are {', '.join(DATA_FILES)})")
    tx, ty, vx, vy = (files[name] for name in DATA_FILES)
    return _split(DATA_FILES[0], tx, DATA_FILES[1], ty), _split(DATA_FILES[2], vx, DATA_FILES[3], vy)


def _split(x_name: str, x: bytes, y_name: str, y: bytes) -> Split:
    row = DIGITS_FEATURES * 4
    if len(x) % row or not x:
        raise ValueError(
            f"{x_name}: {len(x):,} bytes is not a whole number (one or more) of examples of 64 float32 pixels"
        )
    if len(y) % 4:
        raise ValueError(f"{y_name}: {len(y):,} bytes is not a whole number of int32 labels")
    if len(x) // row != len(y) // 4:
        raise ValueError(f"{x_name} holds {len(x) // row:,} examples but {y_name} holds {len(y) // 4:,} labels")
    labels = array.array("i", y)
    pixels = array.array("f", x)
    if sys.byteorder == "big":
        labels.byteswap()
        pixels.byteswap()
    bad = next((i for i, label in enumerate(labels) if not 0 <= label < DIGITS_CLASSES), None)
    if bad is not None:
        raise ValueError(
            f"{y_name}: example {bad}'s label is {labels[bad]}, not a class from 0 to {DIGITS_CLASSES - 1}"
        )
    bad = next((i for i, v in enumerate(pixels) if not math.isfinite(v)), None)
    if bad is not None:
        where = f"example {bad // DIGITS_FEATURES}, pixel {bad % DIGITS_FEATURES}"
        raise ValueError(f"{x_name}: {where} is {pixels[bad]}, not a finite number")
    return Split(x, y, DIGITS_FEATURES)


def zen_of_python() -> str:
    """PEP 20, lowercased (32 distinct characters): CPython and Pyodide both ship it as the module `this`."""
    with contextlib.redirect_stdout(io.StringIO()):  # the first import prints the text
        import this
    return codecs.decode(this.s, "rot13").lower()


def read_chars(text: str, context: int = CHARS_CONTEXT) -> tuple[Split, Split, str]:
    """(train, test, alphabet): window i is text[i : i + context] as int32 indices into the alphabet (the
    text's distinct characters, sorted), labelled by the character after it; held out when i % 5 == 4."""
    alphabet = "".join(sorted(set(text)))
    index = {c: i for i, c in enumerate(alphabet)}
    codes = [index[c] for c in text]
    train_x, train_y, test_x, test_y = bytearray(), bytearray(), bytearray(), bytearray()
    for i in range(len(codes) - context):
        xs, ys = (test_x, test_y) if i % TEST_EVERY == TEST_EVERY - 1 else (train_x, train_y)
        xs += struct.pack(f"<{context}i", *codes[i : i + context])
        ys += struct.pack("<i", codes[i + context])
    train = Split(bytes(train_x), bytes(train_y), context)
    return train, Split(bytes(test_x), bytes(test_y), context), alphabet
