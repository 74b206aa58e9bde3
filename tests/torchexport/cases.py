"""The programs the PyTorch export is checked on, their data, and both sides of a comparison: a Scellis
session run step by step, and the exported train.py run as a subprocess (one process or torchrun)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from scellis.datasets import Split, digits_csv, read_chars, read_digits, zen_of_python
from scellis.examples import char_transformer, digits_cnn, digits_mlp
from scellis.levels import Level
from scellis.manifest.pins import installed_engine
from scellis.models.bert import BertConfig, bert_tensors
from scellis.models.finetune import TextSettings, pin_of, programs, text_data
from scellis.models.safetensors import read_safetensors
from scellis.session import Session
from scellis.store.tensorfile import Tensor
from scellis.torchexport.bundle import Start, export_files
from tests.fixtures.tiny_bert import CONFIG, tiny_bert_files, tiny_texts_csv

Splits = tuple[Split, Split]


def without_dropout(program: dict[str, Any]) -> dict[str, Any]:
    """The program with every dropout at p = 0: torch's masks are not Scellis's, so equivalence runs without."""
    out = json.loads(json.dumps(program))
    for node in out["nodes"]:
        if node["op"] == "dropout":
            node.setdefault("params", {})["p"] = 0.0
    return out


def augmented(program: dict[str, Any], after: str) -> dict[str, Any]:
    """The program with a random crop (1 pixel), a random flip and Gaussian noise after node `after`: draws
    from the `augment` substream, which the export reproduces."""
    out = json.loads(json.dumps(program))
    chain = [("crop", "random_crop", {"padding": 1}), ("flip", "random_flip", {"p": 0.5}),
             ("noise", "gaussian_noise", {"std": 0.05})]  # fmt: skip
    for edge in out["edges"]:
        if edge["from"]["node"] == after:
            edge["from"]["node"] = chain[-1][0]
    source = after
    for node, op, params in chain:
        out["nodes"].append({"id": node, "op": op, "params": params})
        out["edges"].append({"from": {"node": source, "port": "out"}, "to": {"node": node, "port": "x"}})
        source = node
    return out


def digits() -> Splits:
    return read_digits(digits_csv().read_bytes())


def chars() -> Splits:
    train, test, _ = read_chars(zen_of_python())
    return train, test


def tiny_encoder(way: str = "lora") -> tuple[dict[str, Any], Splits, bytes]:
    """The small BERT model with LoRA adapters (`lora`, or `qlora`: on an NF4 base), batch 4, dropout off;
    its texts; its weights."""
    files = tiny_bert_files()
    raw = files["model.safetensors"]
    config = BertConfig.read(CONFIG)
    keys = bert_tensors(config, read_safetensors(raw))
    settings = TextSettings("tiny", length=8, batch=4, epochs=3)
    program = next(p for c, _, p in programs(config, keys, pin_of(raw), settings, 2) if c == way)
    train, test, _ = text_data({**files, "texts.csv": tiny_texts_csv(), "text.json": settings.to_bytes()})
    return without_dropout(program), (train, test), raw


@dataclass(frozen=True)
class Case:
    name: str
    program: Callable[[], dict[str, Any]]
    data: Callable[[], Splits]
    weights: Callable[[], bytes | None] = lambda: None


CASES = {
    "digits MLP": Case("digits MLP", digits_mlp, digits),
    "digits CNN": Case("digits CNN", lambda: without_dropout(digits_cnn()), digits),
    "digits CNN, augmented": Case(
        "digits CNN, augmented", lambda: augmented(without_dropout(digits_cnn()), "image"), digits
    ),
    "char transformer": Case("char transformer", char_transformer, chars),
    "pretrained encoder": Case(
        "pretrained encoder", lambda: tiny_encoder()[0], lambda: tiny_encoder()[1], lambda: tiny_encoder()[2]
    ),
    "pretrained encoder, NF4 base": Case(
        "pretrained encoder, NF4 base",
        lambda: tiny_encoder("qlora")[0],
        lambda: tiny_encoder("qlora")[1],
        lambda: tiny_encoder("qlora")[2],
    ),
}


@dataclass
class ScellisRun:
    start: dict[str, Tensor]  # every parameter and state at init, by name
    losses: list[float]  # each step's loss, as the session reads it (float32)
    end: dict[str, Tensor]  # what a checkpoint holds after the steps
    session: Session


def scellis_run(
    program: dict[str, Any], device: Any, data: Splits, *, steps: int, seed: int, level: Level, weights: bytes | None
) -> ScellisRun:
    train, test = data

    async def go() -> ScellisRun:
        session = Session(program, device, seed=seed, level=level, eval_rows=test.n, weights=weights)
        await session.start(train)
        forward = session.compiled.forward
        start = await session.tensors([s.name for s in forward.params] + [s.name for s in forward.states])
        losses = []
        for _ in range(steps):
            await session.run(train, test, steps=1)
            losses.append(session.last_loss)
        return ScellisRun(start, losses, await session.tensors(session.kept), session)

    return asyncio.run(go())


def export(program: dict[str, Any], run: ScellisRun, data: Splits, *, seed: int, level: Level, into: Path) -> Path:
    files = export_files(
        program, run.session.compiled, level=level, tensors=run.start, start=Start(seed=seed),
        train=data[0], test=data[1], engine=installed_engine(),
    )  # fmt: skip
    for name, content in files.items():
        (into / name).parent.mkdir(parents=True, exist_ok=True)
        (into / name).write_bytes(content)
    return into


@dataclass
class TorchRun:
    losses: list[float]
    end: dict[str, np.ndarray]
    checkpoint: Path
    output: str


def run_train(folder: Path, *args: str, processes: int = 1, out: str = "checkpoints") -> TorchRun:
    """train.py in `folder` with `args`, alone or under torchrun with `processes` processes (gloo, CPU)."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONWARNINGS": "ignore"}
    if processes == 1:
        command = [sys.executable, "train.py"]
    else:
        command = [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc_per_node",
            str(processes),
            "train.py",
        ]
    done = subprocess.run(
        [*command, "--out", out, *args], cwd=folder, env=env, capture_output=True, text=True, timeout=600, check=False
    )
    if done.returncode:
        raise AssertionError(f"train.py failed ({done.returncode}):\n{done.stdout}\n{done.stderr[-4000:]}")
    log = json.loads((folder / out / "losses.json").read_text())
    checkpoint = sorted((folder / out).glob("step-*.safetensors"))[-1]
    return TorchRun([loss for _, loss in log["losses"]], tensors_of(checkpoint.read_bytes()), checkpoint, done.stderr)


def tensors_of(data: bytes) -> dict[str, np.ndarray]:
    kinds = {"F32": "<f4", "I32": "<i4"}
    return {
        name: np.frombuffer(bytes(t.data), kinds[t.dtype]).reshape(t.shape).astype(np.float64)
        for name, t in read_safetensors(data).tensors.items()
    }


def arrays(tensors: dict[str, Tensor]) -> dict[str, np.ndarray]:
    kinds = {"F32": "<f4", "I32": "<i4"}
    return {n: np.frombuffer(t.data, kinds[t.dtype]).reshape(t.shape).astype(np.float64) for n, t in tensors.items()}


def worst(a: dict[str, np.ndarray], b: dict[str, np.ndarray], skip: frozenset[str] = frozenset()) -> tuple[float, str]:
    """The largest |a - b| / (1 + |a|) over the tensors both hold (but `skip`), and where."""
    assert set(a) == set(b), f"other names: {sorted(set(a) ^ set(b))}"
    found = (0.0, "")
    for name in sorted(set(a) - skip):
        if a[name].size:
            err = float(np.max(np.abs(a[name] - b[name]) / (1 + np.abs(a[name]))))
            found = max(found, (err, name))
    return found
