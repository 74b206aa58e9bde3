"""BERT's WordPiece tokenizer, read from a Hugging Face `tokenizer.json`.

Expects the JSON of a tokenizer whose pipeline is BERT's: a BertNormalizer, a BertPreTokenizer, a WordPiece
model and the single-sequence template [CLS] A [SEP] (TemplateProcessing or BertProcessing). Anything else is
refused with a TokenizerError that names the field and what it holds. Guarantees: `encode(text, length)` gives
the ids, type ids and attention mask that Hugging Face `tokenizers` gives for `text` as one sequence with its
special tokens, truncated to `length` and padded to it (tests compare them id for id); it reads the text only
as far as those ids need, so a long mail costs what its first `length` tokens cost.

The stages, as Hugging Face runs them: the added tokens (`[CLS]`, `[MASK]`, ... where the text holds them
verbatim) are cut out first and map to their ids; each piece between them is normalised (control characters
dropped, whitespace made a space, CJK ideographs spaced apart, accents stripped through NFD, lower-cased one
character at a time), split on whitespace and around each punctuation character, and each word is split into
the longest vocabulary pieces from its start (`##` marking a piece that continues a word); a word with no such
split, or longer than `max_input_chars_per_word` characters, is one unknown token.
"""

from __future__ import annotations

import re
import unicodedata
from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from scellis.text import unicode

# Unicode's White_Space characters: where BERT's pre-tokeniser splits (Python's str.split() also splits on
# the separators U+001C..U+001F, which BERT does not)
WHITESPACE = re.compile("[\t\n\x0b\x0c\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+")
RAW_SPACE = re.compile("[^ \t\n\r]+")  # raw text's runs between the spaces every normaliser keeps as spaces
ASCII_WORDS = re.compile("[A-Za-z0-9]+|[^A-Za-z0-9]")  # printable ASCII without spaces: words and punctuation
ASCII_PUNCTUATION = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")


class Ranges:
    """Code points in sorted, disjoint inclusive ranges; `c in ranges` for a character c."""

    def __init__(self, spans: tuple[tuple[int, int], ...]) -> None:
        self.starts = [a for a, _ in spans]
        self.ends = [b for _, b in spans]

    def __contains__(self, c: str) -> bool:
        code = ord(c)
        i = bisect_right(self.starts, code) - 1
        return i >= 0 and code <= self.ends[i]


CONTROL, SPACE, MARK, PUNCTUATION = map(Ranges, (unicode.CONTROL, unicode.SPACE, unicode.MARK, unicode.PUNCTUATION))
# CJK Unified Ideographs and their extensions and compatibility blocks, the ranges BERT spaces apart (as Hugging
# Face has them: BERT's own list starts its sixth range at 0x2B820)
CJK = Ranges(
    (
        (0x3400, 0x4DBF),
        (0x4E00, 0x9FFF),
        (0xF900, 0xFAFF),
        (0x20000, 0x2A6DF),
        (0x2A700, 0x2B73F),
        (0x2B740, 0x2B81F),
        (0x2B920, 0x2CEAF),
        (0x2F800, 0x2FA1F),
    )
)


class TokenizerError(ValueError):
    """A tokenizer.json this reader cannot map, or an encoding asked for that cannot be made."""


@dataclass(frozen=True)
class Encoding:
    """One sequence, `length` long: token ids, their type ids, 1 for a token and 0 for padding, and the
    tokens themselves (what the Guide shows)."""

    ids: tuple[int, ...]
    type_ids: tuple[int, ...]
    mask: tuple[int, ...]
    tokens: tuple[str, ...]

    @property
    def used(self) -> int:
        """Tokens before the padding, special tokens included."""
        return sum(self.mask)


@dataclass(frozen=True)
class Normalizer:
    """Hugging Face's BertNormalizer: each step as its flag says, in its order (the character classes are its
    own, scellis.text.unicode; decomposition is Python's NFD)."""

    clean_text: bool
    chinese: bool
    strip_accents: bool
    lowercase: bool

    def __call__(self, text: str) -> str:
        if text.isascii() and text.isprintable():  # most of a mail: nothing to drop, space, strip or split
            return text.lower() if self.lowercase else text
        if self.clean_text or self.chinese:
            text = "".join(map(self._char, text))
        if self.strip_accents and not text.isascii():
            text = "".join(map(_stripped, text))
        if self.lowercase:
            # a character at a time, as Hugging Face does (str.lower() gives a word-final capital sigma its final
            # form, which the character alone does not take), with its mapping where Python's is older
            text = text.lower() if text.isascii() else "".join(unicode.LOWER.get(ord(c)) or c.lower() for c in text)
        return text

    def _char(self, c: str) -> str:
        if self.clean_text:
            if c.isascii():
                if " " <= c <= "~":
                    return c
                return " " if c in "\t\n\r" else ""  # the other ASCII controls are dropped
            if c in CONTROL:
                return ""
            if c in SPACE:
                return " "
        if self.chinese and c in CJK:
            return f" {c} "
        return c


