"""The correctness matrix's measurements (CPython only: numpy and the float64 reference). Inputs for a case,
the comparison of a device's outputs with the reference against each kernel's declared tolerance, and the
per-device record that the build merges into correctness.json."""

from __future__ import annotations

import asyncio
import datetime
import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from scellis.checks.cases import Case, run_case, unsupported
from scellis.engine import installed_engine_version
from scellis.ir import Function
from scellis.ir.function import input_name
from scellis.levels import CHECKS, PROMISES, Level
from scellis.lower.kernels import Kernel, Kind, Schedule, flat
from scellis.lower.variants import float16_roundings, summed_terms, tolerance
from scellis.ops import DType
from scellis.ops import defs as d
from scellis.runtime.reference.oracle import run

SCHEMA = "scellis.correctness/1"
WIRE = {DType.F32: "<f4", DType.F16: "<f2", DType.I32: "<i4", DType.U32: "<u4", DType.BOOL: "<u4"}


def case_inputs(case: Case, fn: Function, seed: int) -> dict[str, np.ndarray]:
    """Values for every input of `case`: floats uniform in its range, integers in [low, high)."""
    rng = np.random.default_rng(seed)
    out: dict[str, np.ndarray] = {}
    for node in fn.inputs:
        name = input_name(node)
        low, high = case.ranges[name]
        if node.dtype is DType.F32:
            # rounded to float32 first: the reference sees exactly the values the device is given
            out[name] = rng.uniform(low, high, node.shape).astype(np.float32).astype(np.float64)
        else:
            out[name] = rng.integers(int(low), int(high), node.shape, dtype=np.uint64 if high > 2**31 else np.int64)
    return out


def to_bytes(fn: Function, values: dict[str, np.ndarray]) -> dict[str, bytes]:
    return {input_name(n): np.asarray(values[input_name(n)]).astype(WIRE[n.dtype]).tobytes() for n in fn.inputs}


@dataclass(frozen=True)
class Row:
    """One output of one case at one level on one device."""

    case: str
    check: str
    level: str
    kernel: str  # kind and variant of the kernel that wrote the output
    terms: int  # how many terms one output element sums
    exact: bool  # promised bit-identical to the reference (integers, bools, uniform draws, copies)
    tolerance: float
    error: float  # max |device - reference| / max(1, max |reference|); for exact checks max |difference|
    ok: bool  # within the tolerance
    repeat_identical: bool  # a second compile and run gave the same bytes


def _writer(schedule: Schedule, buffer: int, position: int) -> Kernel:
    """The kernel that computes the output at `position` in the function's node order: the last one
    covering it (an output that is a view of a kernel's result, such as a solve's x or a softmax along
    an inner axis, is then copied into its buffer by a kernel that covers nothing), else the last to
    write the buffer."""
    kernels = flat(schedule.kernels)  # a series' part, not the series
    computing = [k for k in kernels if position in k.covers]
    if computing:
        return computing[-1]
    return [k for k in kernels if any(v.buffer == buffer for v in k.writes)][-1]


# Kernels whose float outputs are copies of input values: promised bit-exact.
COPIES = {Kind.GATHER, Kind.SHIFT2D, Kind.FLIP_LAST, Kind.MAX_POOL2D, Kind.SORT, Kind.SORT_GRAD, Kind.CONCAT}


def _exact(kernel: Kernel, dtype: DType) -> bool:
    if not (dtype is DType.F32 or dtype is DType.F16) or kernel.kind in COPIES:
        return True
    return kernel.kind is Kind.RANDOM and kernel.arg.distribution is d.Distribution.UNIFORM  # type: ignore[attr-defined]


def measure(
    case: Case, fn: Function, level: Level, *, schedule: Schedule, values: dict, outputs: dict[str, bytes], repeat: bool
) -> list[Row]:
    """Rows comparing a device's `outputs` with the float64 reference of `fn` on `values`."""
    want = run(fn, values)
    buffers = dict(schedule.outputs)
    positions = {id(node): i for i, node in enumerate(fn.nodes())}
    rows = []
    for name, node in fn.outputs:
        kernel = _writer(schedule, buffers[name], positions[id(node)])
        got = np.frombuffer(outputs[name], dtype=WIRE[node.dtype])[: node.size].astype(np.float64)
        ref = np.asarray(want[name], dtype=np.float64).reshape(-1)
        exact = _exact(kernel, node.dtype)
        diff = float(np.max(np.abs(got - ref))) if ref.size else 0.0
        scale = max(1.0, float(np.max(np.abs(ref)))) if ref.size else 1.0
        bound = 0.0 if exact else tolerance(kernel, float16_roundings(kernel, schedule))
        error = diff if exact else diff / scale
        label = f"{kernel.kind.value} [{kernel.variant}]" if kernel.variant != "default" else kernel.kind.value
        ok = bool(error <= bound) and not math.isnan(error)
        rows.append(Row(case.name, name, level.value, label, summed_terms(kernel), exact, bound, error, ok, repeat))
    return rows


