// NF4_PACK: w [rows, cols] -> the packed words (scellis.ops.nf4), one invocation per pair of blocks
// (so each writes whole words: its blocks' 16 code words and their shared scale word). Helpers: nf4.wgsl.
//
// PAIRS, BLOCKS: pairs of blocks and blocks; CODE_WORDS: where the scales start; W_AT: w[i] (i in
// scope, flat); OUT_OFFSET: where the output view starts.
@group(0) @binding(0) var<storage, read> in0: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;
const PAIRS: u32 = 1u;
const BLOCKS: u32 = 1u;
const CODE_WORDS: u32 = 1u;
const W_AT: f32 = 0.0;
const OUT_OFFSET: u32 = 0u;
fn sc_f16_bits(x: f32) -> u32 { return 0u; }
fn sc_nf4_code(w: f32, absmax: f32) -> u32 { return 0u; }
// ---- template ----
fn sc_w(i: u32) -> f32 {
  return W_AT;
}

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
  let pair = gid.x + gid.y * groups.x * 64u;
  if (pair >= PAIRS) { return; }
  var scales = 0u;
  for (var b = 2u * pair; b < 2u * pair + 2u && b < BLOCKS; b = b + 1u) {
    var absmax = 0.0;
    for (var j = 0u; j < 64u; j = j + 1u) {
      let a = bitcast<f32>(bitcast<u32>(sc_w(b * 64u + j)) & 0x7fffffffu);
      absmax = select(absmax, a, a > absmax);
    }
    for (var word = 0u; word < 8u; word = word + 1u) {
      var packed = 0u;
      for (var j = 0u; j < 8u; j = j + 1u) {
        packed = packed | (sc_nf4_code(sc_w(b * 64u + word * 8u + j), absmax) << (4u * j));
      }
      out[OUT_OFFSET + b * 8u + word] = packed;
    }
    scales = scales | (sc_f16_bits(absmax) << (16u * (b & 1u)));
  }
  out[OUT_OFFSET + CODE_WORDS + pair] = scales;
}
