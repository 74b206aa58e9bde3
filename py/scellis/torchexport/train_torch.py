"""Train the exported program with PyTorch, as Scellis's loop program would: the same batches in the same
order (the epoch orders Scellis drew from its `shuffle` substream), the same optimizer, schedule, clipping
and rules (skip a non-finite batch, learning rate on a plateau, stop, checkpoint), evaluation on the
held-out split at the same cadence. A program without a loss (a simulation, an analysis) runs its steps
the same way, carrying its states, and computes its results where Scellis would; its draws (and a training
program's augmentations) are Scellis's Philox draws, the same numbers.

    python train.py [--steps N] [--dtype float32|float64] [--device cpu|cuda] [--resume CHECKPOINT]
    torchrun --nproc_per_node=N train.py --strategy ddp|fsdp [...]

Under torchrun each rank takes its 1/N of every batch (the global batch is the program's batch) and batch
norm's statistics are the global batch's, so N processes compute what one does, up to the order of float
additions. Checkpoints are safetensors files named by the program's parameter and state names (with the
optimizer's state as Scellis names it); `scellis import torch CHECKPOINT` turns one into a Scellis
checkpoint that resumes in the page or the CLI. Dropout masks come from torch's generator (seeded with
--seed plus the rank), not Scellis's substream. Needs PyTorch only.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import hashlib
import json
import math
import os
import struct
import sys
import time
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from model import Model  # type: ignore[import-not-found]  # the export's model.py, beside this file

CONFIG: dict[str, Any] = {}  # the run's settings, written by `scellis export torch`

HERE = Path(__file__).resolve().parent
# U32 (NF4 words) is read as int32 of the same bits: torch's uint32 has few operations
DTYPES = {"F32": torch.float32, "F64": torch.float64, "I32": torch.int32, "I64": torch.int64, "U32": torch.int32}
NAMES = {torch.float32: "F32", torch.float64: "F64", torch.int32: "I32", torch.int64: "I64"}
TORCH_STATE = {"opt.m": "exp_avg", "opt.v": "exp_avg_sq", "opt.velocity": "momentum_buffer"}


# -- safetensors, read and written with torch alone ---------------------------------------------------------


def read_tensors(path: Path) -> tuple[dict[str, torch.Tensor], dict[str, str]]:
    data = path.read_bytes()
    (size,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + size])
    metadata = header.pop("__metadata__", {})
    body = memoryview(data)[8 + size :]
    out = {}
    for name, entry in header.items():
        if entry["dtype"] not in DTYPES:
            raise SystemExit(f"{path}: tensor {name!r} has dtype {entry['dtype']}, not one of {', '.join(DTYPES)}")
        start, stop = entry["data_offsets"]
        raw = bytearray(body[start:stop])
        flat = (
            torch.frombuffer(raw, dtype=DTYPES[entry["dtype"]]) if raw else torch.empty(0, dtype=DTYPES[entry["dtype"]])
        )
        out[name] = flat.reshape(entry["shape"])
    return out, metadata


def write_tensors(path: Path, tensors: dict[str, torch.Tensor], metadata: dict[str, str]) -> None:
    header: dict[str, Any] = {"__metadata__": metadata}
    chunks, offset = [], 0
    for name in sorted(tensors):
        t = tensors[name].detach().cpu().contiguous()
        raw = ctypes.string_at(t.data_ptr(), t.numel() * t.element_size()) if t.numel() else b""
        header[name] = {"dtype": NAMES[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(raw)]}
        chunks.append(raw)
        offset += len(raw)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(struct.pack("<Q", len(text)) + text + b"".join(chunks))
    tmp.replace(path)


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# -- the processes ------------------------------------------------------------------------------------------


class World:
    """This process's rank among `size` (1 without torchrun) and the device it computes on."""

    def __init__(self, strategy: str, device: str) -> None:
        self.size = int(os.environ.get("WORLD_SIZE", "1"))
        self.rank = int(os.environ.get("RANK", "0"))
        if self.size > 1 and strategy == "none":
            raise SystemExit("train.py runs under torchrun: give --strategy ddp or fsdp")
        if device == "cuda":
            self.device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
            torch.cuda.set_device(self.device)
        else:
            self.device = torch.device("cpu")
        if self.size > 1:
            dist.init_process_group("nccl" if device == "cuda" else "gloo")

    @property
    def main(self) -> bool:
        return self.rank == 0

    def any(self, flag: bool) -> bool:
        if self.size == 1:
            return flag
        t = torch.tensor([1.0 if flag else 0.0], device=self.device)
        dist.all_reduce(t)
        return bool(t.item() > 0)

    def close(self) -> None:
        """Every rank done, then the process group destroyed while Python is whole: collective work the run's
        objects still hold is freed first (freed during interpreter shutdown instead, gloo aborts)."""
        if self.size > 1:
            gc.collect()
            dist.barrier()
            dist.destroy_process_group()
            gc.collect()


