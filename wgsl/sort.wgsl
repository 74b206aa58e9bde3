// SORT and SORT_GRAD along the last axis of [rows..., R] views. Workgroup (row, block) ranks the row's
// elements i = block * 256 + lane: the keys smaller than its own plus the equal keys before it, over
// the whole row, read a tile of 256 keys at a time into workgroup memory. That is O(R^2) a row, the
// same stable order as the CPU path's merge sort. Keys are made from the bits (WGSL may assume floats
// are never NaN, so no float comparison decides anything): NaN after +inf, -0.0 equal to 0.0. No
// atomics: the bytes repeat on every run.
//
// BLOCKS: blocks of 256 a row; ROWS: the row count; DECODE: row split into c0, c1, ...; COUNT: R.
// X_I, X_J: x[c..., i] and x[c..., j]. SORT stores VALUE = x[c..., i] at OUT_AT = out[c..., rank] (the
// ranks are a permutation: every output is written once); SORT_GRAD stores g[c..., rank] at out[c..., i].
@group(0) @binding(0) var<storage, read_write> out: array<f32>;
const BLOCKS: u32 = 1u;
const ROWS: u32 = 1u;
const COUNT: u32 = 1u;
const X_I: f32 = 0.0;
const X_J: f32 = 0.0;
const OUT_AT: u32 = 0u;
const VALUE: f32 = 0.0;
fn DECODE() {}
// ---- template ----

fn sc_sort_key(bits: u32) -> u32 {
  let magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) { return 0xffffffffu; }
  if (magnitude == 0u) { return 0x80000000u; }
  return select(bits | 0x80000000u, ~bits, (bits & 0x80000000u) != 0u);
}
var<workgroup> keys: array<u32, 256>;
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
  let group = wid.x + wid.y * groups.x;
  let row = group / BLOCKS;
  if (row >= ROWS) { return; }
  DECODE();
  let i = group % BLOCKS * 256u + lid.x;
  let inside = i < COUNT;
  var key = 0u;
  if (inside) { key = sc_sort_key(bitcast<u32>(X_I)); }
  var rank = 0u;
  for (var start = 0u; start < COUNT; start = start + 256u) {
    let j = start + lid.x;
    if (j < COUNT) { keys[lid.x] = sc_sort_key(bitcast<u32>(X_J)); }
    workgroupBarrier();
    let n = min(256u, COUNT - start);
    for (var t = 0u; t < n; t = t + 1u) {
      let other = keys[t];
      rank = rank + select(0u, 1u, other < key || (other == key && start + t < i));
    }
    workgroupBarrier();
  }
  if (inside) {
    out[OUT_AT] = VALUE;
  }
}
