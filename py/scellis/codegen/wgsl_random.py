"""Stage: code. WGSL for counter-based random draws: the RANDOM kernel (wgsl/random.wgsl,
random_integer.wgsl) and its helpers, Philox4x32-10 (philox.wgsl) and the integer and normal recipes
(integer.wgsl, normal.wgsl). The recipes (scellis.rng) give the same bits as the reference and the CPU
path; only normal draws, which need a logarithm and a cosine, are float32-accurate rather than
bit-identical."""

from __future__ import annotations

import math

from scellis.codegen import wgsl_expr as w
from scellis.codegen.wgsl_spatial import Source, input_at, per_element
from scellis.codegen.wgsl_template import template, text
from scellis.lower.kernels import Kernel, Schedule
from scellis.ops import defs as d
from scellis.rng import MASK, PHILOX_M, PHILOX_W, ROUNDS


def philox() -> str:
    """wgsl/philox.wgsl with scellis.rng's constants: sc_mulhilo and sc_philox."""
    m0, m1, w0, w1 = (f"{value}u" for value in (*PHILOX_M, *PHILOX_W))
    return template("philox").fill(ROUNDS=f"{ROUNDS}u", M0=m0, M1=m1, W0=w0, W1=w1)


def random(kernel: Kernel, schedule: Schedule, b: w.Bindings) -> Source:
    """Element i draws Philox of counter (i, site, position, 0) under the key (wgsl/random.wgsl; integers:
    random_integer.wgsl)."""
    arg = kernel.arg
    assert isinstance(arg, d.RandomArg)
    counter = {"SITE": f"{arg.site & MASK}u", "POSITION": input_at(kernel, b, 1, [])}
    counter |= {"KEY0": input_at(kernel, b, 0, ["0u"]), "KEY1": input_at(kernel, b, 0, ["1u"])}
    helpers = f"\n{philox()}\n"
    if arg.distribution is d.Distribution.INTEGER:
        last = f"{2**32 - 1 - 2**32 % arg.n}u"
        helpers += f"\n{text('integer')}\n"
        return per_element(kernel, schedule, b, "random_integer", helpers, **counter, N=f"{arg.n}u", LAST=last)
    if arg.distribution is d.Distribution.UNIFORM:
        draw = "f32(r.x >> 8u) * 5.9604644775390625e-8"
    elif arg.distribution is d.Distribution.BERNOULLI:
        # u >= p compared on the 24-bit integer u * 2^24 against ceil(p * 2^24) (exact in float64), so
        # the mask equals the reference's bit for bit however p rounds to float32.
        threshold = min(max(math.ceil(arg.p * 2**24), 0), 2**24)
        draw = f"(r.x >> 8u) >= {threshold}u"
    else:
        draw, helpers = "sc_normal(r.x, r.y)", helpers + f"\n{text('normal')}\n"
    return per_element(kernel, schedule, b, "random", helpers, **counter, DRAW=draw)
