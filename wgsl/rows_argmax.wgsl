// Argmax over the last axis of [rows..., R], one workgroup per row: each of the 64 lanes finds the
// first maximum of a fixed strided subset, then a fixed pairwise tree picks the first of the lanes'.
//
// ROWS: the row count; DECODE: the row index o split into c0, c1, ...; COUNT: R; X_AT: x[c..., r].
// OUT_AT: where the row's index goes in the output.
@group(0) @binding(0) var<storage, read_write> out: array<i32>;
const ROWS: u32 = 1u;
const COUNT: u32 = 1u;
const X_AT: f32 = 0.0;
const OUT_AT: u32 = 0u;
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
  if (lid.x == 0u) {
    out[OUT_AT] = i32(part_i[0]);
  }
}