def _read_stripped(items: tuple[str, ...]) -> dict[str, str]:
    pairs = (item.split(":") for row in items for item in row.split())
    return {chr(int(cp, 16)): "".join(chr(int(c, 16)) for c in to.split(".")) for cp, to in pairs}


STRIPPED = _read_stripped(unicode.STRIPPED)
HANGUL = Ranges(((0xAC00, 0xD7A3),))  # syllables, which decompose by rule (Python's NFD does them)


def _stripped(c: str) -> str:
    """`c` less its accents: its decomposition less the marks (as Hugging Face's tables have them)."""
    if c.isascii():
        return c
    found = STRIPPED.get(c)
    if found is not None:
        return found
    if c in MARK:
        return ""
    return unicodedata.normalize("NFD", c) if c in HANGUL else c


def _punctuation(c: str) -> bool:
    return c in ASCII_PUNCTUATION if c.isascii() else c in PUNCTUATION


def words(normalized: str) -> list[str]:
    """BERT's pre-tokenisation of normalised text: split on whitespace, each punctuation character a word."""
    if normalized.isascii() and normalized.isprintable():
        return [w for chunk in normalized.split(" ") if chunk for w in ASCII_WORDS.findall(chunk)]
    out: list[str] = []
    for chunk in WHITESPACE.split(normalized):
        start = 0
        for i, c in enumerate(chunk):
            if _punctuation(c):
                if start < i:
                    out.append(chunk[start:i])
                out.append(c)
                start = i + 1
        if start < len(chunk):
            out.append(chunk[start:])
    return out


@dataclass(frozen=True, eq=False)
class WordPiece:
    """A BERT tokenizer (see the module docstring); build it with `from_json`."""

    vocab: dict[str, int]
    normalizer: Normalizer
    unknown: str
    prefix: str  # marks a piece that continues a word
    max_chars: int  # a longer word is one unknown token
    added: tuple[tuple[str, int], ...]  # tokens matched verbatim in the raw text, longest first
    cls: tuple[str, int]
    sep: tuple[str, int]
    pad: tuple[str, int]
    default_length: int | None  # the padded length tokenizer.json fixes, if any
    _longest: int = field(init=False)
    _ids: dict[str, int] = field(init=False, repr=False)  # the vocabulary and the added tokens
    _pieces: dict[str, tuple[str, ...]] = field(init=False, repr=False)  # each word's pieces, as split

    def __post_init__(self) -> None:
        longest = max((len(t) - (len(self.prefix) if t.startswith(self.prefix) else 0) for t in self.vocab), default=0)
        object.__setattr__(self, "_longest", longest)
        object.__setattr__(self, "_ids", {**self.vocab, **dict(self.added)})
        object.__setattr__(self, "_pieces", {})

    @classmethod
    def from_json(cls, data: Any) -> WordPiece:
        """The tokenizer a parsed tokenizer.json describes (TokenizerError naming the field it cannot map)."""
        return _read(data)

    def id_of(self, token: str) -> int:
        found = self._ids.get(token)
        if found is None:
            raise TokenizerError(f"token {token!r} is not in the vocabulary")
        return found

    def tokens(self, text: str, limit: int | None = None) -> list[str]:
        """`text`'s tokens without special tokens: all of them, or the first `limit`."""
        out: list[str] = []
        for token in self._stream(text):
            if limit is not None and len(out) >= limit:
                break
            out.append(token)
        return out

    def encode(self, text: str, length: int) -> Encoding:
        """`text` as one sequence of `length` tokens: [CLS], its first `length` - 2 tokens, [SEP], padding."""
        if isinstance(length, bool) or not isinstance(length, int) or length < 2:
            raise TokenizerError(f"a sequence needs room for [CLS] and [SEP]: length {length!r} is below 2")
        if not isinstance(text, str):
            raise TokenizerError(f"text to encode must be a string, got {type(text).__name__}")
        body = self.tokens(text, length - 2)
        tokens = [self.cls[0], *body, self.sep[0]]
        used = len(tokens)
        tokens += [self.pad[0]] * (length - used)
        ids = [self.cls[1], *map(self._ids.__getitem__, body), self.sep[1]] + [self.pad[1]] * (length - used)
        return Encoding(tuple(ids), (0,) * length, (1,) * used + (0,) * (length - used), tuple(tokens))

    def _stream(self, text: str) -> Iterator[str]:
        """Tokens one by one, reading the text only as far as they are taken."""
        for piece, added in self._split_added(text):
            if added:
                yield piece
                continue
            for raw in RAW_SPACE.finditer(piece):
                for word in words(self.normalizer(raw.group())):
                    yield from self._word(word)

    def _split_added(self, text: str) -> Iterator[tuple[str, bool]]:
        """The text cut at the added tokens it holds verbatim (the leftmost first, the longest there)."""
        at = 0
        while self.added:
            found = [(i, -len(t), t) for t, _ in self.added if (i := text.find(t, at)) >= 0]
            if not found:
                break
            i, _, token = min(found)
            if i > at:
                yield text[at:i], False
            yield token, True
            at = i + len(token)
        if at < len(text):
            yield text[at:], False

    def _word(self, word: str) -> tuple[str, ...]:
        known = self._pieces.get(word)
        if known is None:
            known = self._pieces[word] = self._split_word(word)
        return known

    def _split_word(self, word: str) -> tuple[str, ...]:
        """The longest vocabulary pieces from the word's start, or the unknown token."""
        if len(word) > self.max_chars:
            return (self.unknown,)
        if word in self.vocab:
            return (word,)
        pieces, start, vocab = [], 0, self.vocab
        while start < len(word):
            end = min(len(word), start + self._longest)
            while end > start:
                piece = word[start:end] if start == 0 else self.prefix + word[start:end]
                if piece in vocab:
                    break
                end -= 1
            else:
                return (self.unknown,)
            pieces.append(piece)
            start = end
        return tuple(pieces)


