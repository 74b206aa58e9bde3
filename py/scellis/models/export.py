"""A fine-tuned encoder's files for the Hugging Face tools: the LoRA adapter in PEFT's format, the head, and
the merged model.

Expects a ValidProgram built by scellis.models.bert and its trained values (bytes by input name, as a
checkpoint holds them). Guarantees: `peft_adapter` gives `adapter_config.json` and
`adapter_model.safetensors` as PEFT saves a LoRA adapter of the base model (keys
`base_model.model.<module>.lora_A.weight` [rank, in] and `...lora_B.weight` [out, rank]; r, lora_alpha,
lora_dropout and target_modules as the program was built), so `PeftModel.from_pretrained` on the base
model loads it; `head_file` gives the linear head as torch.nn.Linear holds it (`weight` [classes,
hidden], `bias` [classes]); `merged_model` gives the base model's file with each adapted weight replaced
by its merged value (scellis.models.lora computes it), every other tensor and the metadata as they were;
`trained_model` the same with the values full fine-tuning trained.
"""

from __future__ import annotations

import array
import json
import sys

from scellis.datasets import words
from scellis.graph.validate import ValidProgram
from scellis.models.lora import MERGED, Adapter, adapters
from scellis.models.safetensors import TensorFile, write_safetensors

PEFT_PREFIX = "base_model.model."


def _module(adapter: Adapter) -> str:
    return adapter.tensor.removesuffix(".weight")


def _dropout(program: ValidProgram, adapter: Adapter) -> float:
    node = next((n for n in program.nodes if n.id == f"{adapter.node}-lora-drop"), None)
    return float(node.params["p"]) if node is not None else 0.0


def peft_adapter(program: ValidProgram, values: dict[str, bytes], base: str = "") -> dict[str, bytes]:
    """adapter_config.json and adapter_model.safetensors (see the module's contract); `base` names the base
    model for base_model_name_or_path."""
    found = adapters(program)
    if not found:
        raise ValueError(f"{program.name} has no LoRA adapters to export")
    ranks = {a.rank for a in found}
    scales = {a.scale for a in found}
    if len(ranks) != 1 or len(scales) != 1:
        raise ValueError(f"{program.name}: PEFT's format holds one rank and one alpha; the adapters differ")
    rank, scale = ranks.pop(), scales.pop()
    tensors: dict[str, tuple[str, tuple[int, ...], bytes]] = {}
    for adapter in found:
        module = PEFT_PREFIX + _module(adapter)
        tensors[f"{module}.lora_A.weight"] = ("F32", (adapter.rank, adapter.inp), _value(values, adapter.a))
        tensors[f"{module}.lora_B.weight"] = ("F32", (adapter.out, adapter.rank), _value(values, adapter.b))
    layer_modules = sorted({_module(a).split(".layer.", 1)[1].split(".", 1)[1] for a in found})
    config = {
        "peft_type": "LORA",
        "base_model_name_or_path": base,
        "r": rank,
        "lora_alpha": int(scale * rank) if float(scale * rank).is_integer() else scale * rank,
        "lora_dropout": _dropout(program, found[0]),
        "target_modules": layer_modules,
        "bias": "none",
        "fan_in_fan_out": False,
        "inference_mode": True,
        "init_lora_weights": True,
        "modules_to_save": None,
        "task_type": None,
    }
    return {
        "adapter_config.json": (json.dumps(config, indent=2) + "\n").encode(),
        "adapter_model.safetensors": write_safetensors(tensors, {"format": "pt"}),
    }


def head_file(values: dict[str, bytes], node: str = "head") -> bytes:
    """The linear head `node` as torch.nn.Linear holds it (see the module's contract)."""
    weight, bias = _value(values, f"{node}.weight"), _value(values, f"{node}.bias")
    classes = len(bias) // 4
    hidden = len(weight) // 4 // classes
    rows = words(weight, "f")  # [hidden, classes]: x @ weight
    transposed = array.array("f", (rows[i * classes + c] for c in range(classes) for i in range(hidden)))
    if sys.byteorder == "big":
        transposed.byteswap()
    tensors = {"weight": ("F32", (classes, hidden), transposed.tobytes()), "bias": ("F32", (classes,), bias)}
    return write_safetensors(tensors, {"format": "pt"})


def merged_model(program: ValidProgram, base: TensorFile, merged: dict[str, bytes]) -> bytes:
    """The base model's file with each adapted weight merged (see the module's contract); `merged` holds
    the merge function's outputs (`merged/<node>-w.value`)."""
    tensors = {k: (t.dtype, t.shape, bytes(t.data)) for k, t in base.tensors.items()}
    for adapter in adapters(program):
        if adapter.tensor not in tensors:
            raise ValueError(f"the base file lacks {adapter.tensor!r}, which the program adapts")
        tensors[adapter.tensor] = ("F32", (adapter.out, adapter.inp), _value(merged, MERGED + adapter.weight))
    return write_safetensors(tensors, base.metadata)


def trained_model(base: TensorFile, trained: dict[str, bytes]) -> bytes:
    """The base model's file with each tensor `trained` names (by its key in the file) replaced by its
    trained value, every other tensor and the metadata as they were."""
    tensors = {k: (t.dtype, t.shape, bytes(t.data)) for k, t in base.tensors.items()}
    for key, value in trained.items():
        if key not in tensors:
            raise ValueError(f"the base file lacks {key!r}, which the program trained")
        dtype, shape, old = tensors[key]
        if len(value) != len(old):
            raise ValueError(f"the trained {key!r} holds {len(value):,} bytes, the base file's {len(old):,}")
        tensors[key] = (dtype, shape, value)
    return write_safetensors(tensors, base.metadata)


def _value(values: dict[str, bytes], name: str) -> bytes:
    if name not in values:
        raise ValueError(f"the trained values lack {name!r}")
    return values[name]
