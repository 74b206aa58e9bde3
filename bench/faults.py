"""The fault and fuzz suites' figures, as the tests last wrote them (build/faults/*.json), as one table.

    python bench/faults.py          a Markdown table: one row per suite, one column per figure

Run the suite first (`scripts/test`, or the fault tests alone); a suite not run has no row.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

FAULTS = Path(__file__).resolve().parent.parent / "build" / "faults"


def main() -> int:
    rows = [json.loads(path.read_text()) for path in sorted(FAULTS.glob("*.json"))]
    if not rows:
        print(f"no figures in {FAULTS}: run the tests first", file=sys.stderr)
        return 1
    columns = sorted({key for row in rows for key in row} - {"suite"})
    print("| suite | " + " | ".join(columns) + " |")
    print("| --- | " + " | ".join("---:" for _ in columns) + " |")
    for row in rows:
        print(f"| {row['suite']} | " + " | ".join(str(row.get(c, "")) for c in columns) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
