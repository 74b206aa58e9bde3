// Scatter-add as a gather: out[r, k...] = the sum of g[j, k...] over every j with indices[j] == r, in
// index order (c0 is r). No atomics.
// Fragment: elementwise.wgsl's BODY, at the output coordinates c0, c1, ...; it leaves the value in acc.
//
// COUNT: the indices' count; INDEX_AT: indices[j]; G_AT: g[j, k...].
const c0: u32 = 0u;
const COUNT: u32 = 1u;
const INDEX_AT: i32 = 0;
const G_AT: f32 = 0.0;
fn body(i: u32) {
// ---- template ----
  var acc = 0.0;
  for (var j = 0u; j < COUNT; j = j + 1u) {
    if (INDEX_AT == i32(c0)) { acc = acc + G_AT; }
  }
// ---- end ----
}
