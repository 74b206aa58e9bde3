"""The Data card in Chromium, on the page's device (WebGPU on SwiftShader, and the CPU path): a CSV is
dropped, its target column chosen, the digits MLP refused for it by name and a starter program trained to
accuracy on it; a ZIP of images (one folder per class) is dropped, shown as thumbnails and trained on; an
.npz is picked; malformed files are named with their row or entry while the data chosen before stays
chosen; the characters data set trains the character transformer's plan. Screenshots of the card go to
e2e/artifacts/."""

from __future__ import annotations

import base64
import io
import struct
import zipfile
import zlib
from pathlib import Path

import numpy as np
from appdriver import RUN_MS, LoadedApp, start_over
from playwright.sync_api import Page

ARTIFACTS = Path(__file__).resolve().parent / "artifacts"


def png(pixels: list[list[int]]) -> bytes:
    """A grayscale 8-bit PNG of rows of 0..255 values."""
    raw = b"".join(b"\x00" + bytes(row) for row in pixels)

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", len(pixels[0]), len(pixels), 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")


def stripes_zip(per_class: int = 40) -> bytes:
    """10x10 images in shapes/horizontal and shapes/vertical: stripes, each image shifted and noised (100
    values: the digits MLP, which takes 64, does not fit them)."""
    rng = np.random.default_rng(3)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for cls in ("horizontal", "vertical"):
            for i in range(per_class):
                phase = i % 2
                grid = [
                    [255 if ((r if cls == "horizontal" else c) + phase) % 2 else 0 for c in range(10)]
                    for r in range(10)
                ]
                noisy = [[int(np.clip(v + rng.integers(-40, 41), 0, 255)) for v in row] for row in grid]
                archive.writestr(f"shapes/{cls}/{i:03d}.png", png(noisy))
    return out.getvalue()


def blobs_csv(rows: int = 300) -> str:
    """Two numeric columns, a categorical one, then the class: near (-1, -1) for 'low', (1, 1) for 'high'."""
    rng = np.random.default_rng(7)
    lines = ["width,height,colour,size"]
    for i in range(rows):
        label = ("low", "high")[i % 2]
        centre = -1 if label == "low" else 1
        w, h = rng.normal(centre, 0.4, 2)
        lines.append(f"{w:.4f},{h:.4f},{('red', 'blue', 'green')[i % 3]},{label}")
    return "\n".join(lines) + "\n"


def drop(page: Page, files: list[tuple[str, bytes]]) -> None:
    """Files dropped on the Data card, as a user drags them from the desktop."""
    payload = [{"name": name, "data": base64.b64encode(data).decode()} for name, data in files]
    page.evaluate(
        """(files) => {
        const transfer = new DataTransfer();
        for (const { name, data } of files) {
          const bytes = Uint8Array.from(atob(data), (c) => c.charCodeAt(0));
          transfer.items.add(new File([bytes], name));
        }
        const target = document.getElementById('data-drop');
        target.dispatchEvent(new DragEvent('dragover', { dataTransfer: transfer, bubbles: true, cancelable: true }));
        target.dispatchEvent(new DragEvent('drop', { dataTransfer: transfer, bubbles: true, cancelable: true }));
        }""",
        payload,
    )


def wait_read(page: Page) -> str:
    page.wait_for_selector("#data[data-state=read], #data[data-state=error]")
    page.wait_for_function("() => !document.getElementById('data').hasAttribute('aria-busy')")
    return page.get_attribute("#data", "data-state") or ""


def facts(page: Page) -> dict[str, str]:
    return page.evaluate(
        """() => Object.fromEntries([...document.querySelectorAll('#data-facts dt')]
            .map((dt) => [dt.textContent, dt.nextElementSibling.textContent]))"""
    )


def plan_state(page: Page) -> str:
    """The plan panel once it has answered: the verdict's colour, "unfit" or "error"."""
    page.wait_for_selector(", ".join(f"#plan[data-state={s}]" for s in ("shown", "unfit", "error")))
    shown = page.get_attribute("#plan", "data-state")
    return page.get_attribute("#plan", "data-verdict") if shown == "shown" else shown  # type: ignore[return-value]


