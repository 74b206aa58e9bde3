"""Import limits under Node (app/src/data/limits.js, zip.js and the importers): each file that would make
the page allocate more than it may is refused by name before the allocation, with the number found and the
limit: a CSV of a million columns, text columns whose one-hot would be 200,000 values wide, examples over
the data budget, a ZIP entry that declares more than it may (or than deflate can produce, or inflates past
what it declares), an image whose header gives a huge size, a resize to a huge size. And the target column
chosen by name: the name asked for, or the last column when the file lacks it, saying which."""

from __future__ import annotations

import io
import json
import struct
import zipfile
import zlib
from pathlib import Path

import numpy as np
import pytest
from nodejs import run_node

ROOT = Path(__file__).resolve().parents[1]
DATA = (ROOT / "app" / "src" / "data").as_uri()

PRELUDE = f"""
import {{ readFileSync }} from "node:fs";
import * as data from "{DATA}/index.js";
const out = {{}};
const failure = async (run) => {{
  try {{ await run(); }} catch (error) {{
    return {{ name: error.name, message: error.message, file: error.file, entry: error.entry, row: error.row,
      column: error.column }};
  }}
  return null;
}};
const bytes = (path) => new Uint8Array(readFileSync(path));
const decoded = [];
const decode = async (b, name) => {{
  decoded.push(name);
  const view = new DataView(b.buffer, b.byteOffset, b.byteLength);
  const [width, height] = [view.getUint32(16), view.getUint32(20)];
  return {{ width, height, rgba: new Uint8ClampedArray(b.subarray(33)) }};
}};
"""


def run_js(body: str, inputs: dict | None = None) -> dict:
    return run_node(PRELUDE, body, inputs, timeout=60)


def js(value: object) -> str:
    return json.dumps(value)


def png_header(width: int, height: int) -> bytes:
    ihdr = b"IHDR" + struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + struct.pack(">I", 13) + ihdr + struct.pack(">I", zlib.crc32(ihdr))


def fake_png(width: int, height: int) -> bytes:
    return png_header(width, height) + bytes(width * height * 4)


def zip_of(entries: dict[str, bytes], method: int = zipfile.ZIP_DEFLATED) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", method) as archive:
        for name, content in entries.items():
            archive.writestr(name, content)
    return buffer.getvalue()


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


