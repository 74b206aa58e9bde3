"""Data augmentation on every device. Integer draws follow `scellis.rng.integer` bit for bit (rejected
words and the continuation at the next counter included) on the reference device, the CPU path (wasmtime)
and WGSL (lavapipe); SHIFT2D, FLIP_LAST and their gradients move float32 values, so they match the
reference exactly; and three training steps of a CNN with random_crop, random_flip and gaussian_noise
(upstream of a convolution and downstream of one) match the float64 reference within the declared
tolerance (relative to max(1, max |reference|)): TRAIN_TOL, as for test_wgsl_spatial's CNN."""

from __future__ import annotations

import asyncio
import functools

import numpy as np
import pytest
from wgpu_harness import run_on

from scellis import rng as srng
from scellis.autodiff import VJP
from scellis.graph import Program
from scellis.ir import Function
from scellis.ir.function import input_name, input_role
from scellis.levels import Level
from scellis.lower import Kind, lower
from scellis.ops import DType, Op, make
from scellis.ops import defs as d
from scellis.ops.node import input_node
from scellis.pipeline import compile_program
from scellis.plan import planned
from scellis.runtime.cpu.device import CpuDevice
from scellis.runtime.cpu.module import CpuPath
from scellis.runtime.reference import train as rt
from scellis.runtime.reference.device import ReferenceDevice
from scellis.runtime.reference.oracle import run
from scellis.runtime.webgpu.native import WgpuDevice

TRAIN_TOL = 1e-5
WIRE = {DType.F32: "<f4", DType.I32: "<i4", DType.U32: "<u4", DType.BOOL: "<u4"}
KEY, SITE, POSITION, COUNT = (0x01234567, 0x89ABCDEF), 5, 2**32 - 1, 3000
# n = 2**31 rejects nothing; 1431655766 (just above 2**32 / 3) rejects a third of the words, and all four
# words of about one counter in 81, whose draw continues at the next counter
RANGES = [1, 2, 7, 10, 1000, 2**31 - 1, 2**31, 1_431_655_766]


@pytest.fixture(scope="module")
def devices(cpu: CpuPath) -> dict[str, object]:
    return {"reference": ReferenceDevice(), "cpu": CpuDevice(cpu), "webgpu": WgpuDevice()}


@functools.cache
def expected_integers(n: int) -> list[int]:
    return [srng.integer(n, srng.counter(i, SITE, POSITION), KEY) for i in range(COUNT)]


def test_the_large_range_continues_at_the_next_counter() -> None:
    last = 2**32 - 1 - 2**32 % RANGES[-1]
    words = [srng.philox4x32(srng.counter(i, SITE, POSITION), KEY) for i in range(COUNT)]
    assert sum(min(w) > last for w in words) >= 10


@pytest.mark.parametrize("device", ["reference", "cpu", "webgpu"])
@pytest.mark.parametrize("n", RANGES)
def test_integer_draws_are_rng_integer_bit_for_bit(devices: dict[str, object], device: str, n: int) -> None:
    key = input_node("rng.augment", d.Role.RNG, DType.U32, (2,))
    position = input_node("rng.augment.position", d.Role.SETTING, DType.U32, ())
    arg = d.RandomArg(d.Distribution.INTEGER, "augment", SITE, (COUNT,), n=n)
    fn = Function("integers", (key, position), (("draws", make(Op.RANDOM, key, position, arg=arg)),))
    inputs = {"rng.augment": np.array(KEY, np.uint32), "rng.augment.position": np.array(POSITION, np.uint32)}
    got = run_on(devices[device], fn, inputs)["draws"]
    assert got.dtype == np.int32 and got.tolist() == expected_integers(n)


# (x shape): one pixel, 3-d and 4-d inputs, a height of 1, a batch of 1
MOVE_CASES = [(1, 1, 1), (3, 5, 4), (2, 3, 7, 6), (4, 2, 1, 9), (1, 2, 3, 4)]


def movement_fn(shape: tuple[int, ...]) -> Function:
    """SHIFT2D and FLIP_LAST and the gradients their VJP rules build (a shift the other way, a flip)."""
    x, g = (input_node(name, d.Role.DATA, DType.F32, shape) for name in ("x", "g"))
    shift = input_node("shift", d.Role.DATA, DType.I32, (shape[0], 2))
    flip = input_node("flip", d.Role.DATA, DType.BOOL, (shape[0],))
    shifted, flipped = make(Op.SHIFT2D, x, shift), make(Op.FLIP_LAST, x, flip)
    outputs = (
        ("shifted", shifted),
        ("flipped", flipped),
        ("shifted_grad", VJP[Op.SHIFT2D](shifted, g, (True, False))[0]),
        ("flipped_grad", VJP[Op.FLIP_LAST](flipped, g, (True, False))[0]),
    )
    return Function("movement", (x, g, shift, flip), outputs)


