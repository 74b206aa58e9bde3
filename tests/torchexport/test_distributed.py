"""The exported train.py under `torchrun --nproc_per_node=2` on CPU (gloo), with DDP and with FSDP: each rank
takes half of every batch, batch norm normalises by the global batch's statistics, and after 10 steps the
parameters, running statistics and optimizer state are those of one process within float reduction-order
tolerance (float32: 2e-5, float64: 1e-6, as |a - b| / (1 + |a|))."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("torch", reason="PyTorch is not installed: scripts/setup installs it from requirements-dev.txt")

from scellis.levels import Level
from scellis.runtime.reference.device import ReferenceDevice
from tests.torchexport.cases import CASES, export, run_train, scellis_run, worst

STEPS = 10


@pytest.fixture(scope="module", params=[("digits MLP", "float32"), ("digits CNN", "float64")], ids=lambda p: p[0])
def exported(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    name, dtype = request.param
    case = CASES[name]
    program, data = case.program(), case.data()
    ours = scellis_run(program, ReferenceDevice(), data, steps=0, seed=9, level=Level.PROD, weights=None)
    return export(program, ours, data, seed=9, level=Level.PROD, into=tmp_path_factory.mktemp("export")), dtype


@pytest.mark.parametrize("strategy", ["ddp", "fsdp"])
def test_two_processes_give_one_process_parameters(exported: tuple[Path, str], strategy: str) -> None:
    folder, dtype = exported
    args = ("--steps", str(STEPS), "--dtype", dtype)
    one = run_train(folder, *args, out=f"one-{dtype}")
    two = run_train(folder, *args, "--strategy", strategy, processes=2, out=f"{strategy}-{dtype}")
    assert "one process x 1" not in two.checkpoint.read_bytes()[:4096].decode(errors="replace")
    err, where = worst(one.end, two.end)
    assert err < (2e-5 if dtype == "float32" else 1e-6), f"{where} differs by {err:.3g}"
    assert max(abs(a - b) / (1 + abs(a)) for a, b in zip(one.losses, two.losses, strict=True)) < 2e-5


def test_a_batch_that_does_not_split_is_refused(exported: tuple[Path, str]) -> None:
    folder, _ = exported
    with pytest.raises(AssertionError, match="does not split into 3 equal parts"):
        run_train(folder, "--steps", "1", "--strategy", "ddp", processes=3, out="three")


@pytest.mark.parametrize("strategy", ["none", "fsdp"])
def test_resuming_train_py_goes_on_as_an_unbroken_run(exported: tuple[Path, str], strategy: str) -> None:
    """train.py --resume from its own checkpoint: parameters, optimizer state and place as an unbroken run's,
    in one process or sharded by FSDP (the full tensors loaded, then sharded)."""
    folder, dtype = exported
    unbroken = run_train(folder, "--steps", str(2 * STEPS), "--dtype", dtype, out=f"unbroken-{dtype}")
    half = run_train(folder, "--steps", str(STEPS), "--dtype", dtype, out=f"half-{dtype}")
    more = ("--strategy", strategy) if strategy != "none" else ()
    rest = run_train(
        folder, "--steps", str(STEPS), "--dtype", dtype, "--resume", str(half.checkpoint), *more,
        processes=2 if more else 1, out=f"rest-{strategy}-{dtype}",
    )  # fmt: skip
    assert rest.checkpoint.name == unbroken.checkpoint.name
    err, where = worst(unbroken.end, rest.end)
    assert err < (2e-5 if dtype == "float32" else 1e-6), f"{where} differs by {err:.3g}"


def test_augmented_batches_are_drawn_by_rows_of_the_global_batch(tmp_path: Path) -> None:
    """Random crop, flip and noise under DDP: each rank draws the numbers its rows get in the whole batch's
    draws (Scellis's substream), so two processes train as one does."""
    case = CASES["digits CNN, augmented"]
    program, data = case.program(), case.data()
    ours = scellis_run(program, ReferenceDevice(), data, steps=0, seed=3, level=Level.PROD, weights=None)
    folder = export(program, ours, data, seed=3, level=Level.PROD, into=tmp_path)
    args = ("--steps", "4", "--dtype", "float64")
    one = run_train(folder, *args, out="one")
    two = run_train(folder, *args, "--strategy", "ddp", processes=2, out="ddp")
    err, where = worst(one.end, two.end)
    assert err < 1e-6, f"{where} differs by {err:.3g}"
