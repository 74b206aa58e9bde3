"""Stage: lower. Kernels that each run one invocation (or one workgroup) per index i of [0, N) joined into
SERIES kernels (Kind.SERIES): one dispatch whose every invocation runs the parts one after another. A step's small
kernels (a cross-entropy's log-softmax, its rows' sums and its argmax; the loss's and the accuracy's sums)
then cost one dispatch instead of several.

Expects a schedule's kernels in execution order with their variants chosen, its buffers, and the outputs
the step carries into its inputs (Schedule.carry). Guarantees: the same values, bit for bit (every part runs
its own code, in the schedule's order for every element). A kernel joins a series when:
- it runs one invocation per index (`indices`: ELEMENTWISE, the "serial" REDUCE, row and CHECK_INDEX
  variants, the "dot" MATMUL; at most GRID of them), or one 64-lane workgroup per index (the other REDUCE
  and row variants), as the series' parts do;
- a part that writes an output the step carries into an input (a parameter's update) is the only part that
  touches either, so plan.memory.update_in_place still writes it in place (`_updates_alone`); such an
  output binds as its input where that update is sure (`_updated_in_place`);
- it can run where the series runs (the series' first part's place): no kernel in between writes what it
  reads or writes, or reads what it writes (an output and the input it is carried into count as one);
  or the series is one of updates that can run at the kernel's place, on the same terms;
- every buffer that it and an earlier part both touch, one of them writing it, they touch alike: each
  index i the same elements (`_footprint`), so no invocation or workgroup reads what another writes (or
  both run one index);
- the series binds at most `bindings` buffers (the device's, merge.bindings_of).
Each kernel tries the series opened most recently first (at most OPEN of them), else a series of updates
that can wait for it (`_defers`: the series then runs at the kernel's place), else opens its own; a series
of one part stays that kernel.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from scellis.lower.kernels import Kernel, Kind, Reduction, Shape, View, series
from scellis.lower.merge import MAX_BINDINGS

GRID = 65535 * 64  # invocations a series of them runs at most: a 1-D grid of 64-invocation workgroups
OPEN = 8  # series a kernel tries to join, the most recent first
ROWS = (Kind.SOFTMAX, Kind.LOG_SOFTMAX, Kind.ARGMAX)

# How one invocation touches a buffer: the canonical map from its index i (row-major over the iteration
# shape) to an offset, and the canonical set of offsets it adds to that (the elements it loops over).
Footprint = tuple[int, tuple[tuple[int, int], ...], tuple[tuple[int, int], ...]]


INVOCATION, WORKGROUP = "invocation", "workgroup"  # what runs each index of a kernel


def indices(kernel: Kernel) -> tuple[str, int] | None:
    """What runs each index of `kernel` (an invocation, or a workgroup of 64 with a lane tree) and how many
    indices, for the kinds and variants a series runs; None for the others."""
    kind, variant = kernel.kind, kernel.variant
    if kind is Kind.ELEMENTWISE or (kind is Kind.MATMUL and variant == "dot"):
        return INVOCATION, kernel.out.size
    if kind is Kind.REDUCE:
        return (INVOCATION if variant == "serial" else WORKGROUP), math.prod(kernel.out.shape)
    if kind in ROWS:
        return (INVOCATION if variant == "serial" else WORKGROUP), math.prod(kernel.inputs[0].shape[:-1])
    if kind is Kind.CHECK_INDEX and variant == "serial":
        return INVOCATION, 1
    return None


def invocations(kernel: Kernel) -> int | None:
    """How many indices `kernel` runs (`indices`), or None."""
    found = indices(kernel)
    return None if found is None else found[1]


def joined(kernels: Sequence[Kernel], carried: dict[int, int], bindings: int = MAX_BINDINGS) -> tuple[Kernel, ...]:
    """`kernels` with those that can run as series joined (module docstring)."""
    alias, sure = dict(carried), _updated_in_place(kernels, carried)
    slots: list[list[Kernel]] = []  # the schedule so far: each entry a kernel or a series' parts
    open_: list[int] = []  # indices into slots of open series, oldest first
    for kernel in kernels:
        found = indices(kernel)
        if found is None or (found[0] != WORKGROUP and found[1] > GRID):
            slots.append([kernel])
            continue
        mine = _touches(kernel, alias)
        recent = list(reversed(open_[-OPEN:]))
        at = next(
            (
                at
                for at in recent
                if _moves(slots, at, mine, alias) and _fits(slots[at], kernel, mine, alias, sure, bindings=bindings)
            ),
            None,
        )
        if at is not None:  # the kernel runs earlier, at the series' place
            slots[at].append(kernel)
            continue
        at = next((at for at in recent if _defers(slots, at, alias, carried)), None)
        if at is not None and _fits(
            slots[at], kernel, mine, alias, sure, bindings=bindings
        ):  # the updates run later, with it
            parts = slots.pop(at)
            open_ = [i - (i > at) for i in open_ if i != at]
            open_.append(len(slots))
            slots.append([*parts, kernel])
            continue
        open_.append(len(slots))
        slots.append([kernel])
    return tuple(parts[0] if len(parts) == 1 else series(tuple(parts)) for parts in slots)


def _updated_in_place(kernels: Sequence[Kernel], carried: dict[int, int]) -> dict[int, int]:
    """The carried outputs an elementwise kernel writes whole, reading the input it is carried into only at
    the element it writes, with no later kernel reading that input: those plan.memory.update_in_place
    writes into their inputs (output -> input), so a series binds each pair once."""
    last_read = {v.buffer: i for i, k in enumerate(kernels) for v in k.inputs}
    out: dict[int, int] = {}
    for i, kernel in enumerate(kernels):
        if kernel.kind is not Kind.ELEMENTWISE:
            continue
        for view in kernel.writes:
            dst = carried.get(view.buffer)
            if dst is None or last_read.get(dst, -1) > i or view.offset or not view.is_contiguous:
                continue
            if all(v == view._replace(buffer=dst) for v in kernel.inputs if v.buffer == dst):
                out[view.buffer] = dst
    return out


def _moves(slots: list[list[Kernel]], at: int, mine: Touches, alias: dict[int, int]) -> bool:
    """Whether a kernel touching `mine` can run earlier, at slots[at]: nothing in between writes what it
    touches or touches what it writes."""
    writes = {b for b, (w, _) in mine.items() if w}
    for between in slots[at + 1 :]:
        for other in between:
            theirs = _touches(other, alias)
            if any(theirs[b][0] for b in mine if b in theirs) or any(b in theirs for b in writes):
                return False
    return True


def _defers(slots: list[list[Kernel]], at: int, alias: dict[int, int], carried: dict[int, int]) -> bool:
    """Whether the series at slots[at], all of whose parts write only carried outputs (updates of
    parameters and state), can run later, after everything since: nothing in between touches what a part
    writes (or the input it is carried into) or writes what a part reads."""
    parts = slots[at]
    if not all(v.buffer in carried for part in parts for v in part.writes):
        return False
    ours: Touches = {}
    for part in parts:
        ours |= _touches(part, alias)
    for between in slots[at + 1 :]:
        for other in between:
            theirs = _touches(other, alias)
            if any(b in theirs and (theirs[b][0] or ours[b][0]) for b in ours):
                return False
    return True


def _updates_alone(parts: list[Kernel], kernel: Kernel, carried: dict[int, int]) -> bool:
    """Whether the series of `parts` and `kernel` leaves each carried output's update a part of its own:
    no other part touches the output or the input it is carried into (plan.memory.in_place then still
    writes it into its input)."""
    for a in (*parts, kernel):
        updated = {b for v in a.writes if v.buffer in carried for b in (v.buffer, carried[v.buffer])}
        touched = (v.buffer for b in (*parts, kernel) if b is not a for v in (*b.inputs, *b.writes))
        if updated and any(b in updated for b in touched):
            return False
    return True


Touches = dict[int, tuple[bool, set[Footprint]]]  # buffer -> (written, the footprints of its accesses)


def _fits(
    parts: list[Kernel], kernel: Kernel, mine: Touches, alias: dict[int, int], sure: dict[int, int], *, bindings: int
) -> bool:
    """Whether `kernel` (touching `mine`) and the series of `parts` can run as one, binding at most `bindings`
    buffers (module docstring); an output updated in place for sure binds as its input (`_updated_in_place`)."""
    if indices(parts[0])[0] != indices(kernel)[0]:  # type: ignore[index]
        return False  # a series' parts run their indices alike: each in an invocation, or each in a workgroup
    if not _updates_alone(parts, kernel, alias):
        return False
    n = invocations(kernel)
    for part in parts:
        theirs = _touches(part, alias)
        for b, (w, prints) in mine.items():
            if b not in theirs or not (w or theirs[b][0]):
                continue
            if invocations(part) == n == 1:
                continue  # one invocation runs both, in order
            if invocations(part) != n or len(prints | theirs[b][1]) != 1:
                return False
    bound = {sure.get(v.buffer, v.buffer) for part in (*parts, kernel) for v in (*part.inputs, *part.writes)}
    return len(bound) <= bindings


def _touches(kernel: Kernel, alias: dict[int, int]) -> Touches:
    """Each buffer `kernel` touches (an output named by the input it is carried into): whether it writes
    it, and the footprints of its accesses."""
    out: Touches = {}
    for view, lead, written in _accesses(kernel):
        b = alias.get(view.buffer, view.buffer)
        was, prints = out.get(b, (False, set()))
        out[b] = (was or written, prints | {_footprint(view, lead)})
    return out


def _accesses(kernel: Kernel) -> list[tuple[View, int, bool]]:
    """(view, how many of its leading axes follow the invocation index, written) for each access; a view's
    other axes are the elements one invocation loops over. A matmul's operands are given as views over
    the output's shape and K (`_operand`)."""
    kind, rank = kernel.kind, len(kernel.out.shape)
    out: list[tuple[View, int, bool]] = [(v, len(v.shape), True) for v in kernel.writes]
    if kind is Kind.REDUCE:
        assert isinstance(kernel.arg, Reduction)
        out = [(v, rank, True) for v in kernel.writes]  # prologue stores: [*out, *reduced]
        out += [(v, rank, False) for v in kernel.inputs]
    elif kind in ROWS:
        out = [(v, len(v.shape) - (kind is not Kind.ARGMAX), True) for v in kernel.writes]
        out += [(v, len(v.shape) - 1, False) for v in kernel.inputs]
    elif kind is Kind.CHECK_INDEX:  # one invocation reads every index and writes the record
        out = [(v, 0, True) for v in kernel.writes] + [(v, 0, False) for v in kernel.inputs]
    elif kind is Kind.MATMUL:
        a, b = kernel.inputs[:2]
        out += [(_operand(a, kernel.out.shape, 0), rank, False), (_operand(b, kernel.out.shape, 1), rank, False)]
        out += [(v, rank, False) for v in kernel.inputs[2:]]
    else:
        out += [(v, len(v.shape), False) for v in kernel.inputs]
    return out