def wrap(model: torch.nn.Module, strategy: str, world: World) -> torch.nn.Module:
    if world.size == 1 or strategy == "none":
        return model
    if strategy == "ddp":
        from torch.nn.parallel import DistributedDataParallel

        ids = [world.device.index] if world.device.type == "cuda" else None
        return DistributedDataParallel(model, device_ids=ids, broadcast_buffers=False)
    from torch.distributed.fsdp import fully_shard

    for child in model.children():
        if any(True for _ in child.parameters()):
            fully_shard(child)
    fully_shard(model)
    return model


# -- the optimizer, the schedule, the rules -----------------------------------------------------------------


def make_optimizer(params: list[torch.nn.Parameter]) -> torch.optim.Optimizer:
    o = CONFIG["optimizer"]
    kind, decay = o["kind"], o.get("weight_decay", 0.0)
    if kind == "sgd":
        return torch.optim.SGD(params, lr=o["lr"], weight_decay=decay)
    if kind == "momentum":
        return torch.optim.SGD(params, lr=o["lr"], momentum=o["momentum"], nesterov=o["nesterov"], weight_decay=decay)
    cls = torch.optim.Adam if kind == "adam" else torch.optim.AdamW
    return cls(params, lr=o["lr"], betas=(o["beta1"], o["beta2"]), eps=o["eps"], weight_decay=decay)


def learning_rate(step: int) -> float:
    """The schedule's rate for update number `step` (0 for the first): a linear warmup, then constant, step
    decay or cosine decay counted from the warmup's end (Scellis's optim.schedules)."""
    o = CONFIG["optimizer"]
    s, lr = o["schedule"], o["lr"]
    after = max(step - s["warmup_steps"], 0) if s["warmup_steps"] else step
    if s["kind"] == "step":
        rate = lr * s["gamma"] ** math.floor(after / s["step_size"])
    elif s["kind"] == "cosine":
        progress = min(after, s["total_steps"]) / s["total_steps"]
        rate = s["min_lr"] + (lr - s["min_lr"]) * 0.5 * (1 + math.cos(math.pi * progress))
    else:
        rate = lr
    if s["warmup_steps"]:
        rate *= min(1.0, (step + 1) / s["warmup_steps"])
    return rate