def case_seed(case: Case) -> int:
    """The seed of a case's inputs: fixed by its name, so every device and environment gets the same."""
    return sum(map(ord, case.name))


def check_case(device: object, case: Case) -> list[Row]:
    """`case` at every level on `device` (a CPython device), measured against the reference."""
    fn = case.build()
    values = case_inputs(case, fn, seed=case_seed(case))
    rows = []
    for level in Level:
        schedule, outputs, repeat = asyncio.run(run_case(device, fn, level, to_bytes(fn, values)))
        rows += measure(case, fn, level, schedule=schedule, values=values, outputs=outputs, repeat=repeat)
    return rows


def share(row: Row) -> float:
    """A row's error as a share of its tolerance (exact rows: 0 when exact, infinite otherwise)."""
    if row.tolerance:
        return row.error / row.tolerance
    return 0.0 if row.error == 0 else math.inf


def failures(rows: list[Row]) -> list[str]:
    """Every broken promise: an error over its tolerance, or (debug, prod) a repeat that differed."""
    out = [
        f"{r.level} {r.case}: {r.check} ({r.kernel}) error {r.error:.3g} > {r.tolerance:.3g}" for r in rows if not r.ok
    ]
    repeats = {(r.level, r.case) for r in rows if not r.repeat_identical and r.level != Level.FAST.value}
    return out + [f"{level} {case}: a second compile and run gave different bytes" for level, case in sorted(repeats)]


def summary(rows: list[Row]) -> list[str]:
    """One line per level: checks within tolerance, the error nearest its tolerance, repeat identity."""
    lines = []
    for level in Level:
        at = [r for r in rows if r.level == level.value]
        if not at:
            continue
        worst = max(at, key=share)
        repeat = "yes" if all(r.repeat_identical for r in at) else "no"
        lines.append(
            f"{level.value}: {sum(r.ok for r in at)}/{len(at)} within tolerance; nearest its tolerance "
            f"{100 * share(worst):.1f} % ({worst.case}: {worst.check}, {worst.kernel}, error {worst.error:.3g}); "
            f"second run identical: {repeat}"
        )
    return lines


@dataclass
class Record:
    """What one device measured: the rows of every case and level, and the bit-identity checks."""

    device: str  # a stable id: lavapipe, wasmtime, chromium-webgpu, chromium-cpu
    name: str  # the device as it names itself
    how: str  # how the suite reached it
    features: list[str]
    rows: list[Row]
    identity: list[dict]  # {"check", "level", "cases", "identical"}
    skipped: list[dict] = field(default_factory=list)  # {"case", "reason"}: cases this device cannot run

    def skip(self, case: Case) -> str | None:
        """Record why `case` cannot run on this device, if it cannot; returns the reason (None: it can)."""
        reason = unsupported(case, frozenset(self.features))
        if reason is not None:
            self.skipped.append({"case": case.name, "reason": reason})
        return reason

    @property
    def cases(self) -> set[str]:
        """The cases measured or skipped."""
        return {row.case for row in self.rows} | {s["case"] for s in self.skipped}

    def note_repeats(self) -> None:
        """One identity check per level, from the rows: did every case's second compile and run match."""
        for level in Level:
            same = {row.case: row.repeat_identical for row in self.rows if row.level == level.value}
            check = {"check": "second compile and run", "level": level.value, "cases": len(same)}
            self.identity.append({**check, "identical": all(same.values())})

    def to_json(self) -> dict:
        return {
            "schema": SCHEMA,
            "device": {"id": self.device, "name": self.name, "how": self.how, "features": self.features},
            "engine_version": installed_engine_version(),
            "measured_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "levels": {level.value: {"promise": PROMISES[level], "checked": CHECKS[level]} for level in Level},
            "rows": [asdict(row) for row in self.rows],
            "identity": self.identity,
            "skipped": self.skipped,
        }

    def write(self, folder: Path) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{self.device}.json"
        path.write_text(json.dumps(self.to_json(), indent=1) + "\n")
        return path
