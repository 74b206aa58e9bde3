"""The kernel schedule as text (what the Guide shows): one line per kernel with its kind, fused ops,
output and inputs (buffer, shape, strides when not contiguous) and the IR nodes it computes. A reduction
with a prologue shows it as of(ops), and its stores are the prologue's (Kind.REDUCE). A series shows its
parts in brackets, each as its own line would."""

from __future__ import annotations

from scellis.lower.kernels import Apply, Kernel, Kind, Reduction, Schedule, View


def _view(view: View, schedule: Schedule) -> str:
    buffer = schedule.buffer(view.buffer)
    name = f"%{buffer.name}" if buffer.name else f"b{buffer.id}"
    shape = ",".join(map(str, view.shape))
    layout = "" if view.is_contiguous and not view.offset else f" strides={view.strides} offset={view.offset}"
    return f"{name}[{shape}]{layout}"


def kernel_line(index: int, kernel: Kernel, schedule: Schedule) -> str:
    if kernel.kind is Kind.SERIES:  # its parts, each as a kernel of its own would read, on one line
        parts = "; ".join(kernel_line(index, part, schedule).split(": ", 1)[1] for part in kernel.parts)
        return f"k{index}: series of {len(kernel.parts)} [{parts}]"
    fused = [s.op.value for s in kernel.expr.steps if isinstance(s, Apply)]
    fusion = f" fused({', '.join(fused)})" if fused else ""
    if isinstance(kernel.arg, Reduction) and kernel.arg.prologue is not None:  # what it reduces, then fusion
        before = [s.op.value for s in kernel.arg.prologue.steps if isinstance(s, Apply)]
        fusion = f" of({', '.join(before)}){fusion}"
    inputs = ", ".join(_view(v, schedule) for v in kernel.inputs)
    # covers count every node, inputs first; the IR text numbers only the computed ones
    covers = " ".join(f"%{c - len(schedule.inputs)}" for c in kernel.covers)
    variant = f" [{kernel.variant}]" if kernel.variant != "default" else ""
    head = f"k{index}: {kernel.kind.value}{variant}{fusion}"
    also = "".join(f", {_view(v, schedule)} = v{step}" for v, step in kernel.stores)
    return f"{head} -> {_view(kernel.out, schedule)}{also} <- ({inputs})  covers {covers}"


def schedule_text(schedule: Schedule) -> str:
    lines = [f"schedule {schedule.name}: {len(schedule.kernels)} kernels, {len(schedule.buffers)} buffers"]
    lines += [f"  {kernel_line(i, k, schedule)}" for i, k in enumerate(schedule.kernels)]
    lines += [f"  carry b{c.src} -> %{schedule.buffer(c.dst).name}" for c in schedule.carry]
    lines += [f"  note: {note}" for note in schedule.notes]
    return "\n".join(lines)
