// CHECK_INDEX of few indices, variant "serial": one invocation counts the indices outside [0, bound)
// (an i32 read as u32: a negative one is outside too) in index order and keeps the first; it writes the
// record (count, first position, its value) unless the record holds one already (lower.kernels.Kind).
// No workgroup memory, no barrier: a series may run it (lower.series).
//
// INDICES: the indices' array; COUNT, OFFSET: their count and where they start; BOUND: the table's row
// count. OUT: the record's array; RECORD_COUNT, RECORD_FIRST, RECORD_VALUE: its three words there.
@group(0) @binding(0) var<storage, read> INDICES: array<i32>;
@group(0) @binding(1) var<storage, read_write> OUT: array<u32>;
const COUNT: u32 = 1u;
const OFFSET: u32 = 0u;
const BOUND: u32 = 1u;
const RECORD_COUNT: u32 = 0u;
const RECORD_FIRST: u32 = 1u;
const RECORD_VALUE: u32 = 2u;
// ---- template ----
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
  let o = (wid.x + wid.y * groups.x) * 64u + lid.x;
  if (o >= 1u) { return; }
  var bad = 0u;
  var lowest = 0u;
  for (var i = 0u; i < COUNT; i = i + 1u) {
    if (bitcast<u32>(INDICES[OFFSET + i]) >= BOUND) {
      if (bad == 0u) { lowest = i; }
      bad = bad + 1u;
    }
  }
  if (bad > 0u && OUT[RECORD_COUNT] == 0u) {
    OUT[RECORD_COUNT] = bad;
    OUT[RECORD_FIRST] = lowest;
    OUT[RECORD_VALUE] = bitcast<u32>(INDICES[OFFSET + lowest]);
  }
}
