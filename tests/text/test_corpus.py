"""Labelled text tables: CSVs read and refused by name, the seeded split, and the SpamAssassin corpus as the
app ships it, tokenized as Hugging Face `tokenizers` does, mail for mail."""

from __future__ import annotations

import codecs
import json
from pathlib import Path

import pytest
from tokenizers import Tokenizer

from scellis.text import WordPiece
from scellis.text.corpus import CORPUS_CHARS, TextTableError, read_text_csv, spam_assassin_csv, split
from scellis.text.mail import mail_text
from tests.fixtures.minilm import minilm_file

CORPUS = Path(__file__).resolve().parents[2] / "node_modules" / "@stdlib" / "datasets-spam-assassin" / "data"


def test_reads_texts_and_labels_with_quoting() -> None:
    raw = b'id,text,label\n1,"Hello, world",spam\n2,"two\nlines and ""quotes""",ham\n\n3,plain, ham \n'
    table = read_text_csv(raw)
    assert table.texts == ("Hello, world", 'two\nlines and "quotes"', "plain")
    assert table.classes == ("ham", "spam")
    assert table.labels == (1, 0, 0)
    assert table.counts() == {"ham": 2, "spam": 1}


def test_reads_other_column_names_and_a_byte_order_mark() -> None:
    table = read_text_csv(codecs.BOM_UTF8 + "body,kind\nä,x\nö,y\n".encode(), "body", "kind")
    assert table.texts == ("ä", "ö") and table.classes == ("x", "y")


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b"", "mails.csv is empty"),
        (b"text,label\n", "mails.csv has a header but no rows"),
        (b"body,label\nx,a\n", "mails.csv has no 'text' column; its columns are 'body', 'label'"),
        (b"text,text,label\nx,y,a\n", "2 columns named 'text'"),
        (b"text,label\nx,a\ny\n", "row ending on line 3: 1 fields, but the header names 2"),
        (b"text,label\nx,a\ny, \n", "row ending on line 3: the 'label' column is empty"),
        (b"text,label\nx,a\ny,a\n", "every row's 'label' is 'a'"),
        (b"text,label\nx,a\n\xff,b\n", "mails.csv: the byte at offset 15 is not UTF-8"),
        (b'text,label\n"open,a\n', "mails.csv, line"),
    ],
)
def test_refuses_tables_by_name(raw: bytes, message: str) -> None:
    with pytest.raises(TextTableError) as caught:
        read_text_csv(raw, name="mails.csv")
    assert message in str(caught.value)


def test_split_is_fixed_seeded_and_covers_every_row() -> None:
    train, held_out = split(10)
    assert (train, held_out) == split(10)
    assert sorted(train + held_out) == list(range(10))
    assert len(held_out) == 2 and train == sorted(train) and held_out == sorted(held_out)
    assert held_out == [2, 7]  # pinned: a change here changes every split of every table
    assert split(10, seed=1) != (train, held_out)
    assert split(2) == ([0], [1]) or split(2) == ([1], [0])
    for n, shares in ((2, 0.9), (1000, 0.2), (1001, 0.5)):
        kept, out = split(n, held_out=shares)
        assert kept and out and len(kept) + len(out) == n


@pytest.mark.parametrize(("n", "share"), [(1, 0.2), (10, 0.0), (10, 1.0)])
def test_split_refuses_what_cannot_be_split(n: int, share: float) -> None:
    with pytest.raises(ValueError, match=r"two rows or more|strictly between"):
        split(n, held_out=share)


@pytest.fixture(scope="module")
def corpus() -> bytes:
    return spam_assassin_csv(CORPUS)


def test_the_shipped_corpus_holds_every_mail_labelled(corpus: bytes) -> None:
    table = read_text_csv(corpus, name="spam-assassin.csv")
    assert table.n == 6046 and table.counts() == {"ham": 4150, "spam": 1896}
    train, held_out = split(table.n)
    assert (len(train), len(held_out)) == (4837, 1209)
    assert sum(table.labels[i] for i in held_out) == 365  # spam among the held-out mails


def test_every_shipped_mail_tokenizes_as_hugging_face_does_and_as_its_whole_text(corpus: bytes) -> None:
    """At 128 tokens, the shipped text of each mail (CORPUS_CHARS of body) gives the ids Hugging Face gives
    for it and for the mail's whole text: the cut loses nothing the window reads."""
    texts = read_text_csv(corpus).texts
    whole = [mail_text(json.loads(path.read_text(encoding="utf-8"))["text"], chars=10**9)
             for group in ("easy-ham-1", "easy-ham-2", "hard-ham-1", "spam-1", "spam-2")
             for path in sorted((CORPUS / group).glob("*.json"))]  # fmt: skip
    assert len(whole) == len(texts) and CORPUS_CHARS == 2000
    spec = minilm_file("tokenizer.json").decode("utf-8")
    ours, theirs = WordPiece.from_json(json.loads(spec)), Tokenizer.from_str(spec)
    theirs.enable_truncation(max_length=128)
    theirs.enable_padding(length=128)
    shipped = [e.ids for e in theirs.encode_batch(list(texts))]
    assert shipped == [e.ids for e in theirs.encode_batch(whole)]
    wrong = [
        i for i, (text, ids) in enumerate(zip(texts, shipped, strict=True)) if list(ours.encode(text, 128).ids) != ids
    ]
    assert wrong == []
