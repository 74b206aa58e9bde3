// Fragment: elementwise.wgsl's BODY for the gradients of max and average pooling, dx[n, c, h, w] =
// (c0, c1, c2, c3), a gather: over the windows (oh, ow) that hold (h, w), at tap (kh, kw), in row-major
// tap order, STEP adds the window's share of g to acc. No atomics.
//
// KH, KW: the window's size; STRIDE_*, PAD_*: the pool's; OUT_H, OUT_W: g's height and width. STEP:
// for average pooling the line acc = acc + g[c0, c1, oh, ow], for max pooling max_pool2d_grad.wgsl.
// SCALE: the average's division by KH * KW (no line for max).
const c2: u32 = 0u;
const c3: u32 = 0u;
const KH: u32 = 1u;
const KW: u32 = 1u;
const STRIDE_H: i32 = 1;
const STRIDE_W: i32 = 1;
const PAD_H: i32 = 0;
const PAD_W: i32 = 0;
const OUT_H: i32 = 1;
const OUT_W: i32 = 1;
fn STEP() {}
fn SCALE() {}
fn body(i: u32) {
// ---- template ----
  var acc = 0.0;
  for (var kh = 0u; kh < KH; kh = kh + 1u) {
    let t_oh = i32(c2) + PAD_H - i32(kh * 1u); if (t_oh < 0 || t_oh % STRIDE_H != 0 || t_oh / STRIDE_H >= OUT_H) { continue; } let oh = u32(t_oh / STRIDE_H);
    for (var kw = 0u; kw < KW; kw = kw + 1u) {
      let t_ow = i32(c3) + PAD_W - i32(kw * 1u); if (t_ow < 0 || t_ow % STRIDE_W != 0 || t_ow / STRIDE_W >= OUT_W) { continue; } let ow = u32(t_ow / STRIDE_W);
      STEP();
    }
  }
  SCALE();
// ---- end ----
}
