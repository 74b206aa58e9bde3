"""Object keys: SHA-256 of the exact bytes, spelled one way only."""

from __future__ import annotations

import pytest

from scellis.store import BadKey, CorruptObject, check_key, key_of
from scellis.store.objects import verified

# FIPS 180-2's examples: the empty message and "abc".
EMPTY = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
ABC = "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"


def test_keys_are_the_sha256_of_the_bytes() -> None:
    assert key_of(b"") == EMPTY
    assert key_of(b"abc") == ABC
    assert check_key(ABC) == ABC


@pytest.mark.parametrize(
    "key",
    [
        ABC.upper(),  # one spelling only: lowercase
        ABC.removeprefix("sha256:"),
        "sha1:" + ABC[7:],
        ABC[:-1],
        ABC + "0",
        ABC[:-1] + "g",
        " " + ABC,
        ABC + "\n",
        "",
        None,
        42,
    ],
)
def test_malformed_keys_are_refused_by_name(key: object) -> None:
    with pytest.raises(BadKey) as caught:
        check_key(key)
    assert repr(key) in str(caught.value)
    assert caught.value.key == key


def test_verified_names_the_key_and_what_was_found() -> None:
    assert verified(ABC, b"abc", "here") == b"abc"
    with pytest.raises(CorruptObject, match=f"object {ABC} in here is corrupt: its 3 bytes hash to {key_of(b'abd')}"):
        verified(ABC, b"abd", "here")