class Loop:
    """The host's side of the loop program (Scellis's loop.state): what each rule has seen and decided."""

    def __init__(self, state: dict[str, Any] | None) -> None:
        state = state or {"lr_scale": 1.0, "best": {}, "waits": {}, "skipped": 0, "stopped": False, "events": []}
        self.lr_scale = float(state["lr_scale"])
        self.best = {int(k): float(v) for k, v in state["best"].items()}
        self.waits = {int(k): int(v) for k, v in state["waits"].items()}
        self.skipped, self.stopped = int(state["skipped"]), bool(state["stopped"])
        self.events: list[list[Any]] = [list(e) for e in state["events"]]

    def to_json(self) -> dict[str, Any]:
        return {
            "lr_scale": self.lr_scale,
            "best": {str(k): v for k, v in self.best.items()},
            "waits": {str(k): v for k, v in self.waits.items()},
            "skipped": self.skipped,
            "stopped": self.stopped,
            "events": self.events,
        }

    def log(self, step: int, epoch: int, text: str) -> None:
        self.events.append([step, epoch, text])
        if WORLD.main:
            print(f"step {step} (epoch {epoch}): {text}", file=sys.stderr)

    def act(self, rule: dict[str, Any], step: int, epoch: int, why: str) -> list[str]:
        out = []
        for action in rule["then"]:
            if isinstance(action, dict):
                scale = action["set_lr"]["scale"]
                before, self.lr_scale = self.lr_scale, self.lr_scale * scale
                self.log(step, epoch, f"learning rate x {scale:g} (scale {before:g} -> {self.lr_scale:g}), {why}")
            elif action == "stop":
                self.stopped = True
                self.log(step, epoch, f"stop, {why}")
            elif action == "checkpoint":
                self.log(step, epoch, f"checkpoint, {why}")
                out.append(action)
        return out

    def after_evaluation(self, step: int, epoch: int, metrics: dict[str, float]) -> list[str]:
        out = []
        for index, rule in enumerate(CONFIG["rules"]):
            if rule["on"] != "evaluation":
                continue
            plateau = (rule.get("if") or {}).get("plateau")
            if plateau is None:
                out += self.act(rule, step, epoch, "after every evaluation")
                continue
            value = metrics["loss" if plateau["metric"] == "loss" else f"metric/{plateau['metric']}"]
            sign = 1.0 if plateau.get("mode", "min") == "min" else -1.0
            best = self.best.get(index)
            if math.isfinite(value) and (best is None or sign * (best - value) > plateau.get("min_delta", 0.0)):
                self.best[index], self.waits[index] = value, 0
                continue
            self.waits[index] = self.waits.get(index, 0) + 1
            if self.waits[index] >= plateau["patience"]:
                self.waits[index] = 0
                since = "its first finite value" if best is None else f"{best:.6g}"
                why = f"{plateau['metric']} has not improved on {since} for {plateau['patience']} evaluations"
                out += self.act(rule, step, epoch, why)
        return out

    def after_step(self, step: int, epoch: int) -> list[str]:
        out = []
        for rule in CONFIG["rules"]:
            every = (rule.get("if") or {}).get("every")
            if rule["on"] == "step" and every and step % every == 0:
                out += self.act(rule, step, epoch, f"every {every} steps")
        return out

    def after_epoch(self, step: int, epoch: int) -> list[str]:
        out = []
        for rule in CONFIG["rules"]:
            every = (rule.get("if") or {}).get("every")
            if rule["on"] == "epoch" and (not every or epoch % every == 0):
                out += self.act(rule, step, epoch, f"after epoch {epoch}")
        return out

    def at_end(self, step: int, epoch: int) -> list[str]:
        out = []
        for rule in CONFIG["rules"]:
            if rule["on"] == "end":
                out += self.act(rule, step, epoch, "at the end of the run")
        return out

    def note_skips(self, step: int, epoch: int, skipped: int, last: int) -> None:
        new = skipped - self.skipped
        if new <= 0:
            return
        self.skipped = skipped
        reason = "the loss or a gradient was not finite"
        if new == 1:
            self.log(last + 1, epoch, f"skipped, {reason}")
        else:
            self.log(step, epoch, f"{new} steps skipped, the last at step {last + 1}: {reason}")


def watched() -> tuple[str, ...]:
    for rule in CONFIG["rules"]:
        if rule["on"] == "step" and "non_finite" in (rule.get("if") or {}):
            return tuple(rule["if"]["non_finite"])
    return ()


# -- the run ------------------------------------------------------------------------------------------------


