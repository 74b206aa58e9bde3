// Softmax, log-softmax and argmax over the last axis of [rows..., R] for short rows, variant "serial":
// one invocation per row, 64 rows a workgroup. Each finds its row's first maximum in index order, then
// FINISH: argmax stores its index; softmax and log-softmax sum exp(x - top) in index order and write
// every element of the row (RESULT as rows_softmax.wgsl's). No workgroup memory, no barrier.
//
// ROWS: the row count; DECODE: the row index o split into c0, c1, ...; COUNT: R; X_AT: x[c..., r].
const ROWS: u32 = 1u;
const COUNT: u32 = 1u;
const X_AT: f32 = 0.0;
fn DECODE() {}
fn FINISH() {}
// ---- template ----
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
  let o = (wid.x + wid.y * groups.x) * 64u + lid.x;
  if (o >= ROWS) { return; }
  DECODE();
  var best = bitcast<f32>(0xff7fffffu);
  var best_i = 0u;
  for (var r = 0u; r < COUNT; r = r + 1u) {
    let x = X_AT;
    if (x > best) { best = x; best_i = r; }
  }
  FINISH();
}
