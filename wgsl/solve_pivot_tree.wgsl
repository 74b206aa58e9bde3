// Fragment: one step of solve_workgroup.wgsl's fixed pairwise tree over the 64 lanes' pivot candidates
// (key, row), which leaves the pivot row in best_row[0]. Codegen includes it once for each STRIDE, 32u,
// 16u, ..., 1u.
var<workgroup> best_key: array<i32, 64>;
var<workgroup> best_row: array<u32, 64>;
const STRIDE: u32 = 32u;
fn pivot_tree(lid: vec3<u32>) {
// ---- template ----
  // the larger key wins, ties to the lower row
  if (lid.x < STRIDE) {
    let ok = best_key[lid.x + STRIDE];
    let orow = best_row[lid.x + STRIDE];
    if (ok > best_key[lid.x] || (ok == best_key[lid.x] && orow < best_row[lid.x])) {
      best_key[lid.x] = ok;
      best_row[lid.x] = orow;
    }
  }
  workgroupBarrier();
// ---- end ----
}
