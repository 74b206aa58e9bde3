// Scatter-add as a gather: out[r, k...] = the sum of g[j, k...] over every j with indices[j] == r, in
// index order (c0 is r). No atomics.
//
// TOTAL: the output's element count; DECODE: the flat index i split into the output coordinates
// c0, c1, ...; EPILOGUE: the fused expression of acc there, stored through the output's view.
const TOTAL: u32 = 1u;
fn DECODE() {}
fn EPILOGUE() {}
// COUNT: the indices' count; INDEX_AT: indices[j]; G_AT: g[j, k...].
const c0: u32 = 0u;
const COUNT: u32 = 1u;
const INDEX_AT: i32 = 0;
const G_AT: f32 = 0.0;
// ---- template ----
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
  let i = gid.x + gid.y * groups.x * 256u;
  if (i >= TOTAL) { return; }
  DECODE();
  var acc = 0.0;
  for (var j = 0u; j < COUNT; j = j + 1u) {
    if (INDEX_AT == i32(c0)) { acc = acc + G_AT; }
  }
  EPILOGUE();
}
