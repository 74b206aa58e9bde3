"""Code points through each step of the BERT normaliser and through the pre-tokeniser, ours against Hugging Face
`tokenizers`: the character classes of scellis.text.unicode are its own. Checked: every code point below
U+3400 (the alphabets, their marks and punctuation), the first and last of every range in the tables and their
neighbours (where a class changes), and a seeded sample of the rest; tests/fixtures/bert_unicode.py reads every
code point off `tokenizers` when it writes the tables. Code points go through in batches joined by '|' (ASCII
punctuation, which no step changes), and a batch that differs is compared code point by code point to name them."""

from __future__ import annotations

import random

import pytest
from tokenizers import normalizers, pre_tokenizers

from scellis.text import unicode
from scellis.text.wordpiece import Normalizer, words
from tests.fixtures.bert_unicode import CODE_POINTS

FLAGS = ("clean_text", "handle_chinese_chars", "strip_accents", "lowercase")
EDGES = {
    cp + d
    for table in (unicode.CONTROL, unicode.SPACE, unicode.MARK, unicode.PUNCTUATION)
    for span in table
    for cp in span
    for d in (-1, 0, 1)
}
CHECKED = sorted({*range(0x3400), *EDGES, *random.Random(20261202).sample(CODE_POINTS, 30_000)} & {*CODE_POINTS})
BATCHES = [CHECKED[i : i + 4096] for i in range(0, len(CHECKED), 4096)]


@pytest.mark.parametrize("flag", FLAGS)
def test_each_normaliser_step_matches_hugging_face_code_point_by_code_point(flag: str) -> None:
    ours = Normalizer(*(f == flag for f in FLAGS))
    theirs = normalizers.BertNormalizer(**{f: f == flag for f in FLAGS})
    wrong = []
    for batch in BATCHES:
        text = "|".join(map(chr, batch))
        if ours(text) != theirs.normalize_str(text):
            wrong += [f"U+{cp:04X}" for cp in batch if ours(chr(cp)) != theirs.normalize_str(chr(cp))]
    assert wrong == []


def test_the_pre_tokeniser_splits_code_points_as_hugging_face_does() -> None:
    theirs = pre_tokenizers.BertPreTokenizer()

    def both(text: str) -> tuple[list[str], list[str]]:
        return words(text), [w for w, _ in theirs.pre_tokenize_str(text)]

    wrong = []
    for batch in BATCHES:
        ours, reference = both("|".join(f"x{chr(cp)}x" for cp in batch))
        if ours != reference:
            wrong += [f"U+{cp:04X}" for cp in batch if len(set(map(tuple, both(f"x{chr(cp)}x")))) > 1]
    assert wrong == []
