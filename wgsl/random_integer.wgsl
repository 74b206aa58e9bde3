// RANDOM (integer): element i draws an integer in [0, n) without modulo bias from the counter
// (i, site, position, 0) under the substream's key (integer.wgsl, as scellis.rng.integer).
// Fragment: elementwise.wgsl's BODY, at the output coordinates c0, c1, ...; it leaves the value in acc.
//
// SITE: the draw's site; POSITION: the substream's draw position (a u32 input); KEY0, KEY1: the
// substream's key (the key input's two words).
const SITE: u32 = 0u;
const POSITION: u32 = 0u;
const KEY0: u32 = 0u;
const KEY1: u32 = 0u;
// N: n; LAST: the largest word kept, 2^32 - 1 - (2^32 mod n).
const N: u32 = 1u;
const LAST: u32 = 0u;
fn sc_integer(counter: vec4<u32>, key: vec2<u32>, n: u32, last: u32) -> i32 { return 0; }
fn body(i: u32) {
// ---- template ----
  let acc = sc_integer(vec4<u32>(i, SITE, POSITION, 0u), vec2<u32>(KEY0, KEY1), N, LAST);
// ---- end ----
}
