// Fragment: the variance's second pass, reduce.wgsl's FINISH. The first pass summed the elements; their
// mean is total / MEAN_DIVISOR, and the squared deviations from it are summed in the same fixed order
// (LANE_TREE: lane_tree.wgsl summing) and divided by COUNT - correction.
//
// COUNT: the reduced element count (MEAN_DIVISOR: as a float), DECODE_REDUCED: r split into k0, k1,
// ...; LOAD_X: statements ending with `let x = ...;`, the value reduced at [c..., k...]. DIVISOR:
// COUNT - correction, as a float.
var<workgroup> part: array<f32, 64>;
const COUNT: u32 = 1u;
const MEAN_DIVISOR: f32 = 1.0;
const DIVISOR: f32 = 1.0;
fn DECODE_REDUCED() {}
fn LOAD_X() {}
fn LANE_TREE() {}
fn variance(lid: vec3<u32>) {
  var total = 0.0;
  // x stands in for the one LOAD_X declares
  let x = 0.0;
// ---- template ----
  let mean = total / MEAN_DIVISOR;
  workgroupBarrier();
  var sq = 0.0;
  for (var r = lid.x; r < COUNT; r = r + 64u) {
    DECODE_REDUCED();
    LOAD_X();
    let dx = x - mean;
    sq = sq + dx * dx;
  }
  part[lid.x] = sq;
  workgroupBarrier();
  LANE_TREE();
  total = part[0] / DIVISOR;
// ---- end ----
}
