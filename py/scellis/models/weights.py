"""Pretrained values bound to a program's parameters: the program's pinned weights file checked, and each
pretrained parameter's bytes taken from it.

Expects a ValidProgram and the bytes of a safetensors file. Guarantees: `bind` returns, for every pretrained
parameter (its input name, `<node id>.value`), a view of its tensor's little-endian float32 bytes, or raises
WeightsError naming what does not fit: a file of another size or SHA-256 than the program pins (a run is
reproducible only with the same weights), a tensor the file lacks, or one of another dtype or shape than
the parameter's (for an NF4 parameter, the float32 tensor it is packed from: `nf4_packer` packs it on
the device). Nothing is copied: the views point into the bytes given.
"""

from __future__ import annotations

import hashlib

from scellis.graph.building import Slot
from scellis.graph.validate import ValidProgram
from scellis.ir import Function
from scellis.models.safetensors import TensorFile, read_safetensors
from scellis.ops import DType, Op, make
from scellis.ops.defs import Nf4Arg, Role
from scellis.ops.node import input_node


class WeightsError(ValueError):
    """Weights that do not fit the program; the message names the file, the parameter and the tensor."""


def check_pin(program: ValidProgram, raw: bytes | memoryview) -> None:
    """WeightsError unless `raw` is the file the program pins (size, then SHA-256)."""
    pin = program.weights
    if pin is None:
        raise WeightsError(f"{program.name} reads no pretrained weights, but a weights file was given")
    if len(raw) != pin.bytes:
        raise WeightsError(f"{pin.file}: {len(raw):,} bytes, but {program.name} pins a file of {pin.bytes:,}")
    digest = hashlib.sha256(raw).hexdigest()
    if digest != pin.sha256:
        raise WeightsError(f"{pin.file}: its SHA-256 is {digest}, but {program.name} pins {pin.sha256}: other weights")


def bind(program: ValidProgram, slots: tuple[Slot, ...] | list[Slot], raw: bytes | memoryview) -> dict[str, memoryview]:
    """Each pretrained slot's name -> its bytes in `raw` (see the module's contract)."""
    check_pin(program, raw)
    assert program.weights is not None
    name = program.weights.file
    file: TensorFile = read_safetensors(raw, name)
    out = {}
    for slot in (s for s in slots if s.init.kind == "pretrained"):
        key = slot.init.tensor
        tensor = file.tensors.get(key)
        where = f"{name}: parameter {slot.node_id!r} reads tensor {key!r}"
        if tensor is None:
            raise WeightsError(f"{where}, which the file lacks")
        if tensor.dtype != "F32":
            raise WeightsError(f"{where}, which is {tensor.dtype}, not F32")
        shape = slot.init.nf4 or slot.shape  # NF4 words are packed from the float32 tensor on the device
        if tensor.shape != shape:
            raise WeightsError(f"{where}, of shape {list(tensor.shape)}, not the parameter's {list(shape)}")
        out[slot.name] = tensor.data
    return out


def nf4_packer(rows: int, cols: int) -> Function:
    """The function packing a float32 [rows, cols] weight (input `w`) into NF4 words (output `packed`):
    run on the device at start, one weight at a time, so a float32 copy of one weight at most is held."""
    w = input_node("w", Role.PARAM, DType.F32, (rows, cols))
    return Function("nf4-pack", (w,), (("packed", make(Op.NF4_PACK, w, arg=Nf4Arg(rows, cols))),))
