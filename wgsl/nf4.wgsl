// NF4 weights (scellis.ops.nf4): the helpers nf4_pack, nf4_unpack and nf4_matmul include. Levels and
// midpoints are float32 bit patterns codegen writes from scellis.ops.nf4 (LEVEL_BITS, MIDPOINT_BITS);
// float16 scales are encoded and decoded on the bits, so every device packs and reads the same values.
// WORD_AT: packed word k (k in scope); CODE_WORDS: how many words the codes take.
@group(0) @binding(0) var<storage, read> in0: array<u32>;
const LEVEL_BITS = array<u32, 16>(0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u);
const MIDPOINT_BITS = array<u32, 15>(0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u);
const WORD_AT: u32 = 0u;
const CODE_WORDS: u32 = 0u;
// ---- template ----
var<private> sc_nf4_levels: array<u32, 16> = LEVEL_BITS;
var<private> sc_nf4_midpoints: array<u32, 15> = MIDPOINT_BITS;

fn sc_nf4_word(k: u32) -> u32 {
  return WORD_AT;
}

// Non-negative float32 as float16 bits: nearest, ties to even; beyond 65504, 65504.
fn sc_f16_bits(x: f32) -> u32 {
  let bits = bitcast<u32>(x) & 0x7fffffffu;
  let exponent = i32(bits >> 23u) - 112;
  let mantissa = bits & 0x7fffffu;
  if (exponent >= 31) { return 0x7bffu; }
  if (exponent <= 0) {
    if (exponent < -10) { return 0u; }
    let full = mantissa | 0x800000u;
    let shift = u32(14 - exponent);
    let half = full >> shift;
    let rest = full & ((1u << shift) - 1u);
    let middle = 1u << (shift - 1u);
    return half + select(0u, 1u, rest > middle || (rest == middle && (half & 1u) == 1u));
  }
  let half = (u32(exponent) << 10u) | (mantissa >> 13u);
  let rest = mantissa & 0x1fffu;
  let rounded = half + select(0u, 1u, rest > 0x1000u || (rest == 0x1000u && (half & 1u) == 1u));
  return min(rounded, 0x7bffu);
}

fn sc_f16_value(h: u32) -> f32 {
  let exponent = (h >> 10u) & 0x1fu;
  let mantissa = h & 0x3ffu;
  if (exponent == 0u) { return f32(mantissa) * bitcast<f32>(0x33800000u); }
  return bitcast<f32>(((exponent + 112u) << 23u) | (mantissa << 13u));
}

fn sc_nf4_code(w: f32, absmax: f32) -> u32 {
  var c = 0u;
  for (var m = 0u; m < 15u; m = m + 1u) {
    c = c + select(0u, 1u, w > bitcast<f32>(sc_nf4_midpoints[m]) * absmax);
  }
  return c;
}

fn sc_nf4_scale(block: u32) -> f32 {
  return sc_f16_value((sc_nf4_word(CODE_WORDS + block / 2u) >> (16u * (block & 1u))) & 0xffffu);
}

fn sc_nf4_value(i: u32, scale: f32) -> f32 {
  let code = (sc_nf4_word(i / 8u) >> (4u * (i & 7u))) & 0xfu;
  return bitcast<f32>(sc_nf4_levels[code]) * scale;
}
