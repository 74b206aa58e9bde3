"""Independent readings of data files, for checking the page's importers (app/src/data/) on inputs they
accept: what data set each file must give, as the content hash's documented bytes, or Refused. Written from
the importers' documented rules with Python's own readers: `csv` for tables (files without quotes: the
split on lines and delimiters is then unambiguous), numpy for .npy arrays, zipfile for archives."""

from __future__ import annotations

import csv
import hashlib
import io
import re
import struct
import warnings
import zipfile
import zlib
from decimal import Decimal

import numpy as np


class Refused(Exception):
    """The reference refuses the file (the importer must too)."""


def content_hash(x: np.ndarray, y: np.ndarray, shape: list[int], classes: list[str] | None, feature: str) -> str:
    """ "sha256:" of the data set's canonical bytes (app/src/data/dataset.js canonicalBytes)."""

    def text(value: str) -> bytes:
        raw = value.encode()
        return struct.pack("<I", len(raw)) + raw

    head = text("scellis.dataset/1") + text(feature) + struct.pack(f"<{len(shape) + 1}I", len(shape), *shape)
    head += text("float32" if classes is None else "int32") + struct.pack("<2I", len(y), len(classes or []))
    head += b"".join(text(name) for name in classes or [])
    body = x.astype("<f4" if feature == "float32" else "<i4").tobytes()
    return "sha256:" + hashlib.sha256(head + body + y.astype("<f4" if classes is None else "<i4").tobytes()).hexdigest()


# CSV (header "auto", target the last column, labels "auto", missing "refuse", delimiter ",")

NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
MISSING = {"", "NA", "N/A", "NaN", "nan", "null", "?"}
FLOAT32_MAX = 3.4028234663852886e38
# What JavaScript's String.prototype.trim removes: WhiteSpace and LineTerminator.
JS_SPACE = "\t\n\v\f\r \u00a0\u1680\u2028\u2029\u202f\u205f\u3000\ufeff" + "".join(map(chr, range(0x2000, 0x200B)))


def number(text: str) -> float | None:
    if NUMBER.fullmatch(text) is None:
        return None
    value = float(text)
    if abs(value) > FLOAT32_MAX:
        raise Refused(f"{text} is beyond float32")
    return value


def js_number_text(value: float) -> str:
    """JavaScript's String(number) (ECMA-262 Number::toString) from Python's shortest round-trip digits."""
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    shortest = Decimal(repr(abs(value))).normalize().as_tuple()
    digits = "".join(map(str, shortest.digits))
    k = len(digits)
    n = k + int(shortest.exponent)  # the value is 0.digits x 10^n
    if k <= n <= 21:
        return sign + digits + "0" * (n - k)
    if 0 < n <= 21:
        return sign + digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return sign + "0." + "0" * -n + digits
    e = n - 1
    tail = digits[0] + ("." + digits[1:] if k > 1 else "")
    return f"{sign}{tail}e{'+' if e >= 0 else '-'}{abs(e)}"


def csv_rows(raw: bytes) -> list[list[str]]:
    """The records of quote-free CSV bytes: UTF-8 (a BOM dropped), split on line ends and commas, fields
    trimmed as JavaScript trims, blank lines left out."""
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise Refused("not UTF-8") from error
    if "\ufffd" in text:
        raise Refused("U+FFFD: taken for bytes that are no UTF-8")
    assert '"' not in text
    rows = []
    for record in csv.reader(io.StringIO(text, newline=""), strict=True):
        fields = [field.strip(JS_SPACE) for field in record]
        if fields and fields != [""]:
            rows.append(fields)
    return rows


