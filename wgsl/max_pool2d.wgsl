// Max pooling of x [N, C, H, W], one output element (n, c, oh, ow) = (c0, c1, c2, c3) per invocation:
// the maximum over the window's taps inside the input (the padding is -inf, so it never wins; Tint
// rejects an infinite constant, so the start is the lowest finite float32: every window holds a tap).
//
// TOTAL: the output's element count; DECODE: the flat index i split into the output coordinates
// c0, c1, ...; EPILOGUE: the fused expression of acc there, stored through the output's view.
const TOTAL: u32 = 1u;
fn DECODE() {}
fn EPILOGUE() {}
// KH, KW: the window's size; STRIDE_*, PAD_*: the pool's; IN_H, IN_W: x's. X_AT: x[c0, c1, ih, iw].
const KH: u32 = 1u;
const KW: u32 = 1u;
const STRIDE_H: u32 = 1u;
const STRIDE_W: u32 = 1u;
const PAD_H: i32 = 0;
const PAD_W: i32 = 0;
const IN_H: i32 = 1;
const IN_W: i32 = 1;
const X_AT: f32 = 0.0;
const c0: u32 = 0u;
const c1: u32 = 0u;
const c2: u32 = 0u;
const c3: u32 = 0u;
// ---- template ----
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
  let i = gid.x + gid.y * groups.x * 256u;
  if (i >= TOTAL) { return; }
  DECODE();
  var acc = bitcast<f32>(0xff7fffffu);
  for (var kh = 0u; kh < KH; kh = kh + 1u) {
    let ih = i32(c2 * STRIDE_H + kh * 1u) - PAD_H; if (ih < 0 || ih >= IN_H) { continue; }
    for (var kw = 0u; kw < KW; kw = kw + 1u) {
      let iw = i32(c3 * STRIDE_W + kw * 1u) - PAD_W; if (iw < 0 || iw >= IN_W) { continue; }
      acc = max(acc, X_AT);
    }
  }
  EPILOGUE();
}
