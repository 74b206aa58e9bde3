"""Mails as the text a classifier reads: the subject, then the start of the body.

Expects one RFC 822 message as text (as the SpamAssassin corpus holds it), well formed or not. Guarantees:
`mail_text(raw)` is the decoded subject, a newline, and the body's text: the first text/plain part, else the
first text/html part with its tags dropped and its entities resolved, else the body as it stands; transfer
encodings (quoted-printable, base64) and charsets are undone where the mail names them, and bytes a charset
cannot map become U+FFFD (a charset Python does not know is read as Latin-1); runs of whitespace become one
space; at most `chars` characters of body (the default is far more than a 128-token window reads). Never
raises on a malformed mail: what cannot be decoded is kept as it stands.
"""

from __future__ import annotations

import codecs
import contextlib
import email
import email.errors
import email.header
import html
import re
from email.message import Message
from html.parser import HTMLParser

BODY_CHARS = 4000
SPACES = re.compile(r"\s+")


def mail_text(raw: str, chars: int = BODY_CHARS) -> str:
    message = email.message_from_string(raw)
    subject = _subject(message.get("Subject", ""))
    return f"{subject}\n{_body(message, chars)}"


def _subject(value: object) -> str:
    text = str(value)
    try:
        parts = email.header.decode_header(text)
        decoded = "".join(
            part.decode(_charset(charset), errors="replace") if isinstance(part, bytes) else part
            for part, charset in parts
        )
    except (ValueError, LookupError, email.errors.HeaderParseError):
        decoded = text
    return SPACES.sub(" ", decoded).strip()


def _charset(name: str | None) -> str:
    if not name:
        return "latin-1"
    try:
        codecs.lookup(name)
    except LookupError:
        return "latin-1"
    return name


def _body(message: Message, chars: int) -> str:
    parts = [p for p in message.walk() if not p.is_multipart()]
    for kind in ("text/plain", "text/html"):
        part = next((p for p in parts if p.get_content_type() == kind), None)
        if part is not None:
            text = _decoded(part)
            return _squeezed(_html_text(text) if kind == "text/html" else text, chars)
    return _squeezed(_decoded(parts[0]) if parts else "", chars)


def _decoded(part: Message) -> str:
    payload = part.get_payload(decode=True)
    if not isinstance(payload, bytes):
        raw = part.get_payload()
        return raw if isinstance(raw, str) else ""
    return payload.decode(_charset(part.get_content_charset()), errors="replace")


def _squeezed(text: str, chars: int) -> str:
    return SPACES.sub(" ", text[: chars * 2]).strip()[:chars].rstrip()


class _Text(HTMLParser):
    """An HTML page's text: tags dropped (scripts and styles with their content), entities resolved."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style"):
            self._skip += 1
        elif tag in ("br", "p", "div", "tr", "li", "td"):
            self.out.append(" ")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style") and self._skip:
            self._skip -= 1

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self.out.append(data)


def _html_text(page: str) -> str:
    parser = _Text()
    with contextlib.suppress(AssertionError, ValueError):  # html.parser's failures on broken markup: keep what it read
        parser.feed(page)
        parser.close()
    return html.unescape("".join(parser.out))
