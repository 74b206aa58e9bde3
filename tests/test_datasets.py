"""Next-character windows of a text: indices into the sorted alphabet, the following character as the
label, the fixed held-out split; and the Zen of Python the character transformer example is sized for."""

from __future__ import annotations

import math
import struct
from collections.abc import Callable

import pytest

from scellis.datasets import CHARS_CONTEXT, digits_csv, from_files, read_chars, read_digits, to_files, zen_of_python
from scellis.examples import char_transformer


def ints(data: bytes) -> list[int]:
    return list(struct.unpack(f"<{len(data) // 4}i", data))


def test_windows_are_indices_labelled_by_the_next_character() -> None:
    text = "abcabbcaab"  # windows of 3: 7 of them, the fifth (i = 4) held out
    train, test, alphabet = read_chars(text, context=3)
    assert alphabet == "abc"
    assert (train.n, test.n, train.width, test.width) == (6, 1, 3, 3)
    assert ints(test.features) == [1, 1, 2] and ints(test.labels) == [0]  # "bbc" -> "a"
    assert ints(train.features)[:6] == [0, 1, 2, 1, 2, 0] and ints(train.labels)[:2] == [0, 1]
    x, y = train.rows([5, 0])  # i = 6 ("caa" -> "b") and i = 0 ("abc" -> "a")
    assert ints(x) == [2, 0, 0, 0, 1, 2] and ints(y) == [1, 0]


def test_a_text_no_longer_than_the_window_has_no_examples() -> None:
    train, test, _ = read_chars("abc", context=3)
    assert train.n == test.n == 0


def test_the_zen_of_python_fits_the_example(capsys: pytest.CaptureFixture[str]) -> None:
    text = zen_of_python()
    assert text.startswith("the zen of python, by tim peters\n") and text == text.lower()
    train, test, alphabet = read_chars(text)
    assert len(alphabet) == 32 and train.n + test.n == len(text) - CHARS_CONTEXT
    assert test.n == (len(text) - CHARS_CONTEXT) // 5
    program = char_transformer()
    embed = next(n for n in program["nodes"] if n["id"] == "embed")
    context = next(n for n in program["nodes"] if n["id"] == "context")
    assert embed["params"]["num_embeddings"] == len(alphabet)
    assert context["params"]["shape"] == [CHARS_CONTEXT]
    assert zen_of_python() == text
    assert capsys.readouterr().out == ""  # importing `this` prints the text: not into the caller's output


def splice(data: bytes, at: int, new: bytes) -> bytes:
    return data[:at] + new + data[at + len(new) :]


def _files() -> dict[str, bytes]:
    return to_files(*read_digits(digits_csv().read_bytes()))


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (lambda f: f.pop("digits-test-y.i32"), "the data files lack digits-test-y.i32 (the four are "),
        (
            lambda f: f.update({"digits-train-x.f32": f["digits-train-x.f32"][:-4]}),
            "digits-train-x.f32: 368,124 bytes is not a whole number (one or more) of examples of 64 float32",
        ),
        (lambda f: f.update({"digits-test-x.f32": b""}), "digits-test-x.f32: 0 bytes is not a whole number"),
        (
            lambda f: f.update({"digits-train-y.i32": f["digits-train-y.i32"][:-2]}),
            "digits-train-y.i32: 5,750 bytes is not a whole number of int32 labels",
        ),
        (
            lambda f: f.update({"digits-test-y.i32": f["digits-test-y.i32"][:-4]}),
            "digits-test-x.f32 holds 359 examples but digits-test-y.i32 holds 358 labels",
        ),
        (
            lambda f: f.update({"digits-train-y.i32": splice(f["digits-train-y.i32"], 20, struct.pack("<i", 10))}),
            "digits-train-y.i32: example 5's label is 10, not a class from 0 to 9",
        ),
        (
            lambda f: f.update({"digits-test-x.f32": splice(f["digits-test-x.f32"], 260, struct.pack("<f", math.nan))}),
            "digits-test-x.f32: example 1, pixel 1 is nan, not a finite number",
        ),
    ],
    ids=["missing", "cut pixels", "empty", "cut labels", "counts", "label", "nan"],
)
def test_data_files_that_are_wrong_are_named(change: Callable[[dict], object], said: str) -> None:
    files = _files()
    change(files)
    with pytest.raises(ValueError) as refused:
        from_files(files)
    assert str(refused.value).startswith(said), str(refused.value)


def test_the_data_files_read_back_as_the_digits() -> None:
    train, test = read_digits(digits_csv().read_bytes())
    assert from_files(_files()) == (train, test)
