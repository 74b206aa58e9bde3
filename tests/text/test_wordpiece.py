"""The WordPiece tokenizer against Hugging Face `tokenizers` on the bundled MiniLM tokenizer: id for id,
type id for type id, mask for mask, on edge cases and random text; and tokenizer.json it refuses by name."""

from __future__ import annotations

import copy
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer

from scellis.text import TokenizerError, WordPiece
from tests.fixtures.minilm import minilm_file
from tests.fixtures.texts import EDGE_CASES

TEXT = minilm_file("tokenizer.json").decode("utf-8")
SPEC = json.loads(TEXT)

LENGTHS = (2, 8, 32, 128)


@pytest.fixture(scope="module")
def ours() -> WordPiece:
    return WordPiece.from_json(SPEC)


@pytest.fixture(scope="module")
def theirs() -> Tokenizer:
    return Tokenizer.from_str(TEXT)


def reference(tokenizer: Tokenizer, text: str, length: int) -> tuple[list[int], list[int], list[int]]:
    tokenizer.enable_truncation(max_length=length)
    tokenizer.enable_padding(length=length, pad_id=0, pad_token="[PAD]")
    out = tokenizer.encode(text)
    return out.ids, out.type_ids, out.attention_mask


def check(ours: WordPiece, theirs: Tokenizer, text: str, length: int) -> None:
    encoded = ours.encode(text, length)
    ids, type_ids, mask = reference(theirs, text, length)
    assert list(encoded.ids) == ids, (text, length)
    assert list(encoded.type_ids) == type_ids
    assert list(encoded.mask) == mask
    assert [ours.id_of(t) if t in ours.vocab else None for t in encoded.tokens] == [
        i if encoded.tokens[k] in ours.vocab else None for k, i in enumerate(ids)
    ]


@pytest.mark.parametrize("length", LENGTHS)
@pytest.mark.parametrize("text", EDGE_CASES, ids=range(len(EDGE_CASES)))
def test_edge_cases_match_hugging_face(ours: WordPiece, theirs: Tokenizer, text: str, length: int) -> None:
    check(ours, theirs, text, length)


OURS, THEIRS = WordPiece.from_json(SPEC), Tokenizer.from_str(TEXT)  # for hypothesis: made once, not per example
PIECES = [
    "[MASK]",
    "[CLS",
    "SEP]",
    " ",
    "\t",
    "\n",
    "\u00a0",
    "\u0301",
    "Σ",
    "İ",
    "中",
    "😀",
    "\x00",
    "##",
    "un",
    "aff",
    "able",
]


@settings(max_examples=400, deadline=None)
@given(st.text(max_size=80))
def test_random_text_matches_hugging_face(text: str) -> None:
    check(OURS, THEIRS, text, 64)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(PIECES) | st.text(max_size=6), max_size=30).map("".join))
def test_random_mixes_of_hard_pieces_match_hugging_face(text: str) -> None:
    check(OURS, THEIRS, text, 48)


def test_tokens_stop_where_asked_and_mark_continued_words(ours: WordPiece) -> None:
    assert ours.tokens("unaffable runnings") == ["una", "##ffa", "##ble", "running", "##s"]
    assert ours.tokens("one two three four", limit=2) == ["one", "two"]
    encoded = ours.encode("one two", 6)
    assert encoded.tokens == ("[CLS]", "one", "two", "[SEP]", "[PAD]", "[PAD]")
    assert encoded.used == 4
    assert ours.default_length == 128


@pytest.mark.parametrize("length", [1, 0, -3, 2.5, True, "8"])
def test_a_length_without_room_for_the_special_tokens_is_refused(ours: WordPiece, length: object) -> None:
    with pytest.raises(TokenizerError, match="length"):
        ours.encode("hi", length)  # type: ignore[arg-type]


def test_only_strings_are_encoded(ours: WordPiece) -> None:
    with pytest.raises(TokenizerError, match="string, got bytes"):
        ours.encode(b"hi", 8)  # type: ignore[arg-type]


def _edit(path: str, value: object) -> dict:
    spec = copy.deepcopy(SPEC)
    *parents, last = path.split(".")
    part = spec
    for key in parents:
        part = part[key] if not key.isdigit() else part[int(key)]
    if value is KeyError:
        del part[last]
    else:
        part[last if not last.isdigit() else int(last)] = value
    return spec


@pytest.mark.parametrize(
    ("path", "value", "named"),
    [
        ("model.type", "BPE", "model.type"),
        ("normalizer.type", "NFKC", "normalizer.type"),
        ("normalizer", None, "normalizer must be an object"),
        ("pre_tokenizer.type", "Whitespace", "pre_tokenizer.type"),
        ("post_processor.type", "RobertaProcessing", "post_processor.type"),
        ("post_processor.single", [], "post_processor.single"),
        ("model.vocab", {}, "model.vocab"),
        ("model.vocab.hello", -1, "model.vocab['hello']"),
        ("model.unk_token", "<unk>", "model.unk_token"),
        ("model.max_input_chars_per_word", 0, "max_input_chars_per_word"),
        ("normalizer.lowercase", "yes", "normalizer.lowercase"),
        ("normalizer.strip_accents", 1, "normalizer.strip_accents"),
        ("added_tokens.0.normalized", True, "added_tokens[0]"),
        ("added_tokens.0.id", "zero", "added_tokens[0].id"),
        ("added_tokens", {}, "added_tokens must be a list"),
        ("post_processor.special_tokens.[CLS].ids", [101, 102], "[CLS]"),
    ],
)
def test_what_cannot_be_mapped_is_refused_by_name(path: str, value: object, named: str) -> None:
    with pytest.raises(TokenizerError, match=named.replace("[", r"\[").replace("]", r"\]").replace(".", r"\.")):
        WordPiece.from_json(_edit(path, value))


def test_not_an_object_is_refused() -> None:
    with pytest.raises(TokenizerError, match="JSON object, got list"):
        WordPiece.from_json([])