def csv_dataset(raw: bytes) -> str:
    rows = csv_rows(raw)
    if not rows:
        raise Refused("empty")
    width = len(rows[0])
    if any(len(row) != width for row in rows):
        raise Refused("ragged")
    first, rest = rows[0], rows[1:]
    columns = list(zip(*rest, strict=True)) if rest else [() for _ in range(width)]
    if any(text in MISSING for row in rest for text in row):
        raise Refused("missing")
    numeric = [all(number(t) is not None for t in column) and len(column) > 0 for column in columns]
    header = any(t not in MISSING and number(t) is None and numeric[c] for c, t in enumerate(first))
    data = rest if header else rows
    if not header and any(t in MISSING for t in first):
        raise Refused("missing")
    if not data:
        raise Refused("no data rows")
    if width > 65536:
        raise Refused("too many columns")
    values = list(zip(*data, strict=True))
    target = width - 1
    parsed = [column_values(column) for column in values]
    y, classes = parsed[target]
    blocks = []
    for c, (column, categories) in enumerate(parsed):
        if c == target:
            continue
        if categories is None:
            blocks.append(np.asarray(column, dtype=np.float64).astype(np.float32)[:, None])
        else:
            blocks.append(np.eye(len(categories), dtype=np.float32)[np.asarray(column, dtype=np.int64)])
    if not blocks:
        raise Refused("no feature columns")
    x = np.concatenate(blocks, axis=1)
    labels = np.asarray(y, dtype=np.float64 if classes is None else np.int64)
    return content_hash(x, labels, [x.shape[1]], classes, "float32")


def column_values(column: tuple[str, ...]) -> tuple[list, list[str] | None]:
    """Numbers, or (when any value is text) category codes into the sorted categories (UTF-16 order)."""
    numbers = [number(t) for t in column]
    if all(v is not None for v in numbers):
        return numbers, None
    names = [js_number_text(v) if v is not None else t for t, v in zip(column, numbers, strict=True)]
    categories = sorted(set(names), key=lambda s: s.encode("utf-16-be"))
    if len(categories) > 1000:
        raise Refused("too many categories")
    index = {name: i for i, name in enumerate(categories)}
    return [index[name] for name in names], categories


# NumPy (features float32, labels "auto")

DTYPES = {"<f4", "<f8", "<i4", "<i8", "|u1", "|b1"}


def npy_array(raw: bytes) -> np.ndarray:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a header numpy reads only with extra parsing
            array = np.load(io.BytesIO(raw), allow_pickle=False)
    except Exception as error:  # numpy's own refusals are many kinds of error
        raise Refused(f"numpy: {error}") from error
    if not isinstance(array, np.ndarray) or array.dtype.str not in DTYPES:
        raise Refused("dtype")
    if array.dtype.str == "|b1" and np.frombuffer(array.tobytes(), np.uint8).max(initial=0) > 1:
        raise Refused("bool bytes other than 0 and 1")
    return array


def arrays_dataset(x: np.ndarray, y: np.ndarray) -> str:
    if x.ndim == 0:
        raise Refused("scalar")
    n = x.shape[0]
    if not (y.ndim == 1 or (y.ndim == 2 and y.shape[1] == 1)) or y.shape[0] != n or n == 0:
        raise Refused("labels")
    example = [1] if x.ndim == 1 else list(x.shape[1:])
    if 0 in example:
        raise Refused("empty examples")
    with np.errstate(over="ignore"):
        features = x.astype(np.float32)
    if not np.isfinite(features).all():
        raise Refused("not finite")
    flat = y.reshape(-1)
    if y.dtype.kind in "biu":
        labels = flat.astype(np.int64)
        if labels.size and (labels.min() < 0 or labels.max() >= 65536):
            raise Refused("class labels")
        classes = [str(i) for i in range(int(labels.max(initial=0)) + 1)]
        return content_hash(features.reshape(n, -1), labels, example, classes, "float32")
    with np.errstate(over="ignore"):
        numbers = flat.astype(np.float32)
    if not np.isfinite(numbers).all():
        raise Refused("labels not finite")
    return content_hash(features.reshape(n, -1), numbers, example, None, "float32")


def npy_pair_dataset(x: bytes, y: bytes) -> str:
    return arrays_dataset(npy_array(x), npy_array(y))


def js_name(info: zipfile.ZipInfo) -> str:
    """An entry's name as zip.js reads it: UTF-8 when its bytes are, else Latin-1 (zipfile: CP437 unless
    flagged UTF-8)."""
    raw = info.filename.encode("utf-8" if info.flag_bits & 0x800 else "cp437")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("utf-8", "replace") if info.flag_bits & 0x800 else raw.decode("latin-1")


def entries(archive: zipfile.ZipFile) -> dict[str, zipfile.ZipInfo]:
    named = {js_name(info): info for info in archive.infolist()}
    if len(named) != len(archive.infolist()):
        raise Refused("duplicate entries")
    return named


