// Fragment: the variance's second pass for reduce_serial.wgsl's FINISH: the mean is total / MEAN_DIVISOR,
// and the squared deviations from it are summed in index order and divided by COUNT - correction.
//
// COUNT: the reduced element count (MEAN_DIVISOR: as a float), DECODE_REDUCED: r split into k0, k1,
// ...; LOAD_X: statements ending with `let x = ...;`, the value reduced at [c..., k...]. DIVISOR:
// COUNT - correction, as a float.
const COUNT: u32 = 1u;
const MEAN_DIVISOR: f32 = 1.0;
const DIVISOR: f32 = 1.0;
fn DECODE_REDUCED() {}
fn LOAD_X() {}
fn variance() {
  var total = 0.0;
  // x stands in for the one LOAD_X declares
  let x = 0.0;
// ---- template ----
  let mean = total / MEAN_DIVISOR;
  var sq = 0.0;
  for (var r = 0u; r < COUNT; r = r + 1u) {
    DECODE_REDUCED();
    LOAD_X();
    let dx = x - mean;
    sq = sq + dx * dx;
  }
  total = sq / DIVISOR;
// ---- end ----
}