class Run:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.dtype = torch.float64 if args.dtype == "float64" else torch.float32
        torch.set_default_dtype(self.dtype)
        torch.manual_seed(args.seed + WORLD.rank)
        self.trains = CONFIG["trains"]
        self.data = {split: self.split(split) for split in ("train", "test")} if CONFIG["inputs"] else {}
        shuffled = CONFIG["shuffle"] and CONFIG["inputs"]
        self.orders = read_tensors(HERE / "data" / "orders.safetensors")[0]["orders"] if shuffled else None
        model = Model(seed=CONFIG["seed"]) if CONFIG["draws"] else Model()
        weights, _ = read_tensors(HERE / "weights.safetensors")
        self.names = [name for name, p in model.named_parameters() if p.requires_grad] if self.trains else []
        resumed: dict[str, Any] = {}
        if args.resume:
            tensors, metadata = read_tensors(Path(args.resume))
            resumed = json.loads(metadata["scellis.torch"])
            if resumed["program"] != CONFIG["program"]["key"]:
                raise SystemExit(f"{args.resume} is a checkpoint of program {resumed['program']}, not of this export")
            weights.update(tensors)
        self.load(model, weights)
        self.model = wrap(model.to(WORLD.device), args.strategy, WORLD)
        self.params = dict(model.named_parameters())  # by the program's names (DDP's wrapper adds "module.")
        self.optimizer = make_optimizer([self.params[n] for n in self.names]) if self.trains else None
        at = resumed or CONFIG["start"]
        self.step, self.epoch, self.cursor = at["step"], at["epoch"], at["cursor"]
        self.updates = at["updates"]  # the optimizer's step counter (skipped steps do not count)
        self.seen, self.skipped, self.last_skipped = at.get("counters", [self.step, 0, 0])
        self.loop = Loop(at.get("loop"))
        self.positions = dict(at["positions"])
        self.metrics = dict(at.get("metrics", {}))
        if any(name.startswith("opt.") for name in weights):  # exported from a checkpoint, or resumed
            self.load_optimizer(weights)
        self.written: list[list[Any]] = list(at.get("written", []))
        self.losses: list[list[float]] = []  # [step, loss] of each step, read back
        self.results: list[list[Any]] = []  # [step, results] of each evaluation of a program without a loss
        self.pending: list[tuple[int, torch.Tensor]] = []  # the steps' losses, not read back yet
        self.per_epoch = self.examples() // CONFIG["batch"] if self.data else CONFIG["steps"]
        self.clock = (time.perf_counter(), self.step)  # when the timed steps began, and the step then
        self.warm = False  # whether this process has run a step

    def examples(self, split: str = "train") -> int:
        return next(iter(self.data[split].values())).shape[0]

    def split(self, name: str) -> dict[str, torch.Tensor]:
        tensors, _ = read_tensors(HERE / "data" / f"{name}.safetensors")
        out = {}
        for key, value in tensors.items():
            on = value.to(WORLD.device)
            out[key] = on.long() if on.dtype == torch.int32 else on.to(self.dtype)
        return out

    def load(self, model: torch.nn.Module, tensors: dict[str, torch.Tensor]) -> None:
        own = model.state_dict()
        missing = sorted(set(own) - set(tensors))
        if missing:
            raise SystemExit(f"weights.safetensors lacks {', '.join(missing[:5])}")
        model.load_state_dict({k: tensors[k].to(own[k].dtype) for k in own}, strict=True)

    def load_optimizer(self, tensors: dict[str, torch.Tensor]) -> None:
        """The optimizer's state from a checkpoint's opt.* tensors (full tensors; sharded by FSDP here)."""
        from torch.distributed.checkpoint.state_dict import StateDictOptions, set_optimizer_state_dict

        assert self.optimizer is not None, "a program without a loss has no optimizer state"
        kind = CONFIG["optimizer"]["kind"]
        state: dict[str, dict[str, torch.Tensor]] = {}
        for name in self.names:
            entry: dict[str, torch.Tensor] = {}
            for prefix, key in TORCH_STATE.items():
                if f"{prefix}/{name}" in tensors:
                    entry[key] = tensors[f"{prefix}/{name}"].to(self.dtype).to(WORLD.device)
            if kind in ("adam", "adamw"):
                entry["step"] = torch.tensor(float(self.updates))
            if entry:
                state[name] = entry
        groups = [
            {**{k: v for k, v in g.items() if k != "params"}, "params": self.names} for g in self.optimizer.param_groups
        ]
        options = StateDictOptions(full_state_dict=True)
        full: Any = {"state": state, "param_groups": groups}
        set_optimizer_state_dict(self.model, self.optimizer, full, options=options)

    def batch(self, split: str, rows: torch.Tensor) -> list[torch.Tensor]:
        data = self.data[split]
        return [data[key].index_select(0, rows) for key in CONFIG["inputs"]]

    def order(self) -> torch.Tensor | None:
        if not self.data:
            return None
        n = self.examples()
        if self.orders is None:
            return torch.arange(n, device=WORLD.device)
        if self.epoch >= self.orders.shape[0]:
            raise SystemExit(
                f"the export holds epoch orders for {self.orders.shape[0]} epochs; export again with more epochs"
            )
        return self.orders[self.epoch].to(WORLD.device).long()

    def draws(self, latest: bool = False, first_row: int = 0) -> dict[str, Any]:
        """forward's arguments for the draws of a step: each substream's position for it (`latest`: the last
        step's, which a program without a loss computes its results with), this rank's first row."""
        if not CONFIG["draws"]:
            return {}
        at = {s: self.positions.get(s, 0) for s in CONFIG["per_step_substreams"]}
        if latest:
            at = {s: max(p - 1, 0) for s, p in at.items()}
        return {"positions": at, "first_row": first_row}

    def advance(self) -> None:
        """The step is taken: each substream it draws from moves on by one."""
        self.step += 1
        for substream in CONFIG["per_step_substreams"]:
            self.positions[substream] = self.positions.get(substream, 0) + 1

    @torch.no_grad()
    def simulate_step(self, rows: torch.Tensor | None) -> None:
        """A step of a program without a loss: forward in training mode sets the states' next values."""
        self.model.train()
        self.model(*(self.batch("train", rows) if rows is not None else []), **self.draws())
        self.seen += 1
        self.advance()

    def train_step(self, rows: torch.Tensor | None) -> None:
        if not self.trains:
            return self.simulate_step(rows)
        assert rows is not None and self.optimizer is not None
        batch = CONFIG["batch"]
        share = batch // WORLD.size
        mine = rows[WORLD.rank * share : (WORLD.rank + 1) * share]
        self.model.train()
        out = self.model(*self.batch("train", mine), **self.draws(first_row=WORLD.rank * share))
        loss = out["loss"]
        sums = CONFIG["loss_reduction"] == "sum"  # ranks' gradients are averaged: a sum needs them added
        scaled = loss * WORLD.size if sums else loss
        scaled.backward()
        grads = [self.params[n].grad for n in self.names]
        watch = watched()
        bad = False
        if "loss" in watch:
            bad = bad or not bool(torch.isfinite(loss.detach()).all())
        if "gradients" in watch:
            bad = bad or not all(bool(torch.isfinite(g).all()) for g in grads if g is not None)
        bad = WORLD.any(bad) if watch else False
        if not bad:
            clip = CONFIG["optimizer"].get("clip_norm")
            if clip is not None:
                torch.nn.utils.clip_grad_norm_([self.params[n] for n in self.names], clip)
            rate = learning_rate(self.updates) * self.loop.lr_scale
            for group in self.optimizer.param_groups:
                group["lr"] = rate
            self.optimizer.step()
            self.updates += 1
        else:
            self.skipped, self.last_skipped = self.skipped + 1, self.seen
        self.seen += 1
        self.optimizer.zero_grad(set_to_none=True)
        self.advance()
        self.pending.append((self.step, loss.detach()))
        return None

    @torch.no_grad()
    def evaluate(self) -> dict[str, float]:
        """Loss and metrics on the held-out split; for a program without a loss, its results from the states
        as they are (and the first batch of its data, in order)."""
        self.model.eval()
        if not self.trains:
            rows = torch.arange(CONFIG["batch"], device=WORLD.device) if self.data else None
            out = self.model(*(self.batch("train", rows) if rows is not None else []), **self.draws(latest=True))
            return {f"metric/{key}": float(value) for key, value in out.items()}
        n = self.examples("test")
        size = CONFIG["eval_batch"]
        sums: dict[str, float] = {}
        for start in range(0, n, size):
            rows = torch.arange(start, min(start + size, n), device=WORLD.device)
            out = self.model(*self.batch("test", rows))
            for key, value in out.items():
                name = "loss" if key == "loss" else f"metric/{key}"
                sums[name] = sums.get(name, 0.0) + float(value) * len(rows)
        return {name: total / n for name, total in sums.items()}

    def evaluate_and_decide(self) -> None:
        self.metrics = self.evaluate()
        epoch = self.epoch + 1
        if watched():
            self.loop.note_skips(self.step, epoch, self.skipped, self.last_skipped)
        for action in self.loop.after_evaluation(self.step, epoch, self.metrics):
            self.checkpoint(action)
        if not self.trains:
            self.results.append([self.step, self.metrics])
        if WORLD.main:
            shown = ", ".join(f"{k.removeprefix('metric/')} {v:.6g}" for k, v in self.metrics.items())
            print(
                f"step {self.step} (epoch {epoch}): {'held out' if self.trains else 'results'}: {shown}",
                file=sys.stderr,
            )

    def run(self) -> None:
        epochs, every = CONFIG["epochs"], CONFIG["evaluate_every"]
        left = self.args.steps
        self.clock = (time.perf_counter(), self.step)
        while self.epoch < epochs and not self.loop.stopped:
            left = self.steps_of_epoch(left)
            if self.cursor < self.per_epoch:
                break  # paused, or a rule stopped the run, before the epoch's end
            if not every:
                self.evaluate_and_decide()
            self.epoch, self.cursor = self.epoch + 1, 0
            for action in self.loop.after_epoch(self.step, self.epoch):
                self.checkpoint(action)
            if WORLD.main and self.trains:
                print(f"epoch {self.epoch}: loss {self.flush():.6g}", file=sys.stderr)
        if self.loop.stopped or self.epoch >= epochs:
            for action in self.loop.at_end(self.step, self.epoch):
                self.checkpoint(action)
        self.flush()
        began, first = self.clock
        seconds, done = time.perf_counter() - began, self.step - first
        final = self.checkpoint("final")
        if WORLD.main:
            rate = done / seconds if seconds > 0 else 0.0
            timed = f"{done} step{'' if done == 1 else 's'} in {seconds:.2f} s after the first ({rate:.1f} steps/s)"
            print(f"{timed}; final checkpoint {final}")
            log = Path(self.args.out) / "losses.json"
            record = {"losses": self.losses, "metrics": self.metrics, "steps_per_s": rate}
            if not self.trains:
                record["results"] = self.results
            log.write_text(json.dumps(record))

    def steps_of_epoch(self, left: int | None) -> int | None:
        """The epoch's remaining steps, or `left` of them (None: all); returns how many of `left` remain."""
        order = self.order()
        if self.cursor == 0 and CONFIG["shuffle"]:
            self.positions["shuffle"] = self.epoch + 1
        every, batch = CONFIG["evaluate_every"], CONFIG["batch"]
        while self.cursor < self.per_epoch and not self.loop.stopped and left != 0:
            start = self.cursor * batch
            due = self.loop.after_step(self.step + 1, self.epoch + 1)  # logged before the step, as Scellis does
            self.train_step(order[start : start + batch] if order is not None else None)
            if not self.warm:  # the rate is timed from here: the first step warms the device up
                self.clock, self.warm = (time.perf_counter(), self.step), True
            self.cursor += 1
            left = None if left is None else left - 1
            if every and self.step % every == 0:
                self.evaluate_and_decide()
            for action in due:
                self.checkpoint(action)
        return left

    def flush(self) -> float:
        """The losses of the steps since the last flush, read back (the mean over the ranks: the global
        batch's); returns the latest. Reading them only here keeps the device from waiting on the host."""
        if self.pending:
            values = torch.stack([loss for _, loss in self.pending]).to(torch.float64)
            if WORLD.size > 1:
                dist.all_reduce(values)
                values /= WORLD.size
            if CONFIG["loss_reduction"] == "sum":
                values *= WORLD.size
            self.losses += [[step, value] for (step, _), value in zip(self.pending, values.tolist(), strict=True)]
            self.pending = []
        return self.losses[-1][1] if self.losses else float("nan")

    def tensors(self) -> dict[str, torch.Tensor]:
        """What a checkpoint holds, by Scellis's names: the kept parameters and states, the optimizer's state."""
        from torch.distributed.checkpoint.state_dict import (
            StateDictOptions,
            get_model_state_dict,
            get_optimizer_state_dict,
        )

        options = StateDictOptions(full_state_dict=True, cpu_offload=True)
        model: dict[str, Any] = get_model_state_dict(self.model, options=options)
        optim: Any = {}
        if self.optimizer is not None:
            optim = get_optimizer_state_dict(self.model, self.optimizer, options=options)
        if not WORLD.main:  # the full tensors are gathered on rank 0 only
            return {}
        kept = CONFIG["checkpoint"]
        out: dict[str, torch.Tensor] = {}
        for name in kept["model"]:
            if name in model:
                out[name] = model[name].detach().to(torch.float32)
        state = optim.get("state", {})
        for name in self.names:
            entry = state.get(name, {})
            for prefix, key in TORCH_STATE.items():
                if f"{prefix}/{name}" in kept["optimizer"]:
                    value = entry.get(key)
                    if value is None:
                        value = torch.zeros_like(out.get(name, model[name]))
                    out[f"{prefix}/{name}"] = value.detach().to(torch.float32)
        if "opt.step" in kept["optimizer"]:
            out["opt.step"] = torch.tensor(self.updates, dtype=torch.int32)
        if watched():
            out["loop.seen"] = torch.tensor(self.seen, dtype=torch.int32)
            out["loop.skipped"] = torch.tensor(self.skipped, dtype=torch.int32)
            out["loop.last_skipped"] = torch.tensor(self.last_skipped, dtype=torch.int32)
        return out

    def checkpoint(self, why: str) -> str:
        tensors = self.tensors()
        folder = Path(self.args.out)
        path = folder / f"step-{self.step:08d}.safetensors"
        if WORLD.main:
            state = {
                "format": "scellis.torch-checkpoint/1",
                "program": CONFIG["program"]["key"],
                "level": CONFIG["program"]["level"],
                "step": self.step,
                "epoch": self.epoch,
                "cursor": self.cursor,
                "updates": self.updates,
                "counters": [self.seen, self.skipped, self.last_skipped],
                "positions": self.positions,
                "seed": CONFIG["seed"],
                "loop": self.loop.to_json(),
                "metrics": self.metrics,
                "loss": self.flush(),
                "why": why,
                "written": self.written,
                "by": f"PyTorch {torch.__version__} ({WORLD.device.type}, {self.args.dtype}, "
                f"{self.args.strategy if WORLD.size > 1 else 'one process'} x {WORLD.size})",
            }
            folder.mkdir(parents=True, exist_ok=True)
            write_tensors(path, tensors, {"scellis.torch": json.dumps(state, sort_keys=True)})
        if why != "final":
            self.written.append([self.step, path.name])
        return str(path)


