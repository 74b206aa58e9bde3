"""Stage: memory. What the planned bytes are for: each buffer of a training step's schedule put in a
category, and the bytes of each category at the step's peak.

Expects the step's schedule, its memory plan, and the three functions the step was built from (forward,
backward = forward + gradients, step = backward + the optimizer), which share their nodes: a node's
phase is the first of them that holds it. Named buffers are classified by role and name; temporaries by
the phase of the IR node whose kernel writes them, and forward temporaries that a backward kernel reads
are the activations kept for backward.
"""

from __future__ import annotations

from dataclasses import dataclass

from scellis.ir import Function
from scellis.ir.function import input_role
from scellis.lower.kernels import Schedule, flat
from scellis.ops import Op
from scellis.ops.defs import Role
from scellis.optim.storage import MASTER
from scellis.plan.memory import MemoryPlan

CATEGORIES = (
    "parameters",
    "gradients",
    "optimizer state",
    "running statistics",
    "mixed-precision master copy",
    "activations kept for backward",
    "updated parameters and state",
    "workspace",
    "resident data set",
    "batch inputs",
    "outputs read back",
    "reuse slack",
)
ROLE_CATEGORY = {
    Role.PARAM: "parameters",
    Role.STATE: "optimizer state",
    Role.DATA: "batch inputs",
    Role.DATASET: "resident data set",
    Role.LABEL: "batch inputs",
    Role.RNG: "batch inputs",
    Role.SETTING: "batch inputs",
}


@dataclass(frozen=True)
class Breakdown:
    """Bytes per category when the most bytes are live, and the kernel where that happens."""

    bytes: dict[str, int]
    peak_kernel: int  # -1 when no temporary is ever live

    @property
    def total(self) -> int:
        return sum(self.bytes.values())


def _phase_of(step: Function, forward: Function, backward: Function) -> list[str]:
    """Each node position of `step`: forward, backward or optimizer."""
    fwd, bwd = set(map(id, forward.nodes())), set(map(id, backward.nodes()))
    return ["forward" if i in fwd else "backward" if i in bwd else "optimizer" for i in map(id, step.nodes())]


def categories(schedule: Schedule, step: Function, forward: Function, backward: Function) -> list[str]:
    """The category of each buffer of `schedule` (the schedule of `step`)."""
    phase = _phase_of(step, forward, backward)
    grads = {id(node) for name, node in backward.outputs if name.startswith("grad/")}
    nodes = step.nodes()
    roles = {name: input_role(n) for n in step.inputs for name in [n.arg.name]}  # type: ignore[attr-defined]
    # an input's role wins over an output's name: updated in place, `param/w` is `w`'s buffer
    named = {b: name for name, b in (*schedule.outputs, *schedule.inputs)}
    writer: dict[int, int] = {}
    kernels = flat(schedule.kernels)  # a series' parts, each in its own phase
    for kernel in kernels:
        for view in kernel.writes:
            writer.setdefault(view.buffer, kernel.covers[-1] if kernel.covers else -1)
    backward_at = [p == "backward" for p in phase]
    in_backward = (k for k in kernels if any(map(backward_at.__getitem__, k.covers)))
    read_in_backward = {v.buffer for k in in_backward for v in k.inputs}
    out = []
    for buffer in schedule.buffers:
        if buffer.id in named:
            name = named[buffer.id]
            if name in roles and name.startswith(MASTER):
                out.append("mixed-precision master copy")  # float32 weights behind float16 storage
            elif name in roles and roles[name] is Role.STATE and not name.startswith("opt."):
                out.append("running statistics")  # batch norm's, say: state that is not the optimizer's
            elif name in roles:
                out.append(ROLE_CATEGORY[roles[name]])
            else:
                updated = name.startswith(("param/", "state/"))
                out.append("updated parameters and state" if updated else "outputs read back")
            continue
        position = writer.get(buffer.id, -1)
        node = nodes[position] if position >= 0 else None
        if node is not None and id(node) in grads and node.op is not Op.INPUT:
            out.append("gradients")
        elif position >= 0 and phase[position] == "forward" and buffer.id in read_in_backward:
            out.append("activations kept for backward")
        else:
            out.append("workspace")
    return out


def breakdown(schedule: Schedule, plan: MemoryPlan, kinds: list[str]) -> Breakdown:
    """Bytes per category at the kernel where the most bytes are live; what the slots hold beyond that
    (buffers of different sizes sharing a slot) is the reuse slack."""
    peak = plan.peak_kernel
    totals = dict.fromkeys(CATEGORIES, 0)
    for buffer, span, kind in zip(schedule.buffers, plan.lifetimes, kinds, strict=True):
        if plan.slot_of[buffer.id] < 0:
            continue  # merged away: no slot
        if span is None or span[0] <= peak <= span[1]:
            totals[kind] += buffer.nbytes
    totals["reuse slack"] = plan.allocated - sum(totals.values())
    return Breakdown(totals, peak)
