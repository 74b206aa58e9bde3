// erf by Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7): WGSL has no erf.
fn sc_erf(x: f32) -> f32 {
  let t = 1.0 / (1.0 + 0.3275911 * abs(x));
  let p = (((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t + 0.254829592;
  let y = 1.0 - p * t * exp(-x * x);
  return select(-y, y, x >= 0.0);
}
