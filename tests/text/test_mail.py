"""Mails as text: the subject, then the body's start, decoded; malformed mails still give text."""

from __future__ import annotations

import pytest

from scellis.text.mail import mail_text

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
