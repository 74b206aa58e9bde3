"""torch_layers.Philox (the draws an exported model.py makes) against Scellis's own: the Philox words of
scellis.rng bit for bit, and each distribution of the RANDOM op as the numpy float64 reference computes it
(uniform, Bernoulli and integer draws equal; normal ones within float64 rounding), for any range of
elements of a site, on the CPU and, where there is one, on a CUDA device."""

from __future__ import annotations

import importlib.util
from types import ModuleType

import numpy as np
import pytest

torch = pytest.importorskip(
    "torch", reason="PyTorch is not installed: scripts/setup installs it from requirements-dev.txt"
)

from scellis import rng  # noqa: E402
from scellis.ops.defs import Distribution, RandomArg  # noqa: E402
from scellis.runtime.reference.oracle import _random  # noqa: E402

DEVICES = ["cpu", *(["cuda"] if torch.cuda.is_available() else [])]


@pytest.fixture(scope="module")
def layers() -> ModuleType:
    spec = importlib.util.find_spec("scellis.torchexport.torch_layers")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(autouse=True)
def float64() -> object:
    before = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(before)


def reference(kind: str, seed: int, at: tuple[str, int, int], shape: tuple[int, ...], **kw: float) -> np.ndarray:
    """The reference's draws of `kind` at (substream, site, position)."""
    substream, site, position = at
    arg = RandomArg(Distribution(kind), substream, site, shape, p=kw.get("p", 0.0), n=int(kw.get("n", 0)))
    key = np.array(rng.substream_key(seed, substream), dtype=np.uint32)
    return _random(arg, key, np.uint32(position), np.dtype("float64"))


@pytest.mark.parametrize("device", DEVICES)
def test_words_are_scellis_philox(layers: ModuleType, device: str) -> None:
    philox = layers.Philox(11)
    key = rng.substream_key(11, "paths")
    elements = [0, 1, 2**31 + 5, 2**32 + 7]
    counters = [torch.tensor([rng.counter(i, 3, 2**32 - 1)[w] for i in elements], device=device) for w in range(4)]
    got = torch.stack(philox.words("paths", counters)).T.cpu().tolist()
    assert got == [list(rng.philox4x32(rng.counter(i, 3, 2**32 - 1), key)) for i in elements]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(
    ("kind", "extra"),
    [("uniform", {}), ("bernoulli", {"p": 0.3}), ("integer", {"n": 7}), ("integer", {"n": 2**31 - 1})],
)
def test_draws_equal_the_reference(layers: ModuleType, device: str, kind: str, extra: dict[str, float]) -> None:
    philox = layers.Philox(5)
    got = philox.draw(kind, "metropolis", 2, 9, (30, 70), device=torch.device(device), **extra)
    want = reference(kind, 5, ("metropolis", 2, 9), (30, 70), **extra)
    assert got.shape == want.shape
    assert np.array_equal(got.cpu().numpy(), want)


@pytest.mark.parametrize("device", DEVICES)
def test_normal_draws_agree_within_float64_rounding(layers: ModuleType, device: str) -> None:
    got = layers.Philox(5).draw("normal", "paths", 0, 3, (4096,), device=torch.device(device)).cpu().numpy()
    want = reference("normal", 5, ("paths", 0, 3), (4096,))
    assert np.max(np.abs(got - want)) < 1e-14
    assert abs(got.mean()) < 0.05 and abs(got.std() - 1) < 0.05


def test_a_range_of_elements_is_that_part_of_the_site(layers: ModuleType) -> None:
    """What a rank's rows of a batched draw get: elements first..first+count-1 of the whole batch's draws."""
    whole = reference("uniform", 2, ("augment", 1, 4), (8, 3))
    part = layers.Philox(2).draw("uniform", "augment", 1, 4, (3, 3), first=2 * 3)
    assert np.array_equal(part.numpy(), whole[2:5])


def test_rejected_integer_draws_go_on_at_the_next_counter(layers: ModuleType) -> None:
    """With n = 2**31 + 1 half the words are rejected: elements whose four words all are (1 in 16) draw at
    counter word 3 + 1, as scellis.rng.integer does."""
    n = 2**31 + 1
    got = layers.Philox(8).draw("integer", "bootstrap", 0, 0, (200,), n=n).tolist()
    key = rng.substream_key(8, "bootstrap")
    assert got == [rng.integer(n, rng.counter(i, 0, 0), key) for i in range(200)]
