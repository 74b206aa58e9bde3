// Fragment: pool2d_grad.wgsl's STEP for max pooling: window (oh, ow), which holds (h, w) = (c2, c3) at
// tap (kh, kw), gives its g when (h, w) is the window's first maximum in row-major tap order (the window
// is searched again with a strict >, so ties go to the first).
//
// KH, KW: the window's size; WINDOW: KH * KW; TAP_STRIDE_*: the pool's strides (as u32), PAD_*: its
// padding; IN_H, IN_W: x's height and width. X_AT: x[c0, c1, ih, iw], G_AT: g[c0, c1, oh, ow].
const KH: u32 = 1u;
const KW: u32 = 1u;
const WINDOW: u32 = 1u;
const TAP_STRIDE_H: u32 = 1u;
const TAP_STRIDE_W: u32 = 1u;
const PAD_H: i32 = 0;
const PAD_W: i32 = 0;
const IN_H: i32 = 1;
const IN_W: i32 = 1;
const X_AT: f32 = 0.0;
const G_AT: f32 = 0.0;
fn step(oh: u32, ow: u32, kh: u32, kw: u32) {
  var acc = 0.0;
// ---- template ----
  var best = bitcast<f32>(0xff7fffffu);
  var win = WINDOW;
  for (var qh = 0u; qh < KH; qh = qh + 1u) {
    let ih = i32(oh * TAP_STRIDE_H + qh * 1u) - PAD_H; if (ih < 0 || ih >= IN_H) { continue; }
    for (var qw = 0u; qw < KW; qw = qw + 1u) {
      let iw = i32(ow * TAP_STRIDE_W + qw * 1u) - PAD_W; if (iw < 0 || iw >= IN_W) { continue; }
      let v = X_AT;
      if (v > best) { best = v; win = qh * KW + qw; }
    }
  }
  if (win == kh * KW + kw) { acc = acc + G_AT; }
// ---- end ----
}