def check_data() -> None:
    """Each data file is the one the export pinned (its SHA-256)."""
    for name, digest in CONFIG["files"].items():
        got = sha256(HERE / name)
        if got != digest:
            raise SystemExit(f"{name} has SHA-256 {got}, the export pinned {digest}: the data changed")


def positive(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number from 1, got {text!r}")
    return int(text)


def arguments(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=f"Train {CONFIG['program']['name']} as Scellis would, with PyTorch.")
    parser.add_argument(
        "--steps", type=positive, default=None, help="stop after this many steps (default: every epoch)"
    )
    parser.add_argument("--dtype", choices=["float32", "float64"], default="float32")
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--strategy", choices=["none", "ddp", "fsdp"], default="none", help="under torchrun")
    parser.add_argument("--resume", default=None, help="a checkpoint this script wrote")
    parser.add_argument("--seed", type=int, default=0, help="seed of torch's generator (dropout masks)")
    parser.add_argument("--out", default=str(HERE / "checkpoints"), help="folder of checkpoints and losses.json")
    return parser.parse_args(argv)


if __name__ == "__main__":
    ARGS = arguments()
    if int(os.environ.get("WORLD_SIZE", "1")) > 1 and not CONFIG["trains"]:
        raise SystemExit("the program has no loss, so no gradients to average: run it in one process")
    WORLD = World(ARGS.strategy, ARGS.device)
    if WORLD.size > 1 and CONFIG["loss_reduction"] is None:
        raise SystemExit("the loss is neither a batch mean nor a batch sum (cross_entropy, mse): run it in one process")
    if CONFIG["batch"] % WORLD.size:
        raise SystemExit(f"the batch of {CONFIG['batch']} does not split into {WORLD.size} equal parts")
    check_data()
    RUN = Run(ARGS)
    RUN.run()
    del RUN  # the model and optimizer go before the process group does
    WORLD.close()
