"""Counter-based randomness: Philox4x32-10 and named substreams (base layer, pure Python).

A substream's key is derived on the host from (seed, substream name); a draw is Philox applied to a
counter, so any draw can be computed anywhere, in any order, on any device. Counter layout used by the
RANDOM op for element i: (i mod 2**32, site, position, i div 2**32).
"""

from __future__ import annotations

import hashlib

MASK = 0xFFFFFFFF
PHILOX_M = (0xD2511F53, 0xCD9E8D57)
PHILOX_W = (0x9E3779B9, 0xBB67AE85)
ROUNDS = 10
SUBSTREAMS = ("init", "shuffle", "dropout", "augment")


def philox4x32(counter: tuple[int, int, int, int], key: tuple[int, int]) -> tuple[int, int, int, int]:
    """Philox4x32-10 (Salmon et al. 2011) of one 128-bit counter under a 64-bit key."""
    c0, c1, c2, c3 = counter
    k0, k1 = key
    for r in range(ROUNDS):
        if r:
            k0, k1 = (k0 + PHILOX_W[0]) & MASK, (k1 + PHILOX_W[1]) & MASK
        p0, p1 = PHILOX_M[0] * c0, PHILOX_M[1] * c2
        c0, c1, c2, c3 = (p1 >> 32) ^ c1 ^ k0, p1 & MASK, (p0 >> 32) ^ c3 ^ k1, p0 & MASK
    return c0, c1, c2, c3


def substream_key(seed: int, substream: str) -> tuple[int, int]:
    """The 64-bit key of a named substream: the first 8 bytes of SHA-256("scellis.rng/1", seed, name)."""
    if not 0 <= seed < 2**64:
        raise ValueError(f"seed must be an integer in [0, 2**64), got {seed}")
    if not substream or not substream.isascii():
        raise ValueError(f"substream names are non-empty ASCII, got {substream!r}")
    digest = hashlib.sha256(f"scellis.rng/1\0{seed}\0{substream}".encode()).digest()
    return int.from_bytes(digest[0:4], "little"), int.from_bytes(digest[4:8], "little")


def counter(element: int, site: int, position: int) -> tuple[int, int, int, int]:
    return element & MASK, site & MASK, position & MASK, (element >> 32) & MASK


def uniform(word: int) -> float:
    """A float32 in [0, 1) from the top 24 bits of a word: exact in float32, multiples of 2**-24."""
    return (word >> 8) * 2.0**-24


def permutation(n: int, seed: int, epoch: int) -> list[int]:
    """The order of n examples in one epoch: indices sorted by the first Philox word of counter
    (i, 0, epoch, 0) under the `shuffle` key (ties, which need equal words, keep index order)."""
    key = substream_key(seed, "shuffle")
    words = [philox4x32((i & MASK, 0, epoch & MASK, i >> 32), key)[0] for i in range(n)]
    return sorted(range(n), key=words.__getitem__)
