"""Element types of IR values."""

from __future__ import annotations

import enum


class DType(enum.Enum):
    """What one element is. Floats are float32 on devices; the reference may run them in float64."""

    F32 = "float32"
    I32 = "int32"
    U32 = "uint32"  # random keys and counters
    BOOL = "bool"

    @property
    def short(self) -> str:
        return {"float32": "f32", "int32": "i32", "uint32": "u32", "bool": "bool"}[self.value]

    @property
    def is_float(self) -> bool:
        return self is DType.F32

    @property
    def itemsize(self) -> int:
        return 1 if self is DType.BOOL else 4