def train_to_end(page: Page, epochs: int) -> dict:
    page.fill("#train-epochs", str(epochs))
    page.click("#train-button")
    page.wait_for_selector(
        "#train[data-state=done], #train[data-state=error], #train[data-state=refused]", timeout=RUN_MS
    )
    return {
        "state": page.get_attribute("#train", "data-state"),
        "status": page.inner_text("#train-status"),
        "accuracy": page.get_attribute("#train", "data-accuracy"),
    }


def screenshot(page: Page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.locator("#data").screenshot(path=str(ARTIFACTS / f"data-{name}.png"))


# The Import options as a first visit has them (the fields this module's tests change).
DEFAULT_OPTIONS = {"#data-csv-header": "auto", "#data-csv-target": "", "#data-csv-labels": "auto", "#data-color": "rgb"}


def import_options(page: Page, chosen: dict[str, str] | None = None) -> None:
    """The Import options shown, and as a first visit has them but for `chosen` (select -> value)."""
    if page.get_attribute("#data-options", "open") is None:
        page.click("#data-options summary")
    for select, value in {**DEFAULT_OPTIONS, **(chosen or {})}.items():
        page.select_option(select, value)
    page.set_checked("#data-stream", False)


def use_starter(page: Page) -> None:
    """The plan refuses the program for the data and offers a starter program; it is taken."""
    assert plan_state(page) == "unfit"
    page.get_by_role("button", name="Replace the program with a starter program").click()
    page.wait_for_function("() => document.getElementById('plan').dataset.state !== 'unfit'")
    assert plan_state(page) == "green", page.inner_text("#plan")


def test_a_dropped_csv_trains_a_starter_program(loaded: LoadedApp) -> None:
    page = loaded.page
    start_over(page, "debug")
    import_options(page)
    assert plan_state(page) == "green"
    assert facts(page)["Data set"] == "digits (this site)"
    drop(page, [("shapes.csv", blobs_csv().encode())])
    assert wait_read(page) == "read", page.inner_text("#data-error")
    seen = facts(page)
    assert seen["Read from"] == "shapes.csv: a CSV table"
    assert seen["Examples"] == "300" and seen["One example"] == "[5] float32"  # 2 numbers, 3 colours one-hot
    assert seen["Target column"] == "size (the last column)" and seen["Classes (2)"] == "high (150), low (150)"
    assert seen["Split"] == "240 training, 60 held out (fraction 0.2, seed 0)"
    assert seen["Data set version"].startswith("sha256:") and seen["train split"].endswith("(240 examples)")
    assert page.is_checked("#data-user-choice")
    header = page.locator("#data-preview th").all_inner_texts()
    assert header == ["width", "height", "colour", "size"]
    # the digits MLP wants 64 pixels: refused by name, with the fix offered
    assert plan_state(page) == "unfit"
    message = page.inner_text("#plan-message")
    assert "input 'pixels' takes examples of shape [64] (64 values); the data's examples have shape [5]" in message
    assert page.get_by_role("button", name="Train on this site's digits instead").is_visible()
    screenshot(page, "csv")
    use_starter(page)
    done = train_to_end(page, 3)
    assert done["state"] == "done", done["status"]
    assert float(done["accuracy"] or 0) >= 0.95
    rerun_on_the_same_csv(loaded, share_link(page))
    # another target column, read in chunks: the colour is now the class
    page.select_option("#data-csv-target", label="colour")
    page.check("#data-stream")
    page.evaluate("() => delete document.getElementById('data').dataset.state")
    page.click("#data-reread")
    assert wait_read(page) == "read"
    seen = facts(page)
    assert seen["Target column"] == "colour (as chosen)"
    assert seen["Classes (3)"] == "blue (100), green (100), red (100)"
    assert (
        seen["Read from"] == "shapes.csv: a CSV table, read in chunks" and seen["One example"] == "[4] float32"
    )  # 2 numbers, 2 sizes one-hot


def share_link(page: Page) -> str:
    page.click("#run-link")
    page.wait_for_function("() => document.getElementById('run-link-text').value.includes('#run=')")
    return page.input_value("#run-link-text")


def rerun_on_the_same_csv(loaded: LoadedApp, link: str) -> None:
    """The run's share link, opened in a new page: the same CSV dropped there re-runs to the pinned key."""
    shared = loaded.context.new_page()
    try:
        shared.goto(link)
        shared.wait_for_selector("#shared[data-state=asking]")
        drop(shared, [("shapes.csv", blobs_csv().encode())])
        assert wait_read(shared) == "read"
        shared.click("#shared-chosen-data")
        ends = ("verified", "mismatch", "different", "error")
        shared.wait_for_selector(", ".join(f"#shared[data-state={s}]" for s in ends), timeout=RUN_MS)
        assert shared.get_attribute("#shared", "data-state") == "verified", shared.inner_text("#shared")
    finally:
        shared.close()


def test_a_dropped_image_zip_shows_thumbnails_and_trains(loaded: LoadedApp) -> None:
    page = loaded.page
    start_over(page, "debug")
    import_options(page, {"#data-color": "gray"})
    drop(page, [("shapes.zip", stripes_zip())])
    assert wait_read(page) == "read", page.inner_text("#data-error")
    seen = facts(page)
    assert seen["Read from"] == "shapes.zip: a ZIP of images" and seen["One example"] == "[10, 10, 1] float32"
    assert seen["Classes (2)"] == "horizontal (40), vertical (40)"
    labels = page.locator("#data-thumbs figcaption").all_inner_texts()
    assert len(labels) == 8 and set(labels) == {"horizontal", "vertical"}
    screenshot(page, "images")
    use_starter(page)
    done = train_to_end(page, 4)
    assert done["state"] == "done", done["status"]
    assert float(done["accuracy"] or 0) >= 0.9


def test_malformed_files_are_named_and_the_data_chosen_stays(loaded: LoadedApp) -> None:
    page = loaded.page
    import_options(page)
    drop(page, [("shapes.csv", blobs_csv().encode())])  # the user's own data chosen: it stays chosen
    assert wait_read(page) == "read", page.inner_text("#data-error")
    before = facts(page)["Read from"]
    cases = [
        ("broken.csv", b"a,b,label\n1,2,x\n3,,y\n", "broken.csv: row 3, column B"),
        ("photos.zip", b"not a zip at all", "photos.zip: is not a readable ZIP archive"),
        ("x.npy", b"\x93NUMPY", "x.npy: cannot be read: one .npy holds either the features or the labels"),
        ("notes.docx", b"PK", "notes.docx: cannot be read: it is not a CSV"),
    ]
    for name, data, message in cases:
        drop(page, [(name, data)])
        assert wait_read(page) == "error"
        error = page.inner_text("#data-error")
        assert message in error and error.endswith(f"Still training on {before.split(':')[0]}."), error
        assert facts(page)["Read from"] == before
    screenshot(page, "error")


def test_a_picked_npz_and_the_characters(loaded: LoadedApp, tmp_path: Path) -> None:
    page = loaded.page
    import_options(page)
    path = tmp_path / "points.npz"
    rng = np.random.default_rng(1)
    np.savez(path, x=rng.normal(size=(50, 3, 2)).astype(np.float32), y=np.arange(50) % 5)
    page.set_input_files("#data-files", str(path))
    assert wait_read(page) == "read", page.inner_text("#data-error")
    seen = facts(page)
    assert seen["One example"] == "[3, 2] float32" and seen["Classes (5)"].startswith("0 (10), 1 (10)")
    page.check("input[name=data-source][value=chars]")
    page.wait_for_function("() => document.querySelector('#data-facts dd').textContent.includes('Zen of Python')")
    assert facts(page)["One example"] == "[16] int32 (character indices)"


def drop_and_read(page: Page, files: list[tuple[str, bytes]]) -> str:
    """The files dropped and read: the card's state from before is cleared first, so the state waited on
    is this drop's ("read" or "error")."""
    page.evaluate("() => delete document.getElementById('data').dataset.state")
    drop(page, files)
    return wait_read(page)


def table(header: str, rows: int, seed: int) -> bytes:
    """Numeric columns named by `header` (comma-separated), `rows` rows of small whole numbers."""
    rng = np.random.default_rng(seed)
    width = len(header.split(","))
    lines = [header, *(",".join(str(v) for v in rng.integers(0, 90, width)) for _ in range(rows))]
    return ("\n".join(lines) + "\n").encode()


def test_the_target_goes_by_name_to_the_next_csv_or_the_card_says_it_took_the_last(loaded: LoadedApp) -> None:
    page = loaded.page
    import_options(page)
    assert drop_and_read(page, [("diabetes.csv", table("age,sex,bmi,progression", 40, 1))]) == "read"
    assert facts(page)["Target column"] == "progression (the last column)"
    # 32 training rows of 3 features, compared with the one buffer the device runs use holds
    assert facts(page)["On the device"].startswith("the training split's features take 384 bytes, within the ")
    page.select_option("#data-csv-target", label="bmi")
    page.evaluate("() => delete document.getElementById('data').dataset.state")
    page.click("#data-reread")
    assert wait_read(page) == "read", page.inner_text("#data-error")
    assert facts(page)["Target column"] == "bmi (as chosen)"
    # another table, bmi at another index: still bmi, by name
    assert drop_and_read(page, [("pima.csv", table("bmi,age,glucose,outcome", 40, 2))]) == "read"
    seen = facts(page)
    assert seen["Read from"] == "pima.csv: a CSV table" and seen["Target column"] == "bmi (as chosen)"
    assert page.input_value("#data-csv-target") == "bmi"
    # a table without bmi: its last column, said so, and the chooser back on "the last"
    assert drop_and_read(page, [("points.csv", table("x,y,label", 40, 3))]) == "read"
    said = 'label (the last column: the target chosen before, "bmi", is not in this file)'
    assert facts(page)["Target column"] == said
    assert page.get_attribute("#data", "data-target") == "label" and page.input_value("#data-csv-target") == ""


def zip_bomb() -> bytes:
    """A ZIP of one PNG entry whose 10 MB of deflated zeros declare 3,000,000,000 bytes."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("cat/a.png", png([[0]]) + bytes(10_000_000))
    data = bytearray(out.getvalue())
    for signature, at in ((b"PK\x03\x04", 22), (b"PK\x01\x02", 24)):
        start = data.find(signature)
        data[start + at : start + at + 4] = struct.pack("<I", 3_000_000_000)
    return bytes(data)


def test_files_over_the_limits_are_refused_in_the_card_and_the_app_keeps_working(loaded: LoadedApp) -> None:
    page = loaded.page
    start_over(page, "debug")
    import_options(page)
    before = facts(page)["Data set"]
    wide = ",".join([*(f"t{c}" for c in range(200)), "y"])
    rows = [",".join([*(f"v{r}" for _ in range(200)), str(r % 2)]) for r in range(1000)]
    cases = [
        ("bomb.zip", zip_bomb(), 'bomb.zip: entry "cat/a.png": declares 3,000,000,000 bytes, more than'),
        ("cats.csv", ("\n".join([wide, *rows]) + "\n").encode(), "wider than the 65,536 values it may hold"),
        ("huge.zip", huge_png_zip(), "is 100000x100000 pixels by its header, larger than an image may be"),
    ]
    for name, data, message in cases:
        assert drop_and_read(page, [(name, data)]) == "error"
        error = page.inner_text("#data-error")
        assert message in error and error.endswith(f"Still training on {before}."), error
        assert facts(page)["Data set"] == before
    screenshot(page, "limits")
    assert drop_and_read(page, [("shapes.csv", blobs_csv().encode())]) == "read"
    assert facts(page)["Read from"] == "shapes.csv: a CSV table"


def huge_png_zip() -> bytes:
    """A ZIP of one class folder whose second PNG's header says 100000 x 100000 pixels."""
    header = png([[0]])[:33]
    huge = header[:16] + struct.pack(">II", 100_000, 100_000) + header[24:]
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("cat/a.png", png([[0]]))
        archive.writestr("cat/b.png", huge + bytes(100))
    return out.getvalue()
