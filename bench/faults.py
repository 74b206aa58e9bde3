"""The fault and fuzz suites' figures, as the tests last wrote them (build/faults/*.json), as one table.

    python bench/faults.py          a Markdown table: one row per suite, one column per figure

Run the suite first (`scripts/test`, or the fault tests alone); a suite not run has no row.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

FAULTS = Path(__file__).resolve().parent.parent / "build" / "faults"


CORE = ["trials", "inputs", "crashes", "hangs", "silent_wrong"]  # every suite's first columns, when it has them


def main() -> int:
    rows = [json.loads(path.read_text()) for path in sorted(FAULTS.glob("*.json"))]
    if not rows:
        print(f"no figures in {FAULTS}: run the tests first", file=sys.stderr)
        return 1
    print("| suite | " + " | ".join(CORE) + " | other figures |")
    print("| --- | " + " | ".join("---:" for _ in CORE) + " | --- |")
    for row in rows:
        core = " | ".join(str(row.get(c, "")) for c in CORE)
        other = ", ".join(f"{k.replace('_', ' ')} {row[k]}" for k in sorted(row) if k not in {"suite", *CORE})
        print(f"| {row['suite']} | {core} | {other} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
