"""Stage: execution. The host's half of the index checks (ops.indices): a compiled step whose schedule has
CHECK_INDEX kernels reads their records (the INDEX_CHECKS output) along with every read it makes, in the
same readback, and raises IndexRangeError for the first record that holds a count. A step that reads
nothing costs nothing more; its record waits on the device for the next read (it keeps the first bad
step's). Every device calls this: the devices differ only in how bytes come back."""

from __future__ import annotations

import struct

from scellis.lower.kernels import INDEX_CHECKS, RECORD_WORDS, Kind, Schedule, flat
from scellis.ops.indices import IndexRangeError, IndexUse


class IndexChecks:
    """The CHECK_INDEX records of one schedule: (word offset, what it checks), in kernel order."""

    def __init__(self, schedule: Schedule) -> None:
        checks = (k for k in flat(schedule.kernels) if k.kind is Kind.CHECK_INDEX)
        self.records = [(k.out.offset, k.arg) for k in checks if isinstance(k.arg, IndexUse)]

    def reads(self, names: list[str]) -> list[str]:
        """`names`, and the records when anything is read at all."""
        if not self.records or not names or INDEX_CHECKS in names:
            return names
        return [*names, INDEX_CHECKS]

    def verify(self, got: dict[str, bytes], names: list[str]) -> dict[str, bytes]:
        """The reads asked for (`names`) of `got`; IndexRangeError when a record holds a bad index."""
        if INDEX_CHECKS in got:
            raise_recorded(self.records, got[INDEX_CHECKS])
        return {name: got[name] for name in names}


def raise_recorded(records: list[tuple[int, IndexUse]], data: bytes) -> None:
    """IndexRangeError for the first of `records` whose count in `data` (the INDEX_CHECKS bytes) is not 0."""
    for offset, use in records:
        count, position, value = struct.unpack_from(f"<{RECORD_WORDS}I", data, 4 * offset)
        if count:
            raise IndexRangeError(use, count, position, struct.unpack("<i", struct.pack("<I", value))[0])
