// Fragment: matmul_tile128.wgsl's LOAD for the variants that read A and B one element at a time: the
// e-th load (flat = t + 256 e) puts a[row0 + ra, k0 + ka] into tile_a and b[k0 + kb, col0 + cb] into
// tile_b, 0 outside the matrices.
//
// M, N, K: the sizes; TILE_K: the depth of a K slice. A_AT is a[row0 + ra, k0 + ka], B_AT is
// b[k0 + kb, col0 + cb]; ELEM(x) rounds to the tiles' type (nothing for f32).
var<workgroup> tile_a: array<vec4<f32>, 512>;
var<workgroup> tile_b: array<vec4<f32>, 512>;
const TILE_K: u32 = 16u;
const M: u32 = 1u;
const N: u32 = 1u;
const K: u32 = 1u;
const A_AT: f32 = 0.0;
const B_AT: f32 = 0.0;
fn ELEM(x: f32) -> f32 { return x; }
fn load(flat: u32, row0: u32, col0: u32, k0: u32) {
// ---- template ----
  let ra = flat / TILE_K;
  let ka = flat % TILE_K;
  var va = 0.0;
  if (row0 + ra < M && k0 + ka < K) { va = A_AT; }
  tile_a[ka * 32u + ra / 4u][ra % 4u] = ELEM(va);
  let kb = flat / 128u;
  let cb = flat % 128u;
  var vb = 0.0;
  if (k0 + kb < K && col0 + cb < N) { vb = B_AT; }
  tile_b[kb * 32u + cb / 4u][cb % 4u] = ELEM(vb);
// ---- end ----
}
