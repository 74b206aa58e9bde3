// Fragment: matmul_tile128.wgsl's LOAD for a product with NF4 weights (wgsl_nf4.py): the e-th load puts
// a[row0 + ra, k0 + ka] into tile_a, as matmul_tile128_load.wgsl does; the first (e = 0) also decodes one
// packed word of the weight into tile_b: 8 values of one block, so each weight word and its scale are
// read once a slice instead of once a value. ALONG_K: the word's 8 values run along K (x W^T: the thread's
// column cb = t % 128, rows kb = 8 (t / 128) ..+7); else along N (x W: the thread's row kb = t / 16,
// columns cb = 8 (t % 16) ..+7). Needs K (along K) or N (along N) a multiple of 8 and the weight's
// rows of whole blocks (wgsl_nf4.py checks).
//
// M, N, K: the sizes; A_AT is a[row0 + ra, k0 + ka]; WORD_INDEX: the index in W of the word's first
// value (kb, cb in scope); ALONG_K: true or false.
var<workgroup> tile_a: array<vec4<f32>, 512>;
var<workgroup> tile_b: array<vec4<f32>, 512>;
const M: u32 = 1u;
const N: u32 = 1u;
const K: u32 = 1u;
const A_AT: f32 = 0.0;
const WORD_INDEX: u32 = 0u;
const ALONG_K: bool = true;
fn sc_nf4_word(k: u32) -> u32 { return 0u; }
fn sc_nf4_scale(block: u32) -> f32 { return 0.0; }
var<private> sc_nf4_levels: array<u32, 16>;
fn load(flat: u32, row0: u32, col0: u32, k0: u32, t: u32, e: u32) {
// ---- template ----
  let ra = flat / 16u;
  let ka = flat % 16u;
  var va = 0.0;
  if (row0 + ra < M && k0 + ka < K) { va = A_AT; }
  tile_a[ka * 32u + ra / 4u][ra % 4u] = va;
  if (e == 0u) {
    var kb = 8u * (t / 128u);
    var cb = t % 128u;
    if (!ALONG_K) {
      kb = t / 16u;
      cb = 8u * (t % 16u);
    }
    var v = array<f32, 8>(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0);
    if (k0 + kb < K && col0 + cb < N) {
      let i = WORD_INDEX;
      let word = sc_nf4_word(i / 8u);
      let scale = sc_nf4_scale(i / 64u);
      for (var j = 0u; j < 8u; j = j + 1u) {
        v[j] = bitcast<f32>(sc_nf4_levels[(word >> (4u * j)) & 0xfu]) * scale;
      }
    }
    if (ALONG_K) {
      for (var j = 0u; j < 8u; j = j + 1u) {
        tile_b[(kb + j) * 32u + cb / 4u][cb % 4u] = v[j];
      }
    } else {
      tile_b[kb * 32u + cb / 4u] = vec4<f32>(v[0], v[1], v[2], v[3]);
      tile_b[kb * 32u + cb / 4u + 1u] = vec4<f32>(v[4], v[5], v[6], v[7]);
    }
  }
// ---- end ----
}
