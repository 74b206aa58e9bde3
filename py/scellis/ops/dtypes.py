"""Element types of IR values."""

from __future__ import annotations

import enum


class DType(enum.Enum):
    """What one element is. Floats are float32 on devices; the reference may run them in float64.
    float16 is a storage type only: values are cast to it to be stored and cast back to float32 to be
    computed with (no op but CAST takes or makes it), and only devices with shader-f16 hold it. Hashed by
    identity, as Op is (ops.defs)."""

    __hash__ = object.__hash__

    F32 = "float32"
    F16 = "float16"
    I32 = "int32"
    U32 = "uint32"  # random keys and counters
    BOOL = "bool"

    @property
    def short(self) -> str:
        return {"float32": "f32", "float16": "f16", "int32": "i32", "uint32": "u32", "bool": "bool"}[self.value]

    @property
    def is_float(self) -> bool:
        return self is DType.F32

    @property
    def itemsize(self) -> int:
        return {"float16": 2, "bool": 1}.get(self.value, 4)
