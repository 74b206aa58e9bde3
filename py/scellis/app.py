"""What the web app calls: train the built-in example on the page's device and report each epoch.
Runs in Pyodide; the page passes the data files and a callback, and opened the WebGPU device."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from scellis.datasets import from_files
from scellis.examples import digits_mlp
from scellis.levels import parse_level
from scellis.runtime.device import Device
from scellis.session import EpochResult, Session


async def _device(kind: str) -> Device:
    if kind == "webgpu":
        from scellis.runtime.browser_webgpu import BrowserWebGPU

        return BrowserWebGPU()
    if kind == "cpu":
        from scellis.runtime.cpu_device import CpuDevice

        return await CpuDevice.open()
    raise ValueError(f"unknown device kind {kind!r} (expected 'webgpu' or 'cpu')")


async def train_example(
    files: dict[str, bytes], device_kind: str, level: str, epochs: int, report: Callable[[str], None]
) -> str:
    """Train the digits MLP at the chosen determinism level; `report` receives each epoch as JSON;
    returns the last epoch as JSON."""
    train, test = from_files(files)
    device = await _device(device_kind)
    session = Session(digits_mlp(), device, seed=1, level=parse_level(level), eval_batch=test.n)

    def send(result: EpochResult) -> None:
        report(json.dumps(_epoch_json(result, session)))

    results = await session.fit(train, test, epochs, send)
    return json.dumps(_epoch_json(results[-1], session))


def _epoch_json(result: EpochResult, session: Session) -> dict[str, Any]:
    """Epochs count from 1 on screen; metrics are the held-out split's (`loss`, `metric/<node>`); `notes`
    say what the level could not use on this device; `memory` is what the session holds on the device
    and the memory plan's verdict; where fast scales its loss, `loss_scale` is the scale the epoch's last
    step used."""
    out = {
        "epoch": result.epoch + 1,
        "steps": result.steps,
        "train_loss": result.loss,
        "test": result.metrics,
        "level": session.level.value,
        "notes": list(session.schedule.notes),
        "memory": {"bytes": session.plan.total, "verdict": session.verdict.color, "reasons": session.verdict.reasons},
    }
    return out if result.loss_scale is None else {**out, "loss_scale": result.loss_scale}
