"""Data sets: scikit-learn's 8x8 digits, which the app ships, extracted at build time from the package's
own file into little-endian float32 features and int32 labels; next-character windows of a text, such as
the Zen of Python the standard library holds; and the user's own data, as the page's importers write it
(a description `dataset.json` and each split's features and labels). Pure Python, so the browser reads
them too."""

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
from typing import Any

from scellis import jsontext

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

    @classmethod
    def empty(cls) -> Split:
        """No examples: what a run of a program that reads no data (a simulation) is handed."""
        return cls(b"", b"", 0)

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


CANCER_FEATURES = 30
CANCER_FILES = ("breast-cancer-x.f32", "breast-cancer-y.i32")


def breast_cancer_csv() -> Path:
    """scikit-learn's copy of the UCI Wisconsin diagnostic breast cancer data (569 rows: 30 features, then
    the class: 0 malignant, 1 benign)."""
    import sklearn.datasets

    return Path(sklearn.datasets.__file__).parent / "data" / "breast_cancer.csv"


def read_breast_cancer(raw_csv: bytes) -> dict[str, bytes]:
    """The data set's two files (CANCER_FILES): float32 features and int32 classes, checked row by row."""
    rows = list(csv.reader(io.StringIO(raw_csv.decode())))
    if not rows or len(rows[0]) < 2 or not rows[0][0].isdigit():
        raise ValueError("breast_cancer.csv: the first line must give the number of rows and of features")
    count, width = int(rows[0][0]), int(rows[0][1])
    if width != CANCER_FEATURES or len(rows) - 1 != count:
        raise ValueError(f"breast_cancer.csv: expected {count} rows of {CANCER_FEATURES} features, got {len(rows) - 1}")
    x, y = bytearray(), bytearray()
    for i, row in enumerate(rows[1:], start=2):
        if len(row) != width + 1 or row[-1] not in ("0", "1"):
            raise ValueError(f"breast_cancer.csv line {i}: expected {width} numbers and a class 0 or 1")
        x += struct.pack(f"<{width}f", *map(float, row[:-1]))
        y += struct.pack("<i", int(row[-1]))
    return dict(zip(CANCER_FILES, (bytes(x), bytes(y)), strict=True))


def cancer_from_files(files: dict[str, bytes]) -> tuple[Split, Split]:
    """(train, test) of the breast cancer data: both hold every row (an analysis uses them all), checked."""
    missing = [name for name in CANCER_FILES if name not in files]
    if missing:
        raise ValueError(f"the data files lack {', '.join(missing)} (the two are {', '.join(CANCER_FILES)})")
    x, y = (files[name] for name in CANCER_FILES)
    _check_sizes("breast-cancer", x, y, CANCER_INFO)
    _check_values("breast-cancer", x, y, CANCER_INFO)
    split = Split(x, y, CANCER_FEATURES)
    return split, split


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


@dataclass(frozen=True)
class DataInfo:
    """What a data set holds, for fitting a program to it: one example's shape and value type, the labels'
    type, and the class names (None for a numeric target); for a table, its columns' names and the name of
    the target column among them (None for other data)."""

    name: str
    example_shape: tuple[int, ...]
    feature_type: str  # "float32" or "int32" (token indices)
    label_type: str  # "int32" (class indices) or "float32" (numbers)
    classes: tuple[str, ...] | None
    columns: tuple[str, ...] | None = None
    target: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "format": USER_FORMAT,
            "name": self.name,
            "example_shape": list(self.example_shape),
            "feature_type": self.feature_type,
            "label_type": self.label_type,
            "classes": None if self.classes is None else list(self.classes),
            "columns": None if self.columns is None else list(self.columns),
            "target": self.target,
        }


DIGITS_INFO = DataInfo("digits (this site)", (DIGITS_FEATURES,), "float32", "int32", tuple(map(str, range(10))))


CANCER_INFO = DataInfo(
    "breast cancer (this site; every row in both splits)",
    (CANCER_FEATURES,),
    "float32",
    "int32",
    ("malignant", "benign"),
)


def chars_info(alphabet: str) -> DataInfo:
    return DataInfo("Zen of Python characters", (CHARS_CONTEXT,), "int32", "int32", tuple(alphabet))


USER_FORMAT = "scellis.data/1"
USER_FILES = ("dataset.json", "train-x", "train-y", "test-x", "test-y")


def from_user_files(files: dict[str, bytes]) -> tuple[Split, Split, DataInfo]:
    """(train, test, info) from the files the page's importers write (names in USER_FILES): `dataset.json`
    describes the examples (DataInfo.to_json), the others hold each split's little-endian features and
    labels. ValueError names the file, and the field or example, that is wrong."""
    missing = [name for name in USER_FILES if name not in files]
    if missing:
        raise ValueError(f"the data files lack {', '.join(missing)} (the five are {', '.join(USER_FILES)})")
    info = _user_info(files["dataset.json"])
    width = math.prod(info.example_shape)
    splits = []
    for split in ("train", "test"):
        x, y = files[f"{split}-x"], files[f"{split}-y"]
        _check_sizes(split, x, y, info)
        _check_values(split, x, y, info)
        splits.append(Split(x, y, width))
    if splits[0].n == 0:
        raise ValueError("train-x: the training split holds no examples")
    return splits[0], splits[1], info


