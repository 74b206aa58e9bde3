"""Stage: code. WGSL for counter-based random draws: Philox4x32-10 and the RANDOM kernel, whose recipes
(scellis.rng) give the same bits as the reference and the CPU path; only normal draws, which need a
logarithm and a cosine, are float32-accurate rather than bit-identical."""

from __future__ import annotations

import math

from scellis.codegen import wgsl_expr as w
from scellis.codegen.wgsl_spatial import Source, input_at, per_element
from scellis.lower.kernels import Kernel, Schedule
from scellis.ops import defs as d
from scellis.rng import MASK, PHILOX_M, PHILOX_W, ROUNDS

# WGSL has no 64-bit integers: the 32 x 32 -> 64-bit product is put together from 16-bit halves.
PHILOX_FN = f"""
fn sc_mulhilo(a: u32, b: u32) -> vec2<u32> {{
  let a0 = a & 0xffffu;
  let a1 = a >> 16u;
  let b0 = b & 0xffffu;
  let b1 = b >> 16u;
  let p01 = a0 * b1;
  let p10 = a1 * b0;
  let mid = ((a0 * b0) >> 16u) + (p01 & 0xffffu) + (p10 & 0xffffu);
  return vec2<u32>(a1 * b1 + (p01 >> 16u) + (p10 >> 16u) + (mid >> 16u), a * b);
}}

fn sc_philox(counter: vec4<u32>, key: vec2<u32>) -> vec4<u32> {{
  var c = counter;
  var k = key;
  for (var r = 0u; r < {ROUNDS}u; r = r + 1u) {{
    if (r > 0u) {{ k = k + vec2<u32>({PHILOX_W[0]}u, {PHILOX_W[1]}u); }}
    let p0 = sc_mulhilo({PHILOX_M[0]}u, c.x);
    let p1 = sc_mulhilo({PHILOX_M[1]}u, c.z);
    c = vec4<u32>(p1.x ^ c.y ^ k.x, p1.y, p0.x ^ c.w ^ k.y, p0.y);
  }}
  return c;
}}
"""
# Box-Muller with our own log and cos: WGSL only promises log to 2^-21 absolute on [0.5, 2] and cos to
# 2^-11 absolute, both far coarser than float32. ln u for u >= 0.5 is 2 atanh((u - 1) / (u + 1)), whose
# series in s^2 <= 1/9 converges to float32 precision in 8 terms; cos(2 pi t) reduces t to the nearest
# quarter turn exactly (t is a multiple of 2^-24) and evaluates Taylor polynomials on [-pi/4, pi/4].
NORMAL_FN = """
fn sc_ln_unit(u: f32) -> f32 {
  if (u < 0.5) { return log(u); }
  let s = (u - 1.0) / (u + 1.0);
  let z = s * s;
  let series = 1.0 + z * (1.0 / 3.0 + z * (0.2 + z * (1.0 / 7.0 + z * (1.0 / 9.0 + z * (1.0 / 11.0
    + z * (1.0 / 13.0 + z * (1.0 / 15.0)))))));
  return 2.0 * s * series;
}

fn sc_cos_turns(t: f32) -> f32 {
  let q = round(t * 4.0);
  let x = 6.28318530718 * (t - q * 0.25);
  let z = x * x;
  let c = 1.0 - z * (0.5 - z * (1.0 / 24.0 - z * (1.0 / 720.0 - z * (1.0 / 40320.0))));
  let s = x * (1.0 - z * (1.0 / 6.0 - z * (1.0 / 120.0 - z * (1.0 / 5040.0 - z * (1.0 / 362880.0)))));
  let quarter = u32(q) & 3u;
  let v = select(c, s, (quarter & 1u) == 1u);
  return select(v, -v, quarter == 1u || quarter == 2u);
}

fn sc_normal(w0: u32, w1: u32) -> f32 {
  let u1 = f32((w0 >> 8u) + 1u) * 5.9604644775390625e-8;
  let u2 = f32(w1 >> 8u) * 5.9604644775390625e-8;
  return sqrt(-2.0 * sc_ln_unit(u1)) * sc_cos_turns(u2);
}
"""


# The first of the four words that is at most `last` = 2^32 - 1 - (2^32 mod n), taken mod n; when all
# four are rejected, the next counter (word 3 + 1) is tried (scellis.rng.integer).
INTEGER_FN = """
fn sc_integer(counter: vec4<u32>, key: vec2<u32>, n: u32, last: u32) -> i32 {
  var c = counter;
  var word = 0u;
  loop {
    let r = sc_philox(c, key);
    if (r.x <= last) { word = r.x; break; }
    if (r.y <= last) { word = r.y; break; }
    if (r.z <= last) { word = r.z; break; }
    if (r.w <= last) { word = r.w; break; }
    c.w = c.w + 1u;
  }
  return i32(word % n);
}
"""


def random(kernel: Kernel, schedule: Schedule, b: w.Bindings) -> Source:
    """Element i draws Philox of counter (i, site, position, 0) under the key; the last word is i div
    2^32, always 0 because a WebGPU buffer holds fewer than 2^32 elements."""
    arg = kernel.arg
    assert isinstance(arg, d.RandomArg)
    k0, k1 = (input_at(kernel, b, 0, [f"{j}u"]) for j in (0, 1))
    counter = f"vec4<u32>(i, {arg.site & MASK}u, {input_at(kernel, b, 1, [])}, 0u)"
    key = f"vec2<u32>({k0}, {k1})"
    if arg.distribution is d.Distribution.INTEGER:
        draw = f"sc_integer({counter}, {key}, {arg.n}u, {2**32 - 1 - 2**32 % arg.n}u)"
        return per_element(kernel, schedule, b, f"let acc = {draw};", PHILOX_FN + INTEGER_FN)
    helpers = PHILOX_FN
    if arg.distribution is d.Distribution.UNIFORM:
        draw = "f32(r.x >> 8u) * 5.9604644775390625e-8"
    elif arg.distribution is d.Distribution.BERNOULLI:
        # u >= p compared on the 24-bit integer u * 2^24 against ceil(p * 2^24) (exact in float64), so
        # the mask equals the reference's bit for bit however p rounds to float32.
        threshold = min(max(math.ceil(arg.p * 2**24), 0), 2**24)
        draw = f"(r.x >> 8u) >= {threshold}u"
    else:
        draw, helpers = "sc_normal(r.x, r.y)", PHILOX_FN + NORMAL_FN
    return per_element(kernel, schedule, b, f"let r = sc_philox({counter}, {key});\nlet acc = {draw};", helpers)
