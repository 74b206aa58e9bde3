// CHECK_INDEX, one workgroup: lane l counts the indices l, l + 256, ... outside [0, bound) (an i32 read
// as u32: a negative one is outside too) and keeps the first; a tree of fixed shape sums the counts and
// takes the least position; lane 0 writes the record (count, first position, its value) unless it holds
// one already (lower.kernels.Kind).
//
// INDICES: the indices' binding (in0); COUNT, OFFSET: their count and where they start; BOUND: the
// table's row count. RECORD_COUNT, RECORD_FIRST, RECORD_VALUE: the record's three words in out.
@group(0) @binding(0) var<storage, read> INDICES: array<i32>;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;
const COUNT: u32 = 1u;
const OFFSET: u32 = 0u;
const BOUND: u32 = 1u;
const RECORD_COUNT: u32 = 0u;
const RECORD_FIRST: u32 = 1u;
const RECORD_VALUE: u32 = 2u;
// ---- template ----
var<workgroup> counts: array<u32, 256>;
var<workgroup> firsts: array<u32, 256>;
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
  var bad = 0u;
  var lowest = 0xffffffffu;
  for (var i = lid.x; i < COUNT; i = i + 256u) {
    if (bitcast<u32>(INDICES[OFFSET + i]) >= BOUND) {
      bad = bad + 1u;
      lowest = min(lowest, i);
    }
  }
  counts[lid.x] = bad;
  firsts[lid.x] = lowest;
  workgroupBarrier();
  for (var span = 128u; span > 0u; span = span / 2u) {
    if (lid.x < span) {
      counts[lid.x] = counts[lid.x] + counts[lid.x + span];
      firsts[lid.x] = min(firsts[lid.x], firsts[lid.x + span]);
    }
    workgroupBarrier();
  }
  if (lid.x == 0u && counts[0] > 0u && out[RECORD_COUNT] == 0u) {
    out[RECORD_COUNT] = counts[0];
    out[RECORD_FIRST] = firsts[0];
    out[RECORD_VALUE] = bitcast<u32>(INDICES[OFFSET + firsts[0]]);
  }
}
