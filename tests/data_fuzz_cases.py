"""Malformed data files for the fuzz tests, made with a fixed seed: valid CSV, NPY, NPZ and image ZIP files
mutated (cut short, bytes flipped, inserted or dropped, headers that lie about shapes, dtypes and sizes, huge
declared sizes, bad UTF-8, another delimiter, ragged rows), and what an independent reading of each gives
(data_reference.py). tests/js/data_fuzz.test.js reads them through the page's importers (js_inputs.py
writes them); test_data_fuzz.py mutates the engine's files with `mutate`."""

from __future__ import annotations

import base64
import io
import random
import struct
import zipfile
import zlib
from collections.abc import Callable

import numpy as np
from data_reference import Refused, csv_dataset, image_zip_dataset, npy_pair_dataset, npz_dataset

SEED = 19


def mutate(raw: bytes, rng: random.Random) -> bytes:
    """One generic mutation: cut short, bytes flipped, bytes inserted, a run dropped or repeated."""
    data = bytearray(raw)
    how = rng.randrange(5)
    at = rng.randrange(len(data) + 1)
    if how == 0:
        return bytes(data[:at])
    if how == 1:
        for _ in range(rng.randint(1, 8)):
            data[rng.randrange(len(data))] = rng.randrange(256)
    elif how == 2:
        data[at:at] = rng.choice(
            [b"\xff", b"\xc3", b"\x00", b",", b'"', b"\n", b"NA", b"-", b"e9", bytes([rng.randrange(256)])]
        )
    elif how == 3:
        del data[at : at + rng.randint(1, 16)]
    else:
        data[at:at] = data[at : at + rng.randint(1, 64)]
    return bytes(data)


# CSV


def csv_seeds(rng: random.Random) -> list[bytes]:
    numbers = "a,b,c,label\n" + "".join(
        f"{rng.uniform(-9, 9):.3f},{rng.randint(0, 99)},{rng.random():.2e},{i % 2}\n" for i in range(30)
    )
    colours = "width,colour,size\n" + "".join(
        f"{rng.random():.2f},{rng.choice(['red', 'blue', 'été', '日本'])},{rng.choice(['s', 'm', 'l'])}\n"
        for i in range(25)
    )
    bare = "".join(f"{rng.randint(-5, 5)}.5,+{rng.randint(0, 9)},.25,-{rng.randint(0, 3)}e1\n" for _ in range(20))
    crlf = "x, y ,z\r\n\r\n" + "".join(f" {i} ,{i * 2}, {i % 3}\r\n" for i in range(15))
    quoted = 'name,"x, y",label\n"a ""b""",1,yes\n"c\nd",2,no\n' * 5
    return [text.encode() for text in (numbers, colours, bare, crlf, quoted)]


def csv_mutation(raw: bytes, rng: random.Random) -> bytes:
    text = raw.decode()
    how = rng.randrange(6)
    if how == 0:
        return text.replace(",", rng.choice([";", "\t", "|"])).encode()  # another delimiter
    if how == 1:  # a ragged row
        lines = text.split("\n")
        i = rng.randrange(len(lines))
        lines[i] = lines[i].rsplit(",", 1)[0] if rng.random() < 0.5 else lines[i] + ",9"
        return "\n".join(lines).encode()
    if how == 2:  # bad UTF-8
        at = rng.randrange(len(raw) + 1)
        return raw[:at] + rng.choice([b"\xff", b"\xc3(", b"\xe6\x97", b"\x80"]) + raw[at:]
    if how == 3:  # a missing value, or line ends of another kind
        return text.replace("\n", "\r", 1).encode() if rng.random() < 0.3 else text.replace(",", ",NA,", 1).encode()
    return mutate(raw, rng)


# NumPy


def npy(array: np.ndarray, version: tuple[int, int] | None = None) -> bytes:
    out = io.BytesIO()
    np.lib.format.write_array(out, array, version=version)
    return out.getvalue()


