// Fragment: matmul_tile128.wgsl's LOAD for the variants tile128-vec4* (K and N multiples of 4), which
// read A and B four elements at a time, so a vec4 is either wholly inside the matrix or wholly outside:
// the e-th load (flat = t + 256 e) puts a[row0 + ra, k0 + 4 kq ..] into tile_a (transposed, one
// element a row) and b[k0 + kb, col0 + 4 cq ..] into tile_b, 0 outside the matrices.
//
// M, N, K: the sizes; QUADS_K: TILE_K / 4. A_AT is the vec4 a[row0 + ra, k0 + 4 kq ..], B_AT the vec4
// b[k0 + kb, col0 + 4 cq ..]; ELEM(x) and ELEM4(v) round to the tiles' type (nothing for f32).
var<workgroup> tile_a: array<vec4<f32>, 512>;
var<workgroup> tile_b: array<vec4<f32>, 512>;
const QUADS_K: u32 = 4u;
const M: u32 = 1u;
const N: u32 = 1u;
const K: u32 = 1u;
const A_AT: vec4<f32> = vec4<f32>(0.0);
const B_AT: vec4<f32> = vec4<f32>(0.0);
fn ELEM(x: f32) -> f32 { return x; }
fn ELEM4(v: vec4<f32>) -> vec4<f32> { return v; }
fn load(flat: u32, row0: u32, col0: u32, k0: u32) {
// ---- template ----
  let ra = flat / QUADS_K;
  let kq = flat % QUADS_K;
  var va = vec4<f32>(0.0);
  if (row0 + ra < M && k0 + 4u * kq < K) {
    va = A_AT;
  }
  tile_a[(4u * kq + 0u) * 32u + ra / 4u][ra % 4u] = ELEM(va[0]);
  tile_a[(4u * kq + 1u) * 32u + ra / 4u][ra % 4u] = ELEM(va[1]);
  tile_a[(4u * kq + 2u) * 32u + ra / 4u][ra % 4u] = ELEM(va[2]);
  tile_a[(4u * kq + 3u) * 32u + ra / 4u][ra % 4u] = ELEM(va[3]);
  let kb = flat / 32u;
  let cq = flat % 32u;
  var vb = vec4<f32>(0.0);
  if (k0 + kb < K && col0 + 4u * cq < N) {
    vb = B_AT;
  }
  tile_b[kb * 32u + cq] = ELEM4(vb);
// ---- end ----
}
