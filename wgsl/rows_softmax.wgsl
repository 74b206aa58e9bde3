// Softmax and log-softmax over the last axis of [rows..., R], one workgroup per row: the row's maximum
// top found as rows_argmax.wgsl finds it, then the sum of exp(x - top) in reduce.wgsl's fixed order.
//
// ROWS: the row count; DECODE: the row index o split into c0, c1, ...; COUNT: R; X_AT: x[c..., r].
// OUT_AT: where out[c..., r] is; RESULT: its value, exp(X_AT - top) / total for softmax and
// X_AT - top - log(total) for log-softmax.
@group(0) @binding(0) var<storage, read_write> out: array<f32>;
const ROWS: u32 = 1u;
const COUNT: u32 = 1u;
const X_AT: f32 = 0.0;
const OUT_AT: u32 = 0u;
const RESULT: f32 = 0.0;
fn DECODE() {}
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
  // the first maximum: on ties the lower index wins, whatever lane found it
  if (lid.x < 32u) { let ov = part[lid.x + 32u]; let oi = part_i[lid.x + 32u]; if (ov > part[lid.x] || (ov == part[lid.x] && oi < part_i[lid.x])) { part[lid.x] = ov; part_i[lid.x] = oi; } }
  workgroupBarrier();
  if (lid.x < 16u) { let ov = part[lid.x + 16u]; let oi = part_i[lid.x + 16u]; if (ov > part[lid.x] || (ov == part[lid.x] && oi < part_i[lid.x])) { part[lid.x] = ov; part_i[lid.x] = oi; } }
  workgroupBarrier();
  if (lid.x < 8u) { let ov = part[lid.x + 8u]; let oi = part_i[lid.x + 8u]; if (ov > part[lid.x] || (ov == part[lid.x] && oi < part_i[lid.x])) { part[lid.x] = ov; part_i[lid.x] = oi; } }
  workgroupBarrier();
  if (lid.x < 4u) { let ov = part[lid.x + 4u]; let oi = part_i[lid.x + 4u]; if (ov > part[lid.x] || (ov == part[lid.x] && oi < part_i[lid.x])) { part[lid.x] = ov; part_i[lid.x] = oi; } }
  workgroupBarrier();
  if (lid.x < 2u) { let ov = part[lid.x + 2u]; let oi = part_i[lid.x + 2u]; if (ov > part[lid.x] || (ov == part[lid.x] && oi < part_i[lid.x])) { part[lid.x] = ov; part_i[lid.x] = oi; } }
  workgroupBarrier();
  if (lid.x < 1u) { let ov = part[lid.x + 1u]; let oi = part_i[lid.x + 1u]; if (ov > part[lid.x] || (ov == part[lid.x] && oi < part_i[lid.x])) { part[lid.x] = ov; part_i[lid.x] = oi; } }
  workgroupBarrier();
  let top = part[0];
  workgroupBarrier();
  var s = 0.0;
  for (var r = lid.x; r < COUNT; r = r + 64u) { s = s + exp(X_AT - top); }
  part[lid.x] = s;
  workgroupBarrier();
  if (lid.x < 32u) { let o = part[lid.x + 32u]; let s = part[lid.x]; part[lid.x] = (s + o); }
  workgroupBarrier();
  if (lid.x < 16u) { let o = part[lid.x + 16u]; let s = part[lid.x]; part[lid.x] = (s + o); }
  workgroupBarrier();
  if (lid.x < 8u) { let o = part[lid.x + 8u]; let s = part[lid.x]; part[lid.x] = (s + o); }
  workgroupBarrier();
  if (lid.x < 4u) { let o = part[lid.x + 4u]; let s = part[lid.x]; part[lid.x] = (s + o); }
  workgroupBarrier();
  if (lid.x < 2u) { let o = part[lid.x + 2u]; let s = part[lid.x]; part[lid.x] = (s + o); }
  workgroupBarrier();
  if (lid.x < 1u) { let o = part[lid.x + 1u]; let s = part[lid.x]; part[lid.x] = (s + o); }
  workgroupBarrier();
  let total = part[0];
  for (var r = lid.x; r < COUNT; r = r + 64u) {
    out[OUT_AT] = RESULT;
  }
}
