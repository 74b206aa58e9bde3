"""Indices in the data against the program's tables (datafit): every split's token indices are compared with
each embedding table they index, and every split's labels with the classes, each refusal naming the split,
the example, the index and the table's size; a starter program's table holds the indices of every split;
the page's calls (app.py) refuse such data before planning, and give the starter its table from all splits;
the token example fits every split of its data."""

from __future__ import annotations

import asyncio
import json
import struct

from scellis.app import DataMismatch, data_json, plan_example, starter_json
from scellis.datafit import fit_problems, starter_program, vocabulary
from scellis.datasets import DataInfo, Split, read_chars, zen_of_python
from scellis.examples import char_transformer
from scellis.pipeline import compile_program

TOKENS = DataInfo("tokens.npz", (4,), "int32", "int32", ("a", "b", "c"))


def split(tokens: list[int], labels: list[int]) -> Split:
    return Split(struct.pack(f"<{len(tokens)}i", *tokens), struct.pack(f"<{len(labels)}i", *labels), 4)


TRAIN = split([0, 1, 2, 3, 4, 5, 6, 7, 1, 1, 1, 1], [0, 1, 2])  # largest token 7


def problems(splits: dict[str, Split], vocab: int = 8) -> list[str]:
    program = starter_program(TOKENS, vocab)
    return fit_problems(program, compile_program(program), TOKENS, splits)


def test_indices_within_every_split_fit() -> None:
    assert problems({"train": TRAIN, "validation": split([7, 0, 0, 0], [2]), "test": split([3] * 8, [1, 0])}) == []


def test_a_validation_index_past_the_table_is_refused_with_split_row_index_and_size() -> None:
    found = problems({"train": TRAIN, "validation": split([0, 0, 0, 0, 1, 2, 9, 3, 8, 0, 0, 0], [0, 1, 2])})
    assert found == [
        "the validation split's example 1 holds token index 9 (at position 2 of input 'features'); the "
        "embedding 'embed' has 8 rows (indices 0 to 7); 2 of the split's 12 indices lie outside"
    ]


def test_a_negative_test_index_is_refused() -> None:
    [found] = problems({"train": TRAIN, "test": split([0, -3, 0, 0], [0])})
    assert found.startswith("the test split's example 0 holds token index -3 (at position 1 of input 'features')")


def test_a_label_past_the_classes_is_refused_in_any_split() -> None:
    [found] = problems({"train": TRAIN, "test": split([0] * 8, [1, 3])})
    assert found == (
        "the test split's example 1 has label 3; the program tells 3 classes apart (labels 0 to 2, input 'label')"
    )


def test_the_starter_table_holds_the_indices_of_every_split() -> None:
    splits = {"train": TRAIN, "test": split([0, 0, 11, 0], [0])}
    assert vocabulary(TOKENS, splits) == 12
    program = starter_program(TOKENS, vocabulary(TOKENS, splits))
    assert fit_problems(program, compile_program(program), TOKENS, splits) == []


def user_files(test_tokens: list[int]) -> dict[str, bytes]:
    info = {**TOKENS.to_json(), "name": "tokens"}
    train, test = TRAIN, split(test_tokens, [0] * (len(test_tokens) // 4))
    return {
        "dataset.json": json.dumps(info).encode(),
        "train-x": train.features,
        "train-y": train.labels,
        "test-x": test.features,
        "test-y": test.labels,
    }


def test_the_page_sizes_its_starter_from_every_split_and_refuses_a_program_too_small() -> None:
    files = user_files([0, 0, 0, 0, 1, 13, 0, 0])
    program = json.loads(starter_json("user", files))
    [embed] = [n for n in program["nodes"] if n["op"] == "embedding"]
    assert embed["params"]["num_embeddings"] == 14
    assert json.loads(data_json("user", files))["vocab"] == 14
    small = json.dumps(starter_program(TOKENS, 8))
    unfit = json.loads(asyncio.run(plan_example("user", files, small, "cpu", "debug", cap=None)))["unfit"]
    assert unfit["problems"] == [
        "the test split's example 1 holds token index 13 (at position 1 of input 'features'); the embedding "
        "'embed' has 8 rows (indices 0 to 7)"
    ]
    assert issubclass(DataMismatch, ValueError)


def test_the_token_example_fits_every_split_of_its_data() -> None:
    train, test, alphabet = read_chars(zen_of_python())
    program = char_transformer()
    info = DataInfo("chars", (16,), "int32", "int32", tuple(alphabet))
    assert fit_problems(program, compile_program(program), info, {"train": train, "test": test}) == []
    small = char_transformer(vocab=30)
    found = fit_problems(small, compile_program(small), info, {"test": test})
    assert any(line.startswith("the test split's example ") for line in found)
