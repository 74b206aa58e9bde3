// Per-example shift (data augmentation): out[n, ..., i, j] = x[n, ..., i + sy, j + sx], 0 outside. In
// u32 arithmetic a position before the start wraps past the end, so one comparison per axis tests both
// edges.
// Fragment: elementwise.wgsl's BODY, at the output coordinates c0, c1, ...; it leaves the value in acc.
//
// ROW, COL: the output's last two coordinates (i, j); SHIFT_Y, SHIFT_X: example c0's shifts (i32);
// HEIGHT, WIDTH: x's last two sizes; X_AT: x[c0, ..., si, sj].
const ROW: u32 = 0u;
const COL: u32 = 0u;
const SHIFT_Y: i32 = 0;
const SHIFT_X: i32 = 0;
const HEIGHT: u32 = 1u;
const WIDTH: u32 = 1u;
const X_AT: f32 = 0.0;
fn body(i: u32) {
// ---- template ----
  let si = ROW + bitcast<u32>(SHIFT_Y);
  let sj = COL + bitcast<u32>(SHIFT_X);
  var acc = 0.0;
  if (si < HEIGHT && sj < WIDTH) { acc = X_AT; }
// ---- end ----
}
