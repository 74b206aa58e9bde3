"""The data importers' JS tests' inputs (tests/js/data_import.test.js, data_limits.test.js): NPY and NPZ
arrays as numpy writes them, ZIP archives as Python's zipfile writes them (images faked as a PNG or JPEG
header and RGBA bytes), archives that lie about their sizes, the expected values numpy gives, an
independent mulberry32 permutation, and content hashes of the documented bytes. Bytes travel as base64."""

from __future__ import annotations

import base64
import hashlib
import io
import struct
import zipfile
import zlib
from typing import Any

import numpy as np


def b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def npy(array: np.ndarray, version: tuple[int, int] = (1, 0)) -> bytes:
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, array, version=version, allow_pickle=False)
    return buffer.getvalue()


def npz(compressed: bool = False, **arrays: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    (np.savez_compressed if compressed else np.savez)(buffer, **arrays)
    return buffer.getvalue()


def zip_of(entries: dict[str, bytes], method: int = zipfile.ZIP_DEFLATED) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", method) as archive:
        for name, content in entries.items():
            archive.writestr(name, content)
    return buffer.getvalue()


def image_header(width: int, height: int, jpeg: bool = False) -> bytes:
    """A PNG's signature and IHDR chunk, or a JPEG's start and baseline frame header: what gives the size."""
    if jpeg:
        return b"\xff\xd8\xff\xc0" + struct.pack(">HBHHB", 17, 8, height, width, 3) + bytes(9)
    ihdr = b"IHDR" + struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + ihdr + struct.pack(">I", zlib.crc32(ihdr))


def fake_image(width: int, height: int, rgba: list[int], jpeg: bool = False) -> bytes:
    """What the tests' fake decoder reads: the header, which gives the size, then the RGBA bytes."""
    assert len(rgba) == width * height * 4
    return image_header(width, height, jpeg) + bytes(rgba)


def gray_pixels(values: list[int]) -> list[int]:
    return [c for v in values for c in (v, v, v, 255)]


# -- data_import.test.js --------------------------------------------------------------------------------

DTYPES = ["<f4", "<f8", "<i4", "<i8", "|u1", "|b1"]


def npy_dtypes() -> list[dict[str, Any]]:
    """x and y of each dtype and .npy version, with the values numpy reads from them."""
    rng = np.random.default_rng(3)
    cases = []
    for dtype in DTYPES:
        for version in [(1, 0), (2, 0), (3, 0)]:
            x = (rng.standard_normal((4, 2, 3)) * 50).astype(dtype)
            y = np.array([0, 2, 1, 2], dtype=dtype if dtype != "|b1" else "|u1")
            if dtype == "|b1":
                y = np.array([True, False, True, True])
            floats = dtype in ("<f4", "<f8")  # float labels: a regression target
            cases.append(
                {
                    "dtype": dtype,
                    "version": version[0],
                    "x": b64(npy(x, version)),
                    "y": b64(npy(y, version)),
                    "expected_x": x.astype(np.float32).ravel().tolist(),
                    "expected_y": y.astype(np.float32).tolist() if floats else y.astype(int).tolist(),
                    "classes": None if floats else [str(i) for i in range(int(y.max()) + 1)],
                }
            )
    return cases


def fortran() -> dict[str, Any]:
    x = np.asfortranarray(np.arange(24, dtype="<i8").reshape(2, 3, 4) * 1000)
    assert x.flags.f_contiguous and not x.flags.c_contiguous
    return {"npz": b64(npz(x=x, y=np.array([1, 0]))), "x": np.ascontiguousarray(x).ravel().tolist()}


def npz_arrays() -> dict[str, str]:
    x = np.arange(6, dtype="<f4").reshape(3, 2)
    files = {
        "xy.npz": npz(y=np.array([1, 0, 1]), x=x, extra=np.zeros(1)),
        "positional.npz": npz(arr_0=x, arr_1=np.array([0.5, 1.5, 2.5])),
        "named.npz": npz(compressed=True, images=x, targets=np.array([2, 0, 1], dtype="<i8")),
    }
    return {name: b64(content) for name, content in files.items()}


GOOD_X = npy(np.zeros((3, 2), dtype="<f4"))
GOOD_Y = npy(np.array([0, 1, 0]))
INT32 = {"featureType": "int32"}
# (x.npy, y.npy, options, the entry named, what is said of it)
BAD_ARRAYS = [
    (b"PK not numpy", GOOD_Y, {}, "x.npy", "is not a NumPy .npy array"),
    (GOOD_X[:6] + b"\x04\x00" + GOOD_X[8:], GOOD_Y, {}, "x.npy", "is a .npy file of format version 4.0"),
    (npy(np.zeros((3, 2), dtype=">f4")), GOOD_Y, {}, "x.npy", "holds big-endian numbers (>f4); save it little"),
    (npy(np.zeros((3, 2), dtype="<f2")), GOOD_Y, {}, "x.npy", "has dtype <f2; the dtypes read are <f4, <f8"),
    (npy(np.zeros(3, dtype=[("a", "<f4"), ("b", "<i4")])), GOOD_Y, {}, "x.npy", "holds a structured array"),
    (GOOD_X[:-4], GOOD_Y, {}, "x.npy", "holds 20 bytes of data, but shape (3, 2) of <f4 takes 24"),
    (npy(np.array([[0, 1], [np.nan, 2], [3, 4]], dtype="<f8")), GOOD_Y, {}, "x.npy", "element [1, 0] is NaN"),
    (npy(np.array([[1e39, 0]] * 3)), GOOD_Y, {}, "x.npy", "element [0, 0] is 1e+39 as float32; features must"),
    (npy(np.array([[2**40]] * 3)), GOOD_Y, INT32, "x.npy", "element [0, 0] is 1099511627776, which"),
    (npy(np.zeros((3, 1), dtype="<f4")), GOOD_Y, INT32, "x.npy", "holds <f4 values; int32 features need"),
    (GOOD_X, npy(np.array([0, 2**40, 1])), {}, "y.npy", "label 1 is 1099511627776; class labels must be whole"),
    (GOOD_X, npy(np.array([0, -1, 1])), {}, "y.npy", "label 1 is -1; class labels must be whole numbers"),
    (GOOD_X, npy(np.array([0, 1.5, 1])), {"labels": "classes"}, "y.npy", "label 1 is 1.5; class labels"),
    (GOOD_X, npy(np.array([0, 1])), {}, "y.npy", "holds 2 labels, but the features hold 3 examples"),
    (GOOD_X, npy(np.zeros((3, 2), dtype="<i4")), {}, "y.npy", "has shape (3, 2); labels must have shape (n,)"),
    (GOOD_X, GOOD_Y, {"classes": ["only"]}, "y.npy", "has label 1, but 1 class names were given"),
]

OUTSIDE = "lies outside any class folder: put each image in a folder named for its class"
# (the entries of set.zip, what its refusal says)
BAD_FOLDERS = [
    (
        {"cat/a.png": fake_image(1, 1, [0] * 4), "notes.png": fake_image(1, 1, [0] * 4)},
        'set.zip: entry "notes.png": ' + OUTSIDE,
    ),
    (
        {"cat/a.png": fake_image(1, 1, [0] * 4), "dog/": b"", "dog/.DS_Store": b"x"},
        'set.zip: entry "dog/": is a class folder with no PNG or JPEG image',
    ),
    (
        {"cat/a.png": fake_image(1, 1, [0] * 4), "cat/a.gif": b"GIF89a"},
        'set.zip: entry "cat/a.gif": is not a PNG or JPEG image (.png, .jpg or .jpeg)',
    ),
    (
        {"cat/a.png": fake_image(1, 1, [0] * 4), "cat/b.png": fake_image(2, 1, [0] * 8)},
        'set.zip: entry "cat/b.png": is 2x1 pixels but cat/a.png is 1x1: give a size to resize them all to',
    ),
    (
        {"cat/broken.png": fake_image(1, 1, [0] * 4)},
        'set.zip: entry "cat/broken.png": could not be decoded (bad Huffman table)',
    ),
    (
        {"cat/a.png": b"GIF89a...."},
        'set.zip: entry "cat/a.png": is neither PNG nor JPEG inside (its first bytes are 47 49 46 38)',
    ),
    (
        {"cat/a.png": fake_image(1, 1, [0] * 4)[:-1]},
        'set.zip: entry "cat/a.png": was decoded to 1x1 pixels with 3 RGBA bytes, which do not agree',
    ),
    ({"readme.txt": b"hi"}, 'set.zip: entry "readme.txt": ' + OUTSIDE),
    ({}, "set.zip: holds no class folders of images"),
]


def pets_zip() -> bytes:
    red_green = [255, 0, 0, 255, 0, 255, 0, 128]  # 2x1: red, then half-transparent green
    entries = {
        "pets/": b"",
        "pets/dog/": b"",
        "pets/dog/b.png": fake_image(2, 1, red_green),
        "pets/dog/a.jpg": fake_image(2, 1, gray_pixels([0, 51]), jpeg=True),
        "pets/cat/deeper/c.PNG": fake_image(2, 1, gray_pixels([255, 102])),
        "pets/cat/.DS_Store": b"junk",
        "__MACOSX/pets/cat/._c.PNG": b"junk",
    }
    return zip_of(entries)


def mulberry32(seed: int):
    """An independent Python mulberry32, to check the JavaScript permutation against."""
    mask = 0xFFFFFFFF
    state = seed
    while True:
        state = (state + 0x6D2B79F5) & mask
        t = ((state ^ (state >> 15)) * (state | 1)) & mask
        t = (((t + (((t ^ (t >> 7)) * (t | 61)) & mask)) & mask) ^ t) & mask
        yield (t ^ (t >> 14)) & mask


def python_permutation(n: int, seed: int) -> list[int]:
    order = list(range(n))
    numbers = mulberry32(seed)
    for i in range(n - 1, 0, -1):
        j = next(numbers) * (i + 1) >> 32
        order[i], order[j] = order[j], order[i]
    return order


def canonical(x: np.ndarray, y: np.ndarray, shape: list[int], classes: list[str] | None) -> bytes:
    """The content hash's layout, written from its documentation."""

    def text(value: str) -> bytes:
        raw = value.encode()
        return struct.pack("<I", len(raw)) + raw

    head = text("scellis.dataset/1") + text("float32") + struct.pack(f"<{len(shape) + 1}I", len(shape), *shape)
    head += text("float32" if classes is None else "int32") + struct.pack("<2I", len(y), len(classes or []))
    head += b"".join(text(name) for name in classes or [])
    return head + x.astype("<f4").tobytes() + y.astype("<f4" if classes is None else "<i4").tobytes()


def content_hashes() -> dict[str, str]:
    x = np.array([[0.1, 2.0], [3.5, -4.25], [1e-3, 7.0]], dtype="<f4")
    y = np.array([1, 0, 2])
    regression = canonical(x, np.array([0.5, 1, 2]), [2], None)
    return {
        "same.npz": b64(npz(x=x, y=y)),
        "regression.npz": b64(npz(x=x, y=np.array([0.5, 1, 2], dtype="<f8"))),
        "expected": "sha256:" + hashlib.sha256(canonical(x, y, [2], ["0", "1", "2"])).hexdigest(),
        "regression_expected": "sha256:" + hashlib.sha256(regression).hexdigest(),
    }


def split_arrays() -> tuple[np.ndarray, np.ndarray]:
    """A digits-like data set (64 pixels, 10 classes) that the page splits and writes as the engine's files."""
    rng = np.random.default_rng(0)
    return rng.integers(0, 17, (50, 64)).astype("<f4") / 16, rng.integers(0, 10, 50)


def data_import() -> dict[str, Any]:
    x, y = split_arrays()
    return {
        "npy_dtypes": npy_dtypes(),
        "fortran": fortran(),
        "npz_arrays": npz_arrays(),
        "bad_arrays": [
            {"archive": b64(zip_of({"x.npy": xs, "y.npy": ys})), "options": options, "entry": entry, "said": said}
            for xs, ys, options, entry, said in BAD_ARRAYS
        ],
        "one.npz": b64(npz(x=np.zeros((2, 2)))),
        "pets.zip": b64(pets_zip()),
        "folder": {
            "one": b64(fake_image(2, 2, gray_pixels([0, 100, 200, 100]))),
            "two": b64(fake_image(2, 1, gray_pixels([40, 200]))),
        },
        "bad_folders": [{"archive": b64(zip_of(entries)), "message": message} for entries, message in BAD_FOLDERS],
        "permutation": python_permutation(1000, 7),
        "content_hash": content_hashes(),
        "split.npz": b64(npz(x=x, y=y)),
    }


# -- data_limits.test.js --------------------------------------------------------------------------------


def declaring(archive: bytes, name: str, size: int) -> bytes:
    """The archive with `name`'s uncompressed size, in its local and central headers, set to `size`."""
    out = bytearray(archive)
    encoded = name.encode()
    for signature, size_at, name_at in ((b"PK\x03\x04", 22, 30), (b"PK\x01\x02", 24, 46)):
        at = out.find(signature)
        while out[at + name_at : at + name_at + len(encoded)] != encoded:
            at = out.find(signature, at + 1)
        out[at + size_at : at + size_at + 4] = struct.pack("<I", size)
    return bytes(out)


def bombs() -> list[dict[str, Any]]:
    """An image and an array whose archives declare other sizes than they hold: beyond the budget, within
    it but beyond deflate's 1032:1, and less than the entry inflates to."""
    zeros = bytes(10_000_000)
    images = zip_of({"cat/a.png": image_header(1, 1) + zeros})
    arrays = zip_of({"x.npy": npy(np.zeros(1_250_000)), "y.npy": npy(np.zeros(1))})
    return [
        {
            "declared": declared,
            "images": b64(declaring(images, "cat/a.png", declared)),
            "arrays": b64(declaring(arrays, "x.npy", declared)),
        }
        for declared in (3_000_000_000, 100_000_000, 9_000_000)
    ]


def data_limits() -> dict[str, Any]:
    honest = zip_of({"x.npy": npy(np.zeros((1000, 1000), dtype="<f4")), "y.npy": npy(np.zeros(1000, dtype="<i4"))})
    damaged = bytearray(zip_of({"x.npy": npy(np.ones((3, 2), dtype="<f4")), "y.npy": npy(np.zeros(3, dtype="<i4"))}))
    crc_at = damaged.find(b"PK\x01\x02") + 16
    damaged[crc_at] ^= 0xFF  # the central directory's CRC-32 of x.npy
    huge = {"cat/a.png": image_header(1, 1) + bytes(4), "cat/b.png": image_header(100_000, 100_000)}
    return {
        "bombs": bombs(),
        "honest.npz": b64(honest),
        "damaged.npz": b64(bytes(damaged)),
        "huge.zip": b64(zip_of(huge)),
        "small.png": b64(image_header(1, 1) + bytes(4)),
        "budget.npz": b64(zip_of({"x.npy": npy(np.zeros((50, 10))), "y.npy": npy(np.zeros(50, "<i4"))})),
    }
