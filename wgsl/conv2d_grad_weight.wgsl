// The convolution's weight gradient dw[o, cc, kh, kw] = (c0, c1, c2, c3): a long sum over (n, oh, ow)
// for few outputs, so one workgroup per output. Lane l sums the positions l, l + 64, ... in order, then
// lane 0 adds the lanes' sums in order. No atomics.
//
// OUTS: the output's element count; DECODE: the output index o split into c0, c1, c2, c3.
// OUT_PER_GROUP, IN_PER_GROUP: channels a group (O / groups, C / groups). POSITIONS: N * OH * OW, g's
// positions; OUT_H, OUT_W, OUT_HW: g's height, width and both. STRIDE_*, DILATION_*, PAD_*: the
// convolution's; IN_H, IN_W: x's height and width. X_AT: x[n, c, ih, iw], G_AT: g[n, c0, oh, ow].
// EPILOGUE: the fused expression of acc, stored at (c0, c1, c2, c3).
const c0: u32 = 0u;
const c1: u32 = 0u;
const c2: u32 = 0u;
const c3: u32 = 0u;
const OUTS: u32 = 1u;
const OUT_PER_GROUP: u32 = 1u;
const IN_PER_GROUP: u32 = 1u;
const POSITIONS: u32 = 1u;
const OUT_H: u32 = 1u;
const OUT_W: u32 = 1u;
const OUT_HW: u32 = 1u;
const STRIDE_H: u32 = 1u;
const STRIDE_W: u32 = 1u;
const DILATION_H: u32 = 1u;
const DILATION_W: u32 = 1u;
const PAD_H: i32 = 0;
const PAD_W: i32 = 0;
const IN_H: i32 = 1;
const IN_W: i32 = 1;
const X_AT: f32 = 0.0;
const G_AT: f32 = 0.0;
fn DECODE() {}
fn EPILOGUE() {}
// ---- template ----
var<workgroup> part: array<f32, 64>;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
  let o = wid.x + wid.y * groups.x;
  if (o >= OUTS) { return; }
  DECODE();
  let c = c0 / OUT_PER_GROUP * IN_PER_GROUP + c1;
  var lane_sum = 0.0;
  for (var r = lid.x; r < POSITIONS; r = r + 64u) {
    let ow = r % OUT_W;
    let oh = r / OUT_W % OUT_H;
    let n = r / OUT_HW;
    let ih = i32(oh * STRIDE_H + c2 * DILATION_H) - PAD_H; if (ih < 0 || ih >= IN_H) { continue; }
    let iw = i32(ow * STRIDE_W + c3 * DILATION_W) - PAD_W; if (iw < 0 || iw >= IN_W) { continue; }
    lane_sum = lane_sum + X_AT * G_AT;
  }
  part[lid.x] = lane_sum;
  workgroupBarrier();
  if (lid.x == 0u) {
    var acc = 0.0;
    for (var l = 0u; l < 64u; l = l + 1u) { acc = acc + part[l]; }
    EPILOGUE();
  }
}
