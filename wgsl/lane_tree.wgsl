// Fragment: one step of the fixed pairwise tree that combines the 64 lanes' values in part into
// part[0] (reduce.wgsl, reduce_var.wgsl, rows_softmax.wgsl). Codegen includes it once for each STRIDE,
// 32u, 16u, ..., 1u, so the tree's order is fixed and a result repeats bit for bit on one device.
//
// STRIDE: the step's; COMBINE: the lane values s and o combined.
var<workgroup> part: array<f32, 64>;
const STRIDE: u32 = 32u;
const COMBINE: f32 = 0.0;
fn lane_tree(lid: vec3<u32>) {
// ---- template ----
  if (lid.x < STRIDE) { let o = part[lid.x + STRIDE]; let s = part[lid.x]; part[lid.x] = COMBINE; }
  workgroupBarrier();
// ---- end ----
}