# -- reading tokenizer.json ------------------------------------------------------------------------------


def _read(data: Any) -> WordPiece:
    if not isinstance(data, dict):
        raise TokenizerError(f"tokenizer.json must hold a JSON object, got {type(data).__name__}")
    model = _object(data, "model")
    _expect(model, "model", "WordPiece")
    _expect(_object(data, "normalizer"), "normalizer", "BertNormalizer")
    _expect(_object(data, "pre_tokenizer"), "pre_tokenizer", "BertPreTokenizer")
    vocab = model.get("vocab")
    if not isinstance(vocab, dict) or not vocab:
        raise TokenizerError("model.vocab must be a non-empty object of token: id")
    for token, i in vocab.items():
        if isinstance(i, bool) or not isinstance(i, int) or i < 0:
            raise TokenizerError(f"model.vocab[{token!r}] must be a non-negative integer id, got {i!r}")
    unknown = _text(model, "model.unk_token", "[UNK]")
    if unknown not in vocab:
        raise TokenizerError(f"model.unk_token {unknown!r} is not in model.vocab")
    max_chars = model.get("max_input_chars_per_word", 100)
    if isinstance(max_chars, bool) or not isinstance(max_chars, int) or max_chars < 1:
        raise TokenizerError(f"model.max_input_chars_per_word must be a positive integer, got {max_chars!r}")
    added = _added(data.get("added_tokens", []))
    ids = {**vocab, **dict(added)}
    cls, sep = _template(_object(data, "post_processor"), ids)
    return WordPiece(
        vocab,
        _normalizer(data["normalizer"]),
        unknown,
        _text(model, "model.continuing_subword_prefix", "##"),
        max_chars,
        tuple(sorted(added, key=lambda t: -len(t[0]))),
        cls,
        sep,
        _padding(data.get("padding"), ids),
        _length(data),
    )


def _object(data: dict[str, Any], key: str) -> dict[str, Any]:
    value = data.get(key)
    if not isinstance(value, dict):
        raise TokenizerError(f"{key} must be an object (BERT's tokenizer has one), got {_show(value)}")
    return value


def _expect(part: dict[str, Any], path: str, kind: str) -> None:
    if part.get("type") != kind:
        raise TokenizerError(
            f"{path}.type must be {kind!r} (a BERT WordPiece tokenizer), got {_show(part.get('type'))}"
        )


def _text(part: dict[str, Any], path: str, default: str) -> str:
    value = part.get(path.rsplit(".", 1)[-1], default)
    if not isinstance(value, str) or not value:
        raise TokenizerError(f"{path} must be a non-empty string, got {_show(value)}")
    return value


