// Fragment: argmax's FINISH of rows.wgsl: lane 0 stores the row's first maximum's index, part_i[0].
//
// OUT: the output's array; OUT_AT: where the row's index goes in it.
@group(0) @binding(0) var<storage, read_write> OUT: array<i32>;
var<workgroup> part_i: array<u32, 64>;
const OUT_AT: u32 = 0u;
fn argmax(lid: vec3<u32>) {
// ---- template ----
  if (lid.x == 0u) {
    OUT[OUT_AT] = i32(part_i[0]);
  }
// ---- end ----
}
