// Integer draws in [0, n) without modulo bias (scellis.rng.integer): the first of the four words that
// is at most `last` = 2^32 - 1 - (2^32 mod n), taken mod n; when all four are rejected, the next
// counter (word 3 + 1) is tried. Needs philox.wgsl.
fn sc_philox(counter: vec4<u32>, key: vec2<u32>) -> vec4<u32> { return counter; }
// ---- template ----
fn sc_integer(counter: vec4<u32>, key: vec2<u32>, n: u32, last: u32) -> i32 {
  var c = counter;
  var word = 0u;
  loop {
    let r = sc_philox(c, key);
    if (r.x <= last) { word = r.x; break; }
    if (r.y <= last) { word = r.y; break; }
    if (r.z <= last) { word = r.z; break; }
    if (r.w <= last) { word = r.w; break; }
    c.w = c.w + 1u;
  }
  return i32(word % n);
}
