// Philox4x32-10 (Salmon et al., "Parallel Random Numbers: As Easy as 1, 2, 3"), bit-identical to
// scellis.rng and the CPU path. WGSL has no 64-bit integers: the 32 x 32 -> 64-bit product is put
// together from 16-bit halves.
//
// ROUNDS, the multipliers M0, M1 and the key increments W0, W1: scellis.rng's.
const ROUNDS: u32 = 10u;
const M0: u32 = 0xd2511f53u;
const M1: u32 = 0xcd9e8d57u;
const W0: u32 = 0x9e3779b9u;
const W1: u32 = 0xbb67ae85u;
// ---- template ----
fn sc_mulhilo(a: u32, b: u32) -> vec2<u32> {
  let a0 = a & 0xffffu;
  let a1 = a >> 16u;
  let b0 = b & 0xffffu;
  let b1 = b >> 16u;
  let p01 = a0 * b1;
  let p10 = a1 * b0;
  let mid = ((a0 * b0) >> 16u) + (p01 & 0xffffu) + (p10 & 0xffffu);
  return vec2<u32>(a1 * b1 + (p01 >> 16u) + (p10 >> 16u) + (mid >> 16u), a * b);
}

fn sc_philox(counter: vec4<u32>, key: vec2<u32>) -> vec4<u32> {
  var c = counter;
  var k = key;
  for (var r = 0u; r < ROUNDS; r = r + 1u) {
    if (r > 0u) { k = k + vec2<u32>(W0, W1); }
    let p0 = sc_mulhilo(M0, c.x);
    let p1 = sc_mulhilo(M1, c.z);
    c = vec4<u32>(p1.x ^ c.y ^ k.x, p1.y, p0.x ^ c.w ^ k.y, p0.y);
  }
  return c;
}