def _operand(view: View, out: Shape, which: int) -> View:
    """A matmul operand ([..., M, K] for a, which 0; [..., K, N] for b) as the invocation at output
    (..., m, n) reads it: a view of shape [*out, K] (strides 0 along the side it does not vary with)."""
    *batch, m_or_k, k_or_n = view.strides
    k = view.shape[-1] if which == 0 else view.shape[-2]
    strides = (*batch, m_or_k, 0, k_or_n) if which == 0 else (*batch, 0, k_or_n, m_or_k)
    return View(view.buffer, (*out, k), strides, view.offset)


def _footprint(view: View, lead: int) -> Footprint:
    """The elements invocation i touches through `view` whose first `lead` axes follow i (row-major),
    canonical: equal footprints touch the same elements for every i."""
    index = [(n, s) for n, s in zip(view.shape[:lead], view.strides[:lead], strict=True) if n != 1]
    merged: list[tuple[int, int]] = []
    for n, s in index:  # adjacent axes that step as one
        if merged and merged[-1][1] == n * s:
            merged[-1] = (merged[-1][0] * n, s)
        else:
            merged.append((n, s))
    loop = sorted((s, n) for n, s in zip(view.shape[lead:], view.strides[lead:], strict=True) if n != 1 and s)
    spans: list[tuple[int, int]] = []
    for s, n in loop:  # the offsets looped over, as a set
        if spans and spans[-1][0] * spans[-1][1] == s:
            spans[-1] = (spans[-1][0], spans[-1][1] * n)
        else:
            spans.append((s, n))
    return view.offset, tuple(merged), tuple(spans)