@pytest.mark.parametrize("device", ["cpu", "webgpu"])
@pytest.mark.parametrize("shape", MOVE_CASES, ids=str)
def test_shift2d_flip_last_and_their_gradients_match_exactly(
    devices: dict[str, object], device: str, shape: tuple[int, ...]
) -> None:
    fn = movement_fn(shape)
    rng = np.random.default_rng(sum(shape))
    reach = max(shape[-2:]) + 1  # shifts past either edge too
    inputs = {
        "x": rng.standard_normal(shape).astype(np.float32),
        "g": rng.standard_normal(shape).astype(np.float32),
        "shift": rng.integers(-reach, reach + 1, (shape[0], 2)).astype(np.int32),
        "flip": rng.random(shape[0]) < 0.5,
    }
    schedule = lower(fn, Level.PROD)
    assert {Kind.SHIFT2D, Kind.FLIP_LAST} <= {k.kind for k in schedule.kernels}
    got, want = run_on(devices[device], fn, inputs), run(fn, inputs)
    for name, _ in fn.outputs:
        np.testing.assert_array_equal(got[name], want[name].astype(np.float32), err_msg=name)


def augmented_cnn() -> dict:
    p = Program("augmented-cnn")
    x, y = p.input("x", [2, 7, 6]), p.input("y", [], dtype="int32", role="labels")
    h = p.gaussian_noise(p.random_flip(p.random_crop(x, padding=[2, 1])), std=0.1)
    h = p.random_flip(p.random_crop(p.conv2d(h, 4, 3, padding=1), padding=1), p=0.7)  # gradients flow back
    h = p.max_pool2d(p.relu(h), 2)
    p.set_loss(p.cross_entropy(p.linear(p.flatten(h), 5), y))
    p.set_optimizer("sgd", lr=0.1)
    p.set_loop(epochs=1, batch_size=4)
    return p.to_json()


def write(compiled: object, fn: Function, values: dict[str, np.ndarray]) -> None:
    for name, value in values.items():
        compiled.write(name, np.asarray(value).astype(WIRE[fn.input(name).dtype]).tobytes())  # type: ignore[attr-defined]


@pytest.mark.parametrize("device", ["cpu", "webgpu"])
def test_augmented_cnn_training_steps_match_the_reference(devices: dict[str, object], device: str) -> None:
    compiled = compile_program(augmented_cnn())
    step = compiled.step
    schedule = lower(step, Level.PROD)
    kinds = [k.kind for k in schedule.kernels]
    assert kinds.count(Kind.SHIFT2D) == 3 and kinds.count(Kind.FLIP_LAST) == 3, "two forward, one backward each"
    on_device = asyncio.run(devices[device].compile(planned(schedule)))  # type: ignore[attr-defined]
    state = rt.initial_state(compiled.init, step, seed=3)
    state.values = {k: v.astype(np.float32).astype(v.dtype) for k, v in state.values.items()}
    held = [input_name(n) for n in step.inputs if input_role(n) in (d.Role.PARAM, d.Role.STATE)]
    write(on_device, step, {**rt.keys(step, state.seed), **{name: state.values[name] for name in held}})
    rng = np.random.default_rng(8)
    for _ in range(3):
        batch = {"x": rng.standard_normal((4, 2, 7, 6)).astype(np.float32), "y": rng.integers(0, 5, 4)}
        write(on_device, step, {**batch, **rt.positions(step, state)})
        on_device.run()
        rt.step(step, state, batch)
    assert state.rng.positions["augment"] == 3 and "dropout" not in state.rng.positions
    for name, node in step.outputs:
        kind, _, target = name.partition("/")
        if kind == "param":
            got = np.frombuffer(on_device.read(name), dtype=WIRE[node.dtype]).reshape(node.shape)
            want = state.values[target]
            err = float(np.max(np.abs(got - want)))
            assert err <= TRAIN_TOL * max(1.0, float(np.max(np.abs(want)))), f"{name}: max error {err:.3g}"