def npy(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


# CSV


def test_a_csv_of_a_million_columns_is_refused_at_its_first_row() -> None:
    row = ",".join(["1"] * 1_000_000)
    text = "\n".join([",".join(f"c{i}" for i in range(1_000_000)), row, row]) + "\n"
    out = run_js(
        """
const text = JSON.parse(readFileSync(process.argv[2], "utf8")).text;
out.whole = await failure(() => data.parseCsv(text, "wide.csv"));
const chunks = [new TextEncoder().encode(text)];
out.streamed = await failure(() => data.parseCsvStream(chunks, "wide.csv"));
""",
        {"text": text},
    )
    for error in (out["whole"], out["streamed"]):
        assert error["name"] == "DataError" and error["row"] == 1, error
        assert error["message"].startswith("wide.csv: row 1, column CRXQ: the row has more than 65,536 columns")


def test_text_columns_whose_one_hot_outgrows_an_example_are_refused_as_they_are_read() -> None:
    header = ",".join([*(f"t{c}" for c in range(200)), "y"])
    rows = [",".join([*(f"v{r}" for _ in range(200)), str(r % 2)]) for r in range(1000)]
    out = run_js(
        """
const text = JSON.parse(readFileSync(process.argv[2], "utf8")).text;
out.error = await failure(() => data.parseCsv(text, "cats.csv"));
""",
        {"text": "\n".join([header, *rows]) + "\n"},
    )
    error = out["error"]
    assert error["name"] == "DataError" and error["row"] is not None and error["row"] < 400, error
    assert "wider than the 65,536 values it may hold" in error["message"], error["message"]


def test_a_csv_over_the_data_budget_is_refused_naming_the_budget() -> None:
    text = "a,b,c\n" + "".join(f"{i},{i + 1},{i % 2}\n" for i in range(100))
    budget = {"bytes": 1000, "how": "a budget set by this test"}
    out = run_js(f"""
out.whole = await failure(() => data.parseCsv({js(text)}, "t.csv", {{ budget: {js(budget)} }}));
out.fits = (await data.parseCsv({js(text)}, "t.csv", {{ budget: {{ bytes: 1200, how: "more" }} }})).n;
""")
    message = out["whole"]["message"]
    assert message.startswith("t.csv: row ")
    assert "more than the budget of 1,000 bytes (a budget set by this test)" in message
    assert out["fits"] == 100  # 100 rows of 2 features and a label: 1,200 bytes


# ZIP entries


ZEROS = bytes(10_000_000)


@pytest.mark.parametrize(
    ("declared", "said"),
    [
        (3_000_000_000, "declares 3,000,000,000 bytes, more than"),
        (100_000_000, "declares 100,000,000 bytes from"),  # within the budget, beyond deflate's 1032:1
        (9_000_000, "inflates to more than the 9,000,000 bytes it declares"),
    ],
)
def test_a_zip_entry_is_checked_before_and_while_it_is_inflated(tmp_path: Path, declared: int, said: str) -> None:
    images = declaring(zip_of({"cat/a.png": png_header(1, 1) + ZEROS}), "cat/a.png", declared)
    arrays = declaring(zip_of({"x.npy": npy(np.zeros(1_250_000)), "y.npy": npy(np.zeros(1))}), "x.npy", declared)
    (tmp_path / "bomb.zip").write_bytes(images)
    (tmp_path / "bomb.npz").write_bytes(arrays)
    out = run_js(f"""
const at = (name) => bytes({js(str(tmp_path))} + "/" + name);
out.images = await failure(() => data.imagesFromZip(at("bomb.zip"), "bomb.zip", {{ decode, color: "gray" }}));
out.arrays = await failure(() => data.datasetFromNpz(at("bomb.npz"), "bomb.npz"));
out.decoded = decoded;
""")
    assert out["images"]["message"].startswith(f'bomb.zip: entry "cat/a.png": {said}'), out["images"]
    assert out["arrays"]["message"].startswith(f'bomb.npz: entry "x.npy": {said}'), out["arrays"]
    assert out["decoded"] == []


def test_damaged_entries_are_refused_and_an_honest_highly_compressed_one_is_read(tmp_path: Path) -> None:
    honest = zip_of({"x.npy": npy(np.zeros((1000, 1000), dtype="<f4")), "y.npy": npy(np.zeros(1000, dtype="<i4"))})
    damaged = bytearray(zip_of({"x.npy": npy(np.ones((3, 2), dtype="<f4")), "y.npy": npy(np.zeros(3, dtype="<i4"))}))
    crc_at = damaged.find(b"PK\x01\x02") + 16
    damaged[crc_at] ^= 0xFF  # the central directory's CRC-32 of x.npy
    (tmp_path / "honest.npz").write_bytes(honest)
    (tmp_path / "damaged.npz").write_bytes(bytes(damaged))
    out = run_js(f"""
out.honest = (await data.datasetFromNpz(bytes({js(str(tmp_path / "honest.npz"))}), "honest.npz")).exampleShape;
out.damaged = await failure(() => data.datasetFromNpz(bytes({js(str(tmp_path / "damaged.npz"))}), "damaged.npz"));
""")
    assert len(honest) < 4_000_000 / 500 and out["honest"] == [1000]
    assert out["damaged"]["message"].startswith('damaged.npz: entry "x.npy": is damaged: its CRC-32 is ')


# Images


def test_an_image_whose_header_gives_a_huge_size_is_refused_before_it_is_decoded(tmp_path: Path) -> None:
    huge = {"cat/a.png": fake_png(1, 1), "cat/b.png": png_header(100_000, 100_000)}
    (tmp_path / "huge.zip").write_bytes(zip_of(huge))
    out = run_js(f"""
const archive = bytes({js(str(tmp_path / "huge.zip"))});
out.error = await failure(() => data.imagesFromZip(archive, "huge.zip", {{ decode, color: "rgb" }}));
out.decoded = decoded;
""")
    message = 'huge.zip: entry "cat/b.png": is 100000x100000 pixels by its header, larger than an image may be'
    assert out["error"]["message"].startswith(message), out["error"]
    assert out["decoded"] == ["cat/a.png"]


def test_a_resize_to_a_huge_size_is_refused_before_anything_is_decoded() -> None:
    out = run_js(f"""
const files = [{{ path: "set/cat/a.png", bytes: new Uint8Array({js(list(fake_png(1, 1)))}) }}];
const size = {{ height: 100000, width: 100000 }};
out.error = await failure(() => data.imagesFromFiles(files, "set", {{ decode, color: "rgb", size }}));
out.decoded = decoded;
""")
    error = out["error"]
    assert error["name"] == "DataError" and out["decoded"] == []
    assert error["message"].startswith("set: 1 examples of 30,000,000,000 values (images of 100000x100000 pixels, RGB)")
    assert "more than the budget of 512 MiB" in error["message"]


def test_arrays_over_the_data_budget_are_refused_before_they_are_converted(tmp_path: Path) -> None:
    (tmp_path / "a.npz").write_bytes(zip_of({"x.npy": npy(np.zeros((50, 10))), "y.npy": npy(np.zeros(50, "<i4"))}))
    out = run_js(f"""
const budget = {{ bytes: 2000, how: "a budget set by this test" }};
out.error = await failure(() => data.datasetFromNpz(bytes({js(str(tmp_path / "a.npz"))}), "a.npz", {{ budget }}));
""")
    assert out["error"]["message"] == (
        'a.npz: entry "x.npy": 50 examples of 10 values (arrays of shape (10)) take 2,200 bytes as float32, more '
        "than the budget of 2,000 bytes (a budget set by this test): use fewer rows, columns or pixels"
    )


# The target column, by name


def test_a_target_named_is_taken_by_name_or_the_last_column_when_the_file_lacks_it() -> None:
    diabetes = "age,bmi,progression\n50,30,151\n40,25,75\n"
    other = "x,y,label\n1,2,a\n3,4,b\n"
    out = run_js(f"""
const read = (text, target) => data.parseCsv(text, "t.csv", {{ target, ifTargetAbsent: "last" }});
out.named = (await read({js(diabetes)}, "progression")).source;
out.absent = (await read({js(other)}, "progression")).source;
out.refused = await failure(() => data.parseCsv({js(other)}, "t.csv", {{ target: "progression" }}));
""")
    assert (out["named"]["target"], out["named"]["targetChosen"]) == ("progression", "named")
    assert (out["absent"]["target"], out["absent"]["targetChosen"], out["absent"]["asked"]) == (
        "label",
        "fallback",
        "progression",
    )
    assert out["refused"]["message"].startswith('t.csv: has no column named "progression"')


def test_a_field_longer_than_a_cell_may_be_is_refused_as_it_is_read() -> None:
    out = run_js("""
const long = Array.from({ length: 40 }, () => new Uint8Array(65536).fill(120));
const chunks = [new TextEncoder().encode("a,b\\n1,\\""), ...long];
out.error = await failure(() => data.parseCsvStream(chunks, "long.csv"));
""")
    assert out["error"]["message"] == (
        'long.csv: row 2, column B ("b"): a field holds more than 1,048,576 characters, more than a table\'s cell may'
    )


USERDATA = (ROOT / "app" / "src" / "userdata.js").as_uri()
MODEL = (ROOT / "app" / "src" / "userdatamodel.js").as_uri()


def test_a_file_read_whole_that_outgrows_the_budget_is_refused_before_it_is_read() -> None:
    out = run_node(
        f'import {{ importFiles }} from "{USERDATA}";\nimport {{ KeptData }} from "{MODEL}";\n',
        """
const out = {};
const read = [];
const huge = (name) => ({ name, size: 3e9, arrayBuffer: async () => { read.push(name); return new ArrayBuffer(8); } });
const settings = { csv: {}, npy: {}, images: { color: "gray", size: null }, split: { fraction: 0.2, seed: 0 } };
for (const name of ["big.npz", "big.zip"]) {
  try { await importFiles(new KeptData(), [huge(name)], settings, () => {}); } catch (error) {
    out[name] = { name: error.name, message: error.message };
  }
}
out.read = read;
""",
        timeout=60,
    )
    assert out["read"] == []
    for name in ("big.npz", "big.zip"):
        assert out[name]["name"] == "DataError"
        assert out[name]["message"].startswith(f"{name}: takes 2.8 GiB, more than the 1 GiB a file read whole may")


def test_an_image_file_of_a_folder_larger_than_the_budget_is_refused_before_it_is_read() -> None:
    out = run_js("""
const read = [];
const file = (path, size) => ({ path, size, arrayBuffer: async () => { read.push(path); return new ArrayBuffer(8); } });
const files = [file("set/cat/a.png", 2000), file("set/dog/b.png", 10)];
const budget = { bytes: 1000, how: "a budget set by this test" };
out.error = await failure(() => data.imagesFromFiles(files, "set", { decode, color: "gray", budget }));
out.read = read;
""")
    assert out["read"] == []
    assert out["error"]["message"] == (
        'set: entry "set/cat/a.png": takes 2,000 bytes, more than an image file may (the 1,000 bytes of the data set: '
        "a budget set by this test)"
    )