def _show(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _normalizer(part: dict[str, Any]) -> Normalizer:
    flags = {}
    for key, default in (("clean_text", True), ("handle_chinese_chars", True), ("lowercase", True)):
        value = part.get(key, default)
        if not isinstance(value, bool):
            raise TokenizerError(f"normalizer.{key} must be true or false, got {_show(value)}")
        flags[key] = value
    strip = part.get("strip_accents")
    if strip is not None and not isinstance(strip, bool):
        raise TokenizerError(f"normalizer.strip_accents must be true, false or null, got {_show(strip)}")
    lowercase = flags["lowercase"]
    return Normalizer(
        flags["clean_text"], flags["handle_chinese_chars"], lowercase if strip is None else strip, lowercase
    )


def _added(raw: Any) -> list[tuple[str, int]]:
    """The added tokens, each matched verbatim in the raw text (the only kind this reader maps)."""
    if not isinstance(raw, list):
        raise TokenizerError(f"added_tokens must be a list, got {_show(raw)}")
    out = []
    for i, token in enumerate(raw):
        path = f"added_tokens[{i}]"
        if not isinstance(token, dict) or not isinstance(token.get("content"), str) or not token["content"]:
            raise TokenizerError(f"{path} must be an object with a non-empty content string")
        tid = token.get("id")
        if isinstance(tid, bool) or not isinstance(tid, int) or tid < 0:
            raise TokenizerError(f"{path}.id must be a non-negative integer, got {_show(tid)}")
        for flag in ("normalized", "lstrip", "rstrip", "single_word"):
            if token.get(flag, False) is not False:
                raise TokenizerError(f"{path} ({token['content']!r}): {flag} true is not read (only verbatim tokens)")
        out.append((token["content"], tid))
    return out


def _template(part: dict[str, Any], ids: dict[str, int]) -> tuple[tuple[str, int], tuple[str, int]]:
    """[CLS] and [SEP] (token, id) of a single-sequence template [CLS] A [SEP]."""
    kind = part.get("type")
    if kind == "BertProcessing":
        cls, sep = (_pair(part.get(key), f"post_processor.{key}") for key in ("cls", "sep"))
    elif kind == "TemplateProcessing":
        cls, sep = _single(part)
    else:
        raise TokenizerError(f"post_processor.type must be 'TemplateProcessing' or 'BertProcessing', got {_show(kind)}")
    for name, i in (cls, sep):
        if ids.get(name, i) != i:
            raise TokenizerError(f"post_processor gives {name!r} id {i}, the vocabulary {ids[name]}")
    return cls, sep


def _pair(value: object, path: str) -> tuple[str, int]:
    if isinstance(value, list) and len(value) == 2 and isinstance(value[0], str) and _is_id(value[1]):
        return value[0], value[1]
    raise TokenizerError(f"{path} must be [token, id], got {_show(value)}")


def _is_id(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _single(part: dict[str, Any]) -> tuple[tuple[str, int], tuple[str, int]]:
    single = part.get("single")
    entries = single if isinstance(single, list) and all(isinstance(p, dict) and len(p) == 1 for p in single) else []
    if [next(iter(p)) for p in entries] != ["SpecialToken", "Sequence", "SpecialToken"] or any(
        not isinstance(v, dict) or v.get("type_id", 0) != 0 for p in entries for v in p.values()
    ):
        raise TokenizerError("post_processor.single must be [CLS] $A [SEP], all of type id 0 (BERT's single sequence)")
    specials = part.get("special_tokens")
    found = []
    for entry in (entries[0], entries[2]):
        name = entry["SpecialToken"].get("id")
        spec = specials.get(name) if isinstance(specials, dict) else None
        given = spec.get("ids") if isinstance(spec, dict) else None
        if not isinstance(name, str) or not isinstance(given, list) or len(given) != 1 or not _is_id(given[0]):
            raise TokenizerError(f"post_processor.special_tokens must give {name!r} exactly one id")
        found.append((name, given[0]))
    return found[0], found[1]


def _padding(part: Any, ids: dict[str, int]) -> tuple[str, int]:
    if isinstance(part, dict) and isinstance(part.get("pad_token"), str) and isinstance(part.get("pad_id"), int):
        return part["pad_token"], part["pad_id"]
    if "[PAD]" not in ids:
        raise TokenizerError("no padding token: padding.pad_token and .pad_id are not given and [PAD] is unknown")
    return "[PAD]", ids["[PAD]"]


def _length(data: dict[str, Any]) -> int | None:
    padding, truncation = data.get("padding"), data.get("truncation")
    fixed = padding.get("strategy", {}) if isinstance(padding, dict) else None
    if isinstance(fixed, dict) and isinstance(fixed.get("Fixed"), int):
        return fixed["Fixed"]
    if isinstance(truncation, dict) and isinstance(truncation.get("max_length"), int):
        return truncation["max_length"]
    return None
