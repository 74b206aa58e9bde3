// RANDOM (uniform, bernoulli, normal): element i draws Philox4x32-10 (philox.wgsl) of the counter
// (i, site, position, 0) under the substream's key; the last word is i div 2^32, always 0 because a
// WebGPU buffer holds fewer than 2^32 elements. The recipes (scellis.rng) give the same bits as the
// reference and the CPU path; only normal draws, which need a logarithm and a cosine (normal.wgsl), are
// float32-accurate rather than bit-identical.
// Fragment: elementwise.wgsl's BODY, at the output coordinates c0, c1, ...; it leaves the value in acc.
//
// SITE: the draw's site; POSITION: the substream's draw position (a u32 input); KEY0, KEY1: the
// substream's key (the key input's two words).
const SITE: u32 = 0u;
const POSITION: u32 = 0u;
const KEY0: u32 = 0u;
const KEY1: u32 = 0u;
// DRAW: the value of the words r: uniform f32(r.x >> 8) / 2^24, bernoulli (r.x >> 8) >= ceil(p 2^24),
// normal sc_normal(r.x, r.y).
const DRAW: f32 = 0.0;
fn sc_philox(counter: vec4<u32>, key: vec2<u32>) -> vec4<u32> { return counter; }
fn body(i: u32) {
// ---- template ----
  let r = sc_philox(vec4<u32>(i, SITE, POSITION, 0u), vec2<u32>(KEY0, KEY1));
  let acc = DRAW;
// ---- end ----
}
