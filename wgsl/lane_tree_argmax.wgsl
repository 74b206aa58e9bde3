// Fragment: one step of the fixed pairwise tree that finds the first maximum of the 64 lanes' values in
// part (their indices in part_i) and leaves it in part[0], part_i[0] (rows.wgsl). Codegen includes it
// once for each STRIDE, 32u, 16u, ..., 1u.
var<workgroup> part: array<f32, 64>;
var<workgroup> part_i: array<u32, 64>;
const STRIDE: u32 = 32u;
fn lane_tree_argmax(lid: vec3<u32>) {
// ---- template ----
  // the first maximum: on ties the lower index wins, whatever lane found it
  if (lid.x < STRIDE) { let ov = part[lid.x + STRIDE]; let oi = part_i[lid.x + STRIDE]; if (ov > part[lid.x] || (ov == part[lid.x] && oi < part_i[lid.x])) { part[lid.x] = ov; part_i[lid.x] = oi; } }
  workgroupBarrier();
// ---- end ----
}