def npz_dataset(raw: bytes) -> str:
    try:
        archive = zipfile.ZipFile(io.BytesIO(raw))
        named = entries(archive)
        arrays = [name for name in named if name.endswith(".npy")]
        pair = ["x.npy", "y.npy"] if {"x.npy", "y.npy"} <= set(arrays) else arrays[:2]
        if len(pair) < 2:
            raise Refused("fewer than two arrays")
        return npy_pair_dataset(archive.read(named[pair[0]]), archive.read(named[pair[1]]))
    except (
        zipfile.BadZipFile,
        zipfile.LargeZipFile,
        NotImplementedError,
        EOFError,
        OSError,
        ValueError,
        zlib.error,
    ) as error:
        raise Refused(f"zipfile: {error}") from error
    except RuntimeError as error:  # an encrypted entry
        raise Refused(f"zipfile: {error}") from error


# Image folders in a ZIP (color "gray", no resize), decoded by the tests' fake PNG decoder: the IHDR chunk
# gives the size and the RGBA bytes follow it

PNG = b"\x89PNG\r\n\x1a\n"
IMAGE_NAME = re.compile(r"\.(png|jpe?g)$", re.IGNORECASE)


def image_classes(names: list[str]) -> tuple[list[str], list[tuple[str, str, int]]]:
    """The classes and (entry name, path, label) of each image, as images.js classifies a folder."""
    split = []
    for name in names:
        parts = [p for p in re.split(r"[\\/]", name) if p not in ("", ".")]
        if parts and parts[0] != "__MACOSX":
            split.append((name, parts, bool(re.search(r"[\\/]$", name))))
    files = [parts for _, parts, folder in split if not folder]
    top = files[0][0] if files else None
    if files and all(len(p) >= 2 and p[0] == top for p in files) and any(len(p) >= 3 for p in files):
        split = [(name, parts[1:], folder) for name, parts, folder in split]
    folders, images = set(), []
    for name, parts, folder in (s for s in split if s[1]):
        if parts[0].startswith("."):
            continue
        if folder or len(parts) > 1:
            folders.add(parts[0])
        hidden = any(p.startswith(".") for p in parts) or parts[-1].lower() in ("thumbs.db", "desktop.ini")
        if folder or hidden:
            continue
        if len(parts) == 1 or not IMAGE_NAME.search("/".join(parts)):
            raise Refused("outside a class folder, or not an image")
        images.append((name, "/".join(parts), parts[0]))
    classes = sorted(folders, key=lambda s: s.encode("utf-16-be"))
    if not classes:
        raise Refused("no class folders")
    items = []
    for label, cls in enumerate(classes):
        own = sorted((i for i in images if i[2] == cls), key=lambda i: i[1].encode("utf-16-be"))
        if not own:
            raise Refused("an empty class folder")
        items += [(name, path, label) for name, path, _ in own]
    return classes, items


def fake_png_gray(raw: bytes) -> tuple[int, int, np.ndarray]:
    if raw[:3] == b"\xff\xd8\xff":
        raise NotImplementedError("a JPEG: the fake decoder reads PNGs only")
    if raw[:8] != PNG or len(raw) < 24 or raw[12:16] != b"IHDR":
        raise Refused("no PNG header")
    width, height = struct.unpack(">II", raw[16:24])
    if width == 0 or height == 0 or width > 16384 or height > 16384 or width * height > 2**26:
        raise Refused("size")
    rgba = np.frombuffer(raw[33:], np.uint8).astype(np.float64)
    if rgba.size != width * height * 4:
        raise Refused("pixels")
    r, g, b = rgba[0::4], rgba[1::4], rgba[2::4]
    return width, height, ((0.299 * r + 0.587 * g + 0.114 * b) / 255).astype(np.float32)


def image_zip_dataset(raw: bytes) -> str:
    try:
        archive = zipfile.ZipFile(io.BytesIO(raw))
        named = entries(archive)
        classes, items = image_classes(list(named))
        pixels, labels, size = [], [], None
        for name, _, label in items:
            width, height, gray = fake_png_gray(archive.read(named[name]))
            if size not in (None, (width, height)):
                raise Refused("sizes differ")
            size = (width, height)
            pixels.append(gray)
            labels.append(label)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, OSError, RuntimeError, zlib.error) as error:
        raise Refused(f"zipfile: {error}") from error
    except ValueError as error:  # zipfile: a bad compression method and the like
        raise Refused(f"zipfile: {error}") from error
    assert size is not None
    x = np.stack(pixels)
    return content_hash(x, np.asarray(labels), [size[1], size[0], 1], classes, "float32")
