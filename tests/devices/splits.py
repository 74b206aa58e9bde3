"""Random digits-shaped splits for device tests: 64 float32 features in [0, 1) and an int32 label below
10 per example."""

from __future__ import annotations

import random
import struct

from scellis.datasets import Split


def random_split(rows: int, seed: int) -> Split:
    rnd = random.Random(seed)
    pixels = struct.pack(f"<{rows * 64}f", *(rnd.random() for _ in range(rows * 64)))
    return Split(pixels, struct.pack(f"<{rows}i", *(rnd.randrange(10) for _ in range(rows))), 64)
