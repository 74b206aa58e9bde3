// Fragment: softmax's and log-softmax's FINISH of rows.wgsl: with the row's maximum top (part[0]), the
// sum of exp(x - top) in reduce.wgsl's fixed order (LANE_TREE: lane_tree.wgsl summing), then every
// element of the row.
//
// COUNT: R; X_AT: x[c..., r]. OUT: the output's array; OUT_AT: where out[c..., r] is in it; RESULT: its
// value, exp(X_AT - top) / total for softmax and X_AT - top - log(total) for log-softmax.
@group(0) @binding(0) var<storage, read_write> OUT: array<f32>;
var<workgroup> part: array<f32, 64>;
const COUNT: u32 = 1u;
const X_AT: f32 = 0.0;
const OUT_AT: u32 = 0u;
const RESULT: f32 = 0.0;
fn LANE_TREE() {}
fn softmax(lid: vec3<u32>) {
// ---- template ----
  let top = part[0];
  workgroupBarrier();
  var s = 0.0;
  for (var r = lid.x; r < COUNT; r = r + 64u) { s = s + exp(X_AT - top); }
  part[lid.x] = s;
  workgroupBarrier();
  LANE_TREE();
  let total = part[0];
  for (var r = lid.x; r < COUNT; r = r + 64u) {
    OUT[OUT_AT] = RESULT;
  }
// ---- end ----
}
