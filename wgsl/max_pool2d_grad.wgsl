// Max pooling's gradient dx[n, c, h, w] = (c0, c1, c2, c3), a gather: each window (oh, ow) holding
// (h, w) at tap (kh, kw) gives its g when (h, w) is the window's first maximum in row-major tap order
// (the window is searched again with a strict >, so ties go to the first). No atomics.
//
// TOTAL: the output's element count; DECODE: the flat index i split into the output coordinates
// c0, c1, ...; EPILOGUE: the fused expression of acc there, stored through the output's view.
const TOTAL: u32 = 1u;
fn DECODE() {}
fn EPILOGUE() {}
// KH, KW: the window's size; STRIDE_*, PAD_*: the pool's; OUT_H, OUT_W: g's height and width.
const KH: u32 = 1u;
const KW: u32 = 1u;
const STRIDE_H: i32 = 1;
const STRIDE_W: i32 = 1;
const PAD_H: i32 = 0;
const PAD_W: i32 = 0;
const OUT_H: i32 = 1;
const OUT_W: i32 = 1;
// WINDOW: KH * KW; TAP_STRIDE_*: the strides again, as u32; IN_H, IN_W: x's height and width. X_AT:
// x[c0, c1, ih, iw], G_AT: g[c0, c1, oh, ow].
const WINDOW: u32 = 1u;
const TAP_STRIDE_H: u32 = 1u;
const TAP_STRIDE_W: u32 = 1u;
const IN_H: i32 = 1;
const IN_W: i32 = 1;
const X_AT: f32 = 0.0;
const G_AT: f32 = 0.0;
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
  var acc = 0.0;
  for (var kh = 0u; kh < KH; kh = kh + 1u) {
    let t_oh = i32(c2) + PAD_H - i32(kh * 1u); if (t_oh < 0 || t_oh % STRIDE_H != 0 || t_oh / STRIDE_H >= OUT_H) { continue; } let oh = u32(t_oh / STRIDE_H);
    for (var kw = 0u; kw < KW; kw = kw + 1u) {
      let t_ow = i32(c3) + PAD_W - i32(kw * 1u); if (t_ow < 0 || t_ow % STRIDE_W != 0 || t_ow / STRIDE_W >= OUT_W) { continue; } let ow = u32(t_ow / STRIDE_W);
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
    }
  }
  EPILOGUE();
}
