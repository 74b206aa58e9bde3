// Matmul, variants tile128[-f16]: 128 x 128 output tiles for large products whose operands cannot be read
// as vec4 (matmul_pipelined.wgsl takes the others), and NF4 weights' products. Each of the 16 x 16
// threads owns rows {4 lid.y .. + 3, 64 + 4 lid.y .. + 3} and columns {4 lid.x .., 64 + 4 lid.x ..}: 8 x 8
// outputs as 16 vec4 sums ci_g, so every K step reads 4 vec4 from workgroup memory for 64 multiply-adds.
// Tiles are stored K-major as vec4 rows; edges are bounds-checked on load and store.
//
// Float16 (tile128*-f16, fast only): T is f16, the tiles hold float16 (32 K values a slice in the same
// memory), each slice's products are summed in float16 (OPEN_SLICE declares the slice sums hi_g, FMA adds
// into them, CLOSE_SLICE adds them to the float32 ci_g), so rounding grows with the slice (fixed) and
// not with K. For float32, T is f32, FMA adds into ci_g and OPEN_SLICE, CLOSE_SLICE are empty lines.
//
// LOAD: the e-th of the LOADS loads a thread makes into the tiles of a slice: matmul_tile128_load.wgsl
// reads A and B one element at a time (nf4_tile128_load.wgsl decodes NF4 weights).
//
// DECODE: wid.z split into the batch coordinates b0, b1, ... (one line); A_BASE, B_BASE: where that
// entry's A and B start. K: the depth; TILE_K: the depth of a K slice, WORDS: a tile's vec4 count.
// STORES: for each output, the fused expression of its sum stored at its (row, col) when inside.
alias T = f32;
const WORDS: u32 = 512u;
const TILE_K: u32 = 16u;
const LOADS: u32 = 8u;
const K: u32 = 1u;
const A_BASE: u32 = 0u;
const B_BASE: u32 = 0u;
fn DECODE() {}
fn OPEN_SLICE() {}
fn FMA() {}
fn CLOSE_SLICE() {}
fn STORES() {}
fn LOAD() {}
// ---- template ----
var<workgroup> tile_a: array<vec4<T>, WORDS>;
var<workgroup> tile_b: array<vec4<T>, WORDS>;
@compute @workgroup_size(16, 16)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
  DECODE();
  let a_base = A_BASE;
  let b_base = B_BASE;
  let row0 = wid.y * 128u;
  let col0 = wid.x * 128u;
  let t = lid.y * 16u + lid.x;
  var c0_0 = vec4<f32>(0.0);
  var c0_1 = vec4<f32>(0.0);
  var c1_0 = vec4<f32>(0.0);
  var c1_1 = vec4<f32>(0.0);
  var c2_0 = vec4<f32>(0.0);
  var c2_1 = vec4<f32>(0.0);
  var c3_0 = vec4<f32>(0.0);
  var c3_1 = vec4<f32>(0.0);
  var c4_0 = vec4<f32>(0.0);
  var c4_1 = vec4<f32>(0.0);
  var c5_0 = vec4<f32>(0.0);
  var c5_1 = vec4<f32>(0.0);
  var c6_0 = vec4<f32>(0.0);
  var c6_1 = vec4<f32>(0.0);
  var c7_0 = vec4<f32>(0.0);
  var c7_1 = vec4<f32>(0.0);
  for (var k0 = 0u; k0 < K; k0 = k0 + TILE_K) {
    for (var e = 0u; e < LOADS; e = e + 1u) {
      let flat = t + e * 256u;
      LOAD();
    }
    workgroupBarrier();
    OPEN_SLICE();
    for (var kk = 0u; kk < TILE_K; kk = kk + 1u) {
      let a0 = tile_a[kk * 32u + lid.y];
      let a1 = tile_a[kk * 32u + 16u + lid.y];
      let b0 = tile_b[kk * 32u + lid.x];
      let b1 = tile_b[kk * 32u + 16u + lid.x];
      FMA();
    }
    CLOSE_SLICE();
    workgroupBarrier();
  }
  STORES();
}
