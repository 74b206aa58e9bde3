// Per-example shift (data augmentation): out[n, ..., i, j] = x[n, ..., i + sy, j + sx], 0 outside. In
// u32 arithmetic a position before the start wraps past the end, so one comparison per axis tests both
// edges.
//
// TOTAL: the output's element count; DECODE: the flat index i split into the output coordinates
// c0, c1, ...; EPILOGUE: the fused expression of acc there, stored through the output's view.
const TOTAL: u32 = 1u;
fn DECODE() {}
fn EPILOGUE() {}
// ROW, COL: the output's last two coordinates (i, j); SHIFT_Y, SHIFT_X: example c0's shifts (i32);
// HEIGHT, WIDTH: x's last two sizes; X_AT: x[c0, ..., si, sj].
const ROW: u32 = 0u;
const COL: u32 = 0u;
const SHIFT_Y: i32 = 0;
const SHIFT_X: i32 = 0;
const HEIGHT: u32 = 1u;
const WIDTH: u32 = 1u;
const X_AT: f32 = 0.0;
// ---- template ----
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
  let i = gid.x + gid.y * groups.x * 256u;
  if (i >= TOTAL) { return; }
  DECODE();
  let si = ROW + bitcast<u32>(SHIFT_Y);
  let sj = COL + bitcast<u32>(SHIFT_X);
  var acc = 0.0;
  if (si < HEIGHT && sj < WIDTH) { acc = X_AT; }
  EPILOGUE();
}
