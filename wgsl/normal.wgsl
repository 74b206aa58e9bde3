// Normal draws by Box-Muller with our own log and cos: WGSL only promises log to 2^-21 absolute on
// [0.5, 2] and cos to 2^-11 absolute, both far coarser than float32. ln u for u >= 0.5 is
// 2 atanh((u - 1) / (u + 1)), whose series in s^2 <= 1/9 converges to float32 precision in 8 terms;
// cos(2 pi t) reduces t to the nearest quarter turn exactly (t is a multiple of 2^-24) and evaluates
// Taylor polynomials on [-pi/4, pi/4].
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