def npy_seeds(rng: random.Random) -> list[tuple[bytes, bytes]]:
    n = 12
    xs = [
        np.asarray(rng.random(), dtype="<f4") * np.ones((n, 3), "<f4"),
        np.arange(n * 4, dtype="<f8").reshape(n, 2, 2),
        np.asfortranarray(np.arange(n * 3, dtype="<i4").reshape(n, 3)),
        np.arange(n, dtype="<i8"),
        (np.arange(n * 2) % 256).astype("|u1").reshape(n, 2),
        (np.arange(n * 2) % 2).astype("|b1").reshape(n, 2),
    ]
    ys = [
        np.arange(n) % 3,
        (np.arange(n) % 2).astype("<i4"),
        np.linspace(0, 1, n).astype("<f4"),
        (np.arange(n) % 2).astype("|b1"),
    ]
    versions = [(1, 0), (2, 0), (3, 0)]
    return [(npy(x, versions[i % 3]), npy(ys[i % len(ys)], versions[(i + 1) % 3])) for i, x in enumerate(xs)]


def header_lie(raw: bytes, rng: random.Random) -> bytes:
    """The .npy's header with a field that disagrees with its data: another shape, dtype or order."""
    start = 10 if raw[6] == 1 else 12
    length = struct.unpack("<H" if raw[6] == 1 else "<I", raw[8:start])[0]
    header = raw[start : start + length].decode("latin1")
    lies = [
        ("'shape': (", f"'shape': ({rng.choice([0, 1, 5, 13, 2**31, 2**62, 10**30])}, "),
        (
            "'descr': '",
            f"'descr': '{rng.choice(['<f4', '<f8', '<i4', '<i8', '|u1', '|b1', '<f2', '>f4', '<U3'])}', 'x': '",
        ),
        ("False", "True"),
        ("True", "False"),
        ("'shape'", "'descr': '<f4', 'shape'"),  # a key twice
        ("}", "'extra': 1}"),
    ]
    old, new = rng.choice(lies)
    lied = header.replace(old, new, 1)
    if "'x': '" in lied:  # the descr lie keeps the old descr text as another key's value
        lied = lied.replace("'x': '", "", 1).replace("', '", "', 'fortran_order_': '", 1)
    body = lied.rstrip("\n ").encode("latin1")
    body += b" " * (-(start + len(body) + 1) % 64) + b"\n"
    size = struct.pack("<H" if raw[6] == 1 else "<I", len(body)) if len(body) < 65536 or raw[6] != 1 else raw[8:10]
    return raw[:8] + size + body + raw[start + length :]


# ZIP archives


def zip_of(entries: dict[str, bytes], deflate: bool = True) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED if deflate else zipfile.ZIP_STORED) as archive:
        for name, content in entries.items():
            archive.writestr(name, content)
    return out.getvalue()


def zip_lie(raw: bytes, rng: random.Random) -> bytes:
    """A field of a central or local header, or of the end record, set to a value that lies."""
    data = bytearray(raw)
    central = [i for i in range(len(data) - 4) if data[i : i + 4] == b"PK\x01\x02"]
    local = [i for i in range(len(data) - 4) if data[i : i + 4] == b"PK\x03\x04"]
    end = data.rfind(b"PK\x05\x06")
    big = rng.choice([0, 1, 2**31, 0xFFFFFFFE, 0xFFFFFFFF, rng.randrange(2**32)])
    fields = [(c, off, "<I") for c in central for off in (16, 20, 24, 42)]  # crc, sizes, local offset
    fields += [(c, off, "<H") for c in central for off in (8, 10, 28, 30)]  # flags, method, name/extra lengths
    fields += [(c, off, "<H") for c in local for off in (26, 28)]
    fields += [(end, off, "<H") for off in (8, 10)] + [(end, off, "<I") for off in (12, 16)]
    at, off, form = rng.choice(fields)
    value = big if form == "<I" else rng.choice([0, 1, 8, 12, 99, 0x801, 0xFFFF, rng.randrange(2**16)])
    if at >= 0 and at + off + struct.calcsize(form) <= len(data):
        data[at + off : at + off + struct.calcsize(form)] = struct.pack(form, value)
    return bytes(data)


