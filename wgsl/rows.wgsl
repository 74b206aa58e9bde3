// Softmax, log-softmax and argmax over the last axis of [rows..., R], one workgroup per row: each of the
// 64 lanes finds the first maximum of a fixed strided subset, then a fixed pairwise tree picks the first
// of the lanes' (ARGMAX_TREE: lane_tree_argmax.wgsl), so part[0] holds the row's maximum and part_i[0]
// its index. FINISH is the kind's: rows_argmax.wgsl stores the index, rows_softmax.wgsl goes on.
//
// ROWS: the row count; DECODE: the row index o split into c0, c1, ...; COUNT: R; X_AT: x[c..., r].
const ROWS: u32 = 1u;
const COUNT: u32 = 1u;
const X_AT: f32 = 0.0;
fn DECODE() {}
fn ARGMAX_TREE() {}
fn FINISH() {}
// ---- template ----
var<workgroup> part: array<f32, 64>;
var<workgroup> part_i: array<u32, 64>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
  let o = wid.x + wid.y * groups.x;
  if (o >= ROWS) { return; }
  DECODE();
  var best = bitcast<f32>(0xff7fffffu);
  var best_i = 0u;
  for (var r = lid.x; r < COUNT; r = r + 64u) {
    let x = X_AT;
    if (x > best) { best = x; best_i = r; }
  }
  part[lid.x] = best;
  part_i[lid.x] = best_i;
  workgroupBarrier();
  ARGMAX_TREE();
  FINISH();
}
