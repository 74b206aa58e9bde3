// Matmul, variant tile64: tiled and register-blocked. A workgroup of 16 x 16 threads computes one
// 64 x 64 output tile of one batch entry, each thread R x R = 4 x 4 of its outputs (rows lid.y + 16 i,
// columns lid.x + 16 j) in the accumulators ci_j, over slices of K of depth 16 staged in workgroup
// memory. The accumulators and the inner product are written out in full (no local arrays, no inner
// loops): drivers then keep all 16 sums in registers. The tiles' rows are 64 + 4 long, so the
// transposed stores of a K slice hit distinct banks; both tiles fit WebGPU's default 16 KiB of
// workgroup memory. Edges are bounds-checked, so any M, N, K works.
//
// DECODE: wid.z split into the batch coordinates b0, b1, ... (one line); A_BASE, B_BASE: where that
// entry's A and B start. M, N, K: the sizes. A_AT: a[row0 + ra, k0 + kk]; B_AT: b[k0 + kb, col0 + c].
// STORES: for each accumulator, the fused expression of it stored at its (row, col) when inside.
const M: u32 = 1u;
const N: u32 = 1u;
const K: u32 = 1u;
const A_BASE: u32 = 0u;
const B_BASE: u32 = 0u;
const A_AT: f32 = 0.0;
const B_AT: f32 = 0.0;
fn DECODE() {}
fn STORES() {}
// ---- template ----
var<workgroup> tile_a: array<array<f32, 68>, 16>;
var<workgroup> tile_b: array<array<f32, 68>, 16>;
@compute @workgroup_size(16, 16)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
  DECODE();
  let a_base = A_BASE;
  let b_base = B_BASE;
  let row0 = wid.y * 64u;
  let col0 = wid.x * 64u;
  let t = lid.y * 16u + lid.x;
  var c0_0 = 0.0;
  var c0_1 = 0.0;
  var c0_2 = 0.0;
  var c0_3 = 0.0;
  var c1_0 = 0.0;
  var c1_1 = 0.0;
  var c1_2 = 0.0;
  var c1_3 = 0.0;
  var c2_0 = 0.0;
  var c2_1 = 0.0;
  var c2_2 = 0.0;
  var c2_3 = 0.0;
  var c3_0 = 0.0;
  var c3_1 = 0.0;
  var c3_2 = 0.0;
  var c3_3 = 0.0;
  for (var k0 = 0u; k0 < K; k0 = k0 + 16u) {
    for (var e = 0u; e < 4u; e = e + 1u) {
      let flat = t + e * 256u;
      let ra = flat / 16u;
      let kk = flat % 16u;
      var va = 0.0;
      if (row0 + ra < M && k0 + kk < K) { va = A_AT; }
      tile_a[kk][ra] = va;
      let kb = flat / 64u;
      let c = flat % 64u;
      var vb = 0.0;
      if (k0 + kb < K && col0 + c < N) { vb = B_AT; }
      tile_b[kb][c] = vb;
    }
    workgroupBarrier();
    for (var kk = 0u; kk < 16u; kk = kk + 1u) {
      let a0 = tile_a[kk][lid.y + 0u];
      let b0 = tile_b[kk][lid.x + 0u];
      let a1 = tile_a[kk][lid.y + 16u];
      let b1 = tile_b[kk][lid.x + 16u];
      let a2 = tile_a[kk][lid.y + 32u];
      let b2 = tile_b[kk][lid.x + 32u];
      let a3 = tile_a[kk][lid.y + 48u];
      let b3 = tile_b[kk][lid.x + 48u];
      c0_0 = fma(a0, b0, c0_0);
      c0_1 = fma(a0, b1, c0_1);
      c0_2 = fma(a0, b2, c0_2);
      c0_3 = fma(a0, b3, c0_3);
      c1_0 = fma(a1, b0, c1_0);
      c1_1 = fma(a1, b1, c1_1);
      c1_2 = fma(a1, b2, c1_2);
      c1_3 = fma(a1, b3, c1_3);
      c2_0 = fma(a2, b0, c2_0);
      c2_1 = fma(a2, b1, c2_1);
      c2_2 = fma(a2, b2, c2_2);
      c2_3 = fma(a2, b3, c2_3);
      c3_0 = fma(a3, b0, c3_0);
      c3_1 = fma(a3, b1, c3_1);
      c3_2 = fma(a3, b2, c3_2);
      c3_3 = fma(a3, b3, c3_3);
    }
    workgroupBarrier();
  }
  STORES();
}