def _user_info(raw: bytes) -> DataInfo:
    where = "dataset.json"
    meta = jsontext.parse(raw, what=where)  # depth-bounded: a JsonTextError (a ValueError) names the fault
    if not isinstance(meta, dict):
        raise ValueError(f"{where}: expected an object, got {type(meta).__name__}")
    if meta.get("format") != USER_FORMAT:
        raise ValueError(f"{where}: format must be {USER_FORMAT!r}, got {meta.get('format')!r}")
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        raise ValueError(f"{where}: name must be a non-empty text")
    shape = meta.get("example_shape")
    if not isinstance(shape, list) or not shape or not all(type(d) is int and d > 0 for d in shape):
        raise ValueError(f"{where}: example_shape must be a list of positive whole numbers, got {shape!r}")
    feature_type, label_type = meta.get("feature_type"), meta.get("label_type")
    if feature_type not in ("float32", "int32"):
        raise ValueError(f"{where}: feature_type must be 'float32' or 'int32', got {feature_type!r}")
    if label_type not in ("float32", "int32"):
        raise ValueError(f"{where}: label_type must be 'int32' (classes) or 'float32' (numbers), got {label_type!r}")
    classes = meta.get("classes")
    if label_type == "int32":
        if not isinstance(classes, list) or len(classes) < 2 or not all(isinstance(c, str) for c in classes):
            raise ValueError(f"{where}: classes must list the names of two or more classes, got {classes!r}")
    elif classes is not None:
        raise ValueError(f"{where}: a numeric target (label_type 'float32') has no classes, got {classes!r}")
    columns, target = _table_columns(meta.get("columns"), meta.get("target"))
    named = None if classes is None else tuple(classes)
    return DataInfo(name, tuple(shape), feature_type, label_type, named, columns, target)


def _table_columns(columns: Any, target: Any) -> tuple[tuple[str, ...] | None, str | None]:
    """A table's column names and its target column, found among them by name (both None for other data)."""
    where = "dataset.json"
    if columns is None and target is None:
        return None, None
    if not isinstance(columns, list) or len(columns) < 2 or not all(isinstance(c, str) and c for c in columns):
        raise ValueError(f"{where}: columns must list the names of a table's two or more columns, got {columns!r}")
    if not isinstance(target, str) or target not in columns:
        shown = ", ".join(repr(c) for c in columns[:20]) + (", ..." if len(columns) > 20 else "")
        raise ValueError(f"{where}: the target column {target!r} is none of the table's columns ({shown})")
    return tuple(columns), target


def _check_sizes(split: str, x: bytes, y: bytes, info: DataInfo) -> None:
    x_name, y_name, width, feature_type = f"{split}-x", f"{split}-y", math.prod(info.example_shape), info.feature_type
    row = width * 4
    if len(x) % row:
        raise ValueError(f"{x_name}: {len(x):,} bytes is not a whole number of examples of {width} {feature_type}")
    if len(y) % 4:
        raise ValueError(f"{y_name}: {len(y):,} bytes is not a whole number of 4-byte labels")
    if len(x) // row != len(y) // 4:
        raise ValueError(f"{x_name} holds {len(x) // row:,} examples but {y_name} holds {len(y) // 4:,} labels")


def words(data: bytes, typecode: str) -> array.array[Any]:
    """Little-endian 4-byte values ("i" int32, "f" float32) as an array in this machine's order."""
    values = array.array(typecode, data)
    if sys.byteorder == "big":
        values.byteswap()
    return values


def _check_values(split: str, x: bytes, y: bytes, info: DataInfo) -> None:
    """Labels are classes (or finite numbers); float features are finite, int ones not negative. The
    checks run at C speed (min, max, sum) and look for the first bad value only when there is one."""
    x_name, y_name, width = f"{split}-x", f"{split}-y", math.prod(info.example_shape)
    if info.classes is not None:
        labels = words(y, "i")
        if labels and not (min(labels) >= 0 and max(labels) < len(info.classes)):
            bad = _first(labels, lambda v: not 0 <= v < len(info.classes))
            last = len(info.classes) - 1
            raise ValueError(f"{y_name}: example {bad}'s label is {labels[bad]}, not a class from 0 to {last}")
    else:
        numbers = words(y, "f")
        bad = None if math.isfinite(sum(numbers)) else _first(numbers, lambda v: not math.isfinite(v))
        if bad is not None:  # a sum can overflow with every number finite
            raise ValueError(f"{y_name}: example {bad}'s target is {numbers[bad]}, not a finite number")
    if info.feature_type == "float32":
        features = words(x, "f")
        bad = None if math.isfinite(sum(features)) else _first(features, lambda v: not math.isfinite(v))
        what = "not a finite number"
    else:
        features = words(x, "i")
        bad = None if not features or min(features) >= 0 else _first(features, lambda v: v < 0)
        what = "a negative index"
    if bad is not None:
        raise ValueError(f"{x_name}: example {bad // width}, value {bad % width} is {features[bad]}, {what}")


def _first(values: array.array[Any], wrong: Any) -> Any:
    return next((i for i, v in enumerate(values) if wrong(v)), None)