def fake_png(width: int, height: int, rng: random.Random) -> bytes:
    ihdr = b"IHDR" + struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0)
    header = b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + ihdr + struct.pack(">I", zlib.crc32(ihdr))
    return header + bytes(rng.randrange(256) for _ in range(width * height * 4))


def image_folders(rng: random.Random) -> list[dict[str, bytes]]:
    def folder(top: str, classes: list[str], size: int, count: int) -> dict[str, bytes]:
        return {f"{top}{c}/{i}.png": fake_png(size, size, rng) for c in classes for i in range(count)}

    return [
        folder("", ["cat", "dog"], 2, 3),
        folder("pets/", ["a", "b", "c"], 3, 2),
        {**folder("", ["x", "y"], 2, 2), "x/.DS_Store": b"junk", "__MACOSX/x/._0.png": b"junk"},
    ]


def image_seeds(rng: random.Random) -> list[bytes]:
    return [zip_of(entries, deflate=i != 1) for i, entries in enumerate(image_folders(rng))]


def image_lie(entries: dict[str, bytes], rng: random.Random) -> bytes:
    """The folder zipped whole (every CRC true) with one image changed: its header's width or height set
    to another size (0, huge, or off by one), or its bytes mutated."""
    name = rng.choice([n for n in entries if n.endswith(".png")])
    image = bytearray(entries[name])
    if rng.random() < 0.6:
        at = rng.choice([16, 20])
        image[at : at + 4] = struct.pack(">I", rng.choice([0, 1, 3, 4, 16385, 100_000, 2**32 - 1]))
    else:
        image = bytearray(mutate(bytes(image), rng))
    return zip_of({**entries, name: bytes(image)})


def npz_seeds(rng: random.Random) -> list[bytes]:
    out = []
    for i, (x, y) in enumerate(npy_seeds(rng)):
        names = ("x.npy", "y.npy") if i % 2 == 0 else ("features.npy", "labels.npy")
        out.append(zip_of({names[0]: x, names[1]: y}, deflate=i % 3 != 0))
    return out


def cases(rng: random.Random) -> list[dict]:
    """The malformed files (and, first of each kind, the valid ones they come from)."""
    b64 = lambda raw: base64.b64encode(raw).decode()  # noqa: E731
    out: list[dict] = []
    csvs = csv_seeds(rng)
    out += [{"kind": "csv", "raw": raw} for raw in csvs]
    out += [{"kind": "csv", "raw": csv_mutation(rng.choice(csvs), rng)} for _ in range(400)]
    pairs = npy_seeds(rng)
    out += [{"kind": "npy", "raw": x, "y_raw": y} for x, y in pairs]
    for _ in range(250):
        x, y = rng.choice(pairs)
        change: Callable[[bytes, random.Random], bytes] = header_lie if rng.random() < 0.4 else mutate
        if rng.random() < 0.7:
            x = change(x, rng)
        else:
            y = change(y, rng)
        out.append({"kind": "npy", "raw": x, "y_raw": y})
    for kind, seeds in (("npz", npz_seeds(rng)), ("zip", image_seeds(rng))):
        out += [{"kind": kind, "raw": raw} for raw in seeds]
        out += [
            {"kind": kind, "raw": (zip_lie if rng.random() < 0.5 else mutate)(rng.choice(seeds), rng)}
            for _ in range(200)
        ]
    folders = image_folders(rng)
    out += [{"kind": "zip", "raw": image_lie(rng.choice(folders), rng)} for _ in range(150)]
    for case in out:
        case["data"] = b64(case["raw"])
        if "y_raw" in case:
            case["y"] = b64(case["y_raw"])
    return out


REFERENCE = {
    "csv": lambda c: None if b'"' in c["raw"] else csv_dataset(c["raw"]),
    "npy": lambda c: npy_pair_dataset(c["raw"], c["y_raw"]),
    "npz": lambda c: npz_dataset(c["raw"]),
    "zip": lambda c: image_zip_dataset(c["raw"]),
}


def reference(case: dict) -> str | None:
    """The reference's content hash, "refused", or None where there is no reference reading."""
    try:
        return REFERENCE[case["kind"]](case)
    except Refused:
        return "refused"
    except NotImplementedError:
        return None
