// Reduction (sum, mean, max, variance): one workgroup per output element, in a fixed order. Each of the
// 64 lanes combines a fixed strided subset in index order, then a fixed pairwise tree combines the
// lanes, so the result repeats bit for bit on one device. The input's view is [*out, *reduced].
//
// OUTS: the output's element count; DECODE: the output index o split into c0, c1, ...; COUNT: the
// reduced element count, DECODE_REDUCED: r split into k0, k1, ...; LOAD_X: statements that end with
// `let x = ...;`, the value reduced at [c..., k...] (the input's element, or the fused prologue's value
// there); STORE_X: the prologue's stores at [c..., k...] (no line without). START: the
// combination's identity (0, or the lowest float32 for max), STEP: acc combined with x, LANE_TREE:
// lane_tree.wgsl with COMBINE, lane values s and o combined. FINISH: what makes total of the lanes'
// result: the mean's division by the count, the variance's second pass (reduce_var.wgsl), no line for
// sum and max. EPILOGUE: the fused expression of total.
const OUTS: u32 = 1u;
const COUNT: u32 = 1u;
const START: f32 = 0.0;
const STEP: f32 = 0.0;
fn DECODE() {}
fn DECODE_REDUCED() {}
fn LOAD_X() {}
fn STORE_X() {}
fn LANE_TREE() {}
fn FINISH() {}
fn EPILOGUE() {}
// ---- template ----
var<workgroup> part: array<f32, 64>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
  let o = wid.x + wid.y * groups.x;
  if (o >= OUTS) { return; }
  DECODE();
  var acc = START;
  for (var r = lid.x; r < COUNT; r = r + 64u) {
    DECODE_REDUCED();
    LOAD_X();
    STORE_X();
    acc = STEP;
  }
  part[lid.x] = acc;
  workgroupBarrier();
  LANE_TREE();
  var total = part[0];
  FINISH();
  if (lid.x == 0u) {
    EPILOGUE();
  }
}
