"""The statistics and linear-algebra ops' PyTorch lowerings (roll, std_error, sort, quantile, solve, inverse,
diagonal, checkerboard) against the float64 reference: each op's values, read through metrics of a small
training program, from model.py in float64 and from a Scellis session on the reference device."""

from __future__ import annotations

import asyncio
import importlib.util
import struct
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from scellis.datasets import Split
from scellis.graph import Program, validate
from scellis.levels import Level
from scellis.runtime.reference.device import ReferenceDevice
from scellis.session import Session
from scellis.torchexport.model import model_source

torch = pytest.importorskip(
    "torch", reason="PyTorch is not installed: scripts/setup installs it from requirements-dev.txt"
)

ROWS, N = 8, 4


def program() -> dict[str, Any]:
    """Well-conditioned 4x4 matrices a (diagonally dominant), each op's result picked by element metrics."""
    p = Program("statistics")
    a = p.input("a", [N, N])
    y = p.input("y", [], dtype="int32", role="labels")
    rolled = p.roll(a, shift=1, axis=1, id="rolled")
    picks = {
        "rolled": (rolled, [1, 0, 2]),
        "se": (p.std_error(a, axes=[1], id="se"), [2, 3]),
        "sorted": (p.sort(a, axis=-1, id="sorted"), [3, 2, 1]),
        "median": (p.quantile(a, q=0.5, axis=2, id="median"), [4, 1]),
        "q90": (p.quantile(a, q=0.9, axis=0, id="q90"), [2, 3]),
        "solved": (p.solve(a, rolled, id="solved"), [5, 1, 1]),
        "inverse": (p.inverse(a, id="inverse"), [6, 2, 3]),
        "diagonal": (p.diagonal(a, id="diag"), [7, 2]),
        "board": (p.add(a, p.checkerboard(shape=[N, N], parity=1, id="board"), id="boarded"), [0, 1, 2]),
    }
    for name, (ref, index) in picks.items():
        p.add_metric(p.element(ref, index=index, id=f"pick-{name}"))
    logits = p.linear(p.flatten(a), 3)
    p.set_loss(p.cross_entropy(logits, y))
    p.set_loop(epochs=1, batch_size=ROWS)
    return p.to_json()


def data() -> Split:
    rng = np.random.default_rng(3)
    a = rng.standard_normal((ROWS, N, N)) + 6 * np.eye(N)
    return Split(a.astype("<f4").tobytes(), struct.pack(f"<{ROWS}i", *[0] * ROWS), N * N)


def test_each_op_agrees_with_the_reference(tmp_path: Path) -> None:
    prog, split = program(), data()

    async def scellis() -> tuple[dict[str, float], dict[str, Any]]:
        session = Session(prog, ReferenceDevice(), seed=1, level=Level.PROD, eval_rows=ROWS)
        await session.start(split)
        params = await session.tensors([s.name for s in session.compiled.forward.params])
        return await session.evaluate(split), params

    want, params = asyncio.run(scellis())
    (tmp_path / "model.py").write_text(model_source(validate(prog), "a test"))
    spec = importlib.util.spec_from_file_location("statistics_model", tmp_path / "model.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    torch.set_default_dtype(torch.float64)
    try:
        model = module.Model()
        model.load_state_dict(
            {
                n: torch.tensor(np.frombuffer(t.data, "<f4").reshape(t.shape).astype(np.float64))
                for n, t in params.items()
            }
        )
        model.eval()
        a = torch.tensor(np.frombuffer(split.features, "<f4").reshape(ROWS, N, N).astype(np.float64))
        with torch.no_grad():
            got = model(a, torch.zeros(ROWS, dtype=torch.int64))
    finally:
        torch.set_default_dtype(torch.float32)
    assert len(want) == 10  # the loss and nine picks
    for name, value in want.items():
        key = name.removeprefix("metric/")
        assert float(got[key]) == pytest.approx(value, rel=1e-5, abs=1e-6), key
