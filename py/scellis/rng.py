"""Counter-based randomness: Philox4x32-10 and named substreams (base layer, pure Python).

A substream's key is derived on the host from (seed, substream name); a draw is Philox applied to a
counter, so any draw can be computed anywhere, in any order, on any device. Counter layout used by the
RANDOM op for element i: (i mod 2**32, site, position, i div 2**32), where `site` tells apart the draws
of one substream within one call (e.g. two dropout layers) and `position` is the substream's position
for that call (RngState). Bit-level recipes, identical in Python, WGSL and C:

- uniform float32 in [0, 1): (word0 >> 8) * 2**-24 — exact in float32, 2**24 equally likely values;
- bernoulli(keep = 1 - p): keep when (word0 >> 8) >= ceil(p * 2**24), i.e. uniform >= p;
- normal: Box-Muller on two words, sqrt(-2 ln u1) cos(2 pi u2) with u1 = ((word0 >> 8) + 1) * 2**-24 in
  (0, 1] and u2 = (word1 >> 8) * 2**-24 (float32 within 1e-6 across devices, not bit-identical);
- integers in [0, n): the first of words 0..3 below 2**32 - (2**32 mod n), taken mod n — no modulo bias;
  if all four are rejected (probability below (n / 2**32)**4) the draw continues at counter word 3 + 1;
- permutations (epoch shuffles): indices sorted by word0 of counter (i, 0, position, 0), ties by index.
"""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass, field

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


def uniform_bytes(n: int, site: int, position: int, key: tuple[int, int]) -> bytes:
    """The RANDOM op's uniform draws for elements 0..n-1, as little-endian float32 (the pure-Python
    oracle that every device's draws are compared with)."""
    words = (philox4x32(counter(i, site, position), key)[0] for i in range(n))
    return struct.pack(f"<{n}f", *(uniform(w) for w in words))


def integer(n: int, counter_: tuple[int, int, int, int], key: tuple[int, int]) -> int:
    """An integer in [0, n) without modulo bias, by the recipe in the module docstring."""
    if not 1 <= n <= 2**32:
        raise ValueError(f"integer draws need 1 <= n <= 2**32, got {n}")
    limit = 2**32 - (2**32 % n)
    c0, c1, c2, c3 = counter_
    while True:
        for word in philox4x32((c0, c1, c2, c3), key):
            if word < limit:
                return word % n
        c3 = (c3 + 1) & MASK


def key_input(substream: str) -> str:
    """Name of the IR input that holds a substream's key (u32[2])."""
    return f"rng.{substream}"


def position_input(substream: str) -> str:
    """Name of the IR input that holds a substream's draw position for this call (u32 scalar)."""
    return f"rng.{substream}.position"


def position_substream(name: str) -> str | None:
    """The substream whose position input is `name`, if it is one."""
    if name.startswith("rng.") and name.endswith(".position"):
        return name[len("rng.") : -len(".position")]
    return None


@dataclass
class RngState:
    """The seed and the next draw position of each substream: all a run needs to replay every draw.
    Small and JSON-serialisable, so a checkpoint stores it and a resumed run continues the streams.

    Positions advance independently: drawing more from one substream never moves another."""

    seed: int
    positions: dict[str, int] = field(default_factory=dict)

    def key(self, substream: str) -> tuple[int, int]:
        return substream_key(self.seed, substream)

    def peek(self, substream: str) -> int:
        return self.positions.get(substream, 0)

    def take(self, substream: str) -> int:
        """The substream's next position, which this call uses up."""
        position = self.peek(substream)
        if position >= 2**32:
            raise OverflowError(f"substream {substream!r} has used all 2**32 positions")
        self.positions[substream] = position + 1
        return position

    def to_json(self) -> dict[str, object]:
        return {"format": "scellis.rng/1", "seed": self.seed, "positions": dict(sorted(self.positions.items()))}

    @classmethod
    def from_json(cls, data: dict[str, object]) -> RngState:
        if data.get("format") != "scellis.rng/1":
            raise ValueError(f"not an RNG state: format is {data.get('format')!r}, expected 'scellis.rng/1'")
        seed, positions = data.get("seed"), data.get("positions")
        if not isinstance(seed, int) or not isinstance(positions, dict):
            raise ValueError("an RNG state needs an integer seed and a positions object")
        if not all(isinstance(k, str) and isinstance(v, int) and v >= 0 for k, v in positions.items()):
            raise ValueError("RNG positions map substream names to non-negative integers")
        return cls(seed, dict(positions))
