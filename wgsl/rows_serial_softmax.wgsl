// Fragment: softmax's and log-softmax's FINISH of rows_serial.wgsl: with the row's maximum top (best),
// the sum of exp(x - top) in index order, then every element of the row.
//
// COUNT: R; X_AT: x[c..., r]. OUT: the output's array; OUT_AT: where out[c..., r] is in it; RESULT: its
// value, exp(X_AT - top) / total for softmax and X_AT - top - log(total) for log-softmax.
@group(0) @binding(0) var<storage, read_write> OUT: array<f32>;
const COUNT: u32 = 1u;
const X_AT: f32 = 0.0;
const OUT_AT: u32 = 0u;
const RESULT: f32 = 0.0;
fn softmax(best: f32) {
// ---- template ----
  let top = best;
  var total = 0.0;
  for (var r = 0u; r < COUNT; r = r + 1u) { total = total + exp(X_AT - top); }
  for (var r = 0u; r < COUNT; r = r + 1u) {
    OUT[OUT_AT] = RESULT;
  }
// ---- end ----
}
