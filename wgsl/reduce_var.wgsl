// Variance: one workgroup per output element, in two passes of reduce.wgsl's fixed order: the sum
// gives the mean, then the squared deviations from it are summed the same way and divided by
// COUNT - correction.
//
// OUTS: the output's element count; DECODE: the output index o split into c0, c1, ...; COUNT: the
// reduced element count (MEAN_DIVISOR: as a float), DECODE_REDUCED: r split into k0, k1, ...; X_AT:
// x[c..., k...]. DIVISOR: COUNT - correction, as a float. EPILOGUE: the fused expression of total.
const OUTS: u32 = 1u;
const COUNT: u32 = 1u;
const MEAN_DIVISOR: f32 = 1.0;
const DIVISOR: f32 = 1.0;
const X_AT: f32 = 0.0;
fn DECODE() {}
fn DECODE_REDUCED() {}
fn EPILOGUE() {}
// ---- template ----
var<workgroup> part: array<f32, 64>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
  let o = wid.x + wid.y * groups.x;
  if (o >= OUTS) { return; }
  DECODE();
  var acc = 0.0;
  for (var r = lid.x; r < COUNT; r = r + 64u) {
    DECODE_REDUCED();
    let x = X_AT;
    acc = acc + x;
  }
  part[lid.x] = acc;
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
  var total = part[0];
  let mean = total / MEAN_DIVISOR;
  workgroupBarrier();
  var sq = 0.0;
  for (var r = lid.x; r < COUNT; r = r + 64u) {
    DECODE_REDUCED();
    let dx = X_AT - mean;
    sq = sq + dx * dx;
  }
  part[lid.x] = sq;
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
  total = part[0] / DIVISOR;
  if (lid.x == 0u) {
    EPILOGUE();
  }
}
